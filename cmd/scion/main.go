// Command scion is the Scion binary: controller manager, local control plane
// and command-line client.
package main

import (
	"fmt"
	"os"

	"github.com/scion-dev/scion/internal/cli"
)

func main() {
	cmd := cli.NewRootCommand(cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
