package cli

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/devenv"
)

// NewCmdDev returns `scion dev`, the local development environment.
func NewCmdDev(streams Streams) *cobra.Command {
	o := &devenv.Options{Out: streams.Out}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "A local control plane with the Scion controller, for trying Scion without a cluster",
		Long: `A local control plane on loopback: etcd, kube-apiserver and
kube-controller-manager (garbage collector and namespace controllers) from
bin/k8s (built by hack/build-control-plane.sh when missing), Scion's CRDs,
and the Scion controller. State (kubeconfig, logs, etcd data) is kept in
.scion/dev of the checkout, so objects survive dev down and dev up.`,
	}
	root := checkoutRoot()
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.Dir, "dir", filepath.Join(root, ".scion", "dev"), "state directory")
	pf.StringVar(&o.Assets, "assets", filepath.Join(root, "bin", "k8s"), "folder of etcd, kube-apiserver and kube-controller-manager")
	if script := filepath.Join(root, "hack", "build-control-plane.sh"); fileExists(script) {
		o.BuildScript = script
	}

	var fresh bool
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the environment (idempotent) and wait until it is ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return devenv.Up(cmdContext(cmd), *o, fresh)
		},
	}
	up.Flags().BoolVar(&fresh, "fresh", false, "remove the previous state first")
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the environment, keeping its state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return devenv.Down(cmdContext(cmd), *o)
		},
	}
	serve := &cobra.Command{
		Use:    "serve",
		Short:  "Run the environment in the foreground (what dev up starts in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devenv.Serve(ctx, *o)
		},
	}
	cmd.AddCommand(up, down, serve)
	return cmd
}

// checkoutRoot is the Scion checkout the working directory is in (the
// folder with hack/build-control-plane.sh), or the working directory.
func checkoutRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fileExists(filepath.Join(dir, "hack", "build-control-plane.sh")) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
