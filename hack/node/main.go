// Command node runs the test node of internal/testutil/cluster by hand:
//
//	go run ./hack/node up     # until Ctrl-C; prints the kubeconfig
//	go run ./hack/node sweep  # tear down a node whose process died
//
// make test-cluster runs sweep after its tests, whatever their end.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scion-dev/scion/internal/testutil/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: node up|sweep")
	}
	switch os.Args[1] {
	case "sweep":
		return cluster.Sweep(os.Stdout)
	case "up":
		assets, err := filepath.Abs(filepath.Join("bin", "k8s"))
		if err != nil {
			return err
		}
		if v := os.Getenv("KUBEBUILDER_ASSETS"); v != "" {
			assets = v
		}
		c, err := cluster.Start(context.Background(), cluster.Options{Assets: assets, Progress: os.Stdout, KeepDir: os.Getenv("KEEP") != ""})
		if err != nil {
			return err
		}
		fmt.Printf("node up: export KUBECONFIG=%s (Ctrl-C tears it down)\n", c.Kubeconfig)
		select {} // the node's own handler of Ctrl-C and SIGTERM tears it down and exits
	default:
		return fmt.Errorf("unknown command %q: up or sweep", os.Args[1])
	}
}
