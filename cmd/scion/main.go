// Command scion is the Scion binary: controller manager, local control plane
// and command-line client.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/scion-dev/scion/internal/cli"
)

func main() {
	cmd := cli.NewRootCommand(cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
