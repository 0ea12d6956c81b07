package cli

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scion-dev/scion/internal/demo"
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
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.Dir, "dir", "", "state directory (default .scion/dev of the checkout)")
	pf.StringVar(&o.Assets, "assets", "", "folder of etcd, kube-apiserver and kube-controller-manager (default bin/k8s of the checkout)")
	// Defaults come from the checkout the working directory is in.
	var examples, target string
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		root := checkoutRoot()
		if o.Dir == "" {
			o.Dir = filepath.Join(root, ".scion", "dev")
		}
		if o.Assets == "" {
			o.Assets = filepath.Join(root, "bin", "k8s")
		}
		if examples == "" {
			examples = filepath.Join(root, "examples")
		}
		if script := filepath.Join(root, "hack", "build-control-plane.sh"); fileExists(script) {
			o.BuildScript = script
		}
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
	demoCmd := &cobra.Command{
		Use:   "demo",
		Short: "Start the environment, load the fleet in a box and walk through Scion's main job",
		Long: `Start the environment (as dev up), load examples/ (a blueprint catalog
and twelve deployment repositories as local git repositories, in-cluster
objects, a PackageVariant and three PackageVariantSets), wait until every
variant is Ready, print the trees, diff a draft against its upstream,
publish a new upstream revision and show the drafts updated with a
downstream edit kept, then propose and approve a draft: refused while its
readiness gate is unmet, accepted once the condition is set; roll out in
waves, release a group, and roll a bad release back (on a real node with
Flux with --target-cluster). Running it again works: each run publishes
the next upstream revisions.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			// The walk-through makes clients for minutes: what they log
			// (errors only) goes to stderr, instead of controller-runtime's
			// complaint that no logger was set.
			ctrllog.SetLogger(zap.New(zap.WriteTo(streams.ErrOut), zap.Level(zapcore.ErrorLevel)))
			var tc *demo.TargetCluster
			if target != "" {
				var err error
				if tc, err = demo.ReadTargetCluster(target); err != nil {
					return err
				}
			}
			if err := devenv.Up(ctx, *o, false); err != nil {
				return err
			}
			c, err := kubeClient(o.Kubeconfig())
			if err != nil {
				return err
			}
			d := &demo.Options{Examples: examples, GitDir: filepath.Join(o.Dir, "git"), Client: c, Out: streams.Out, Command: selfCommand(), Registry: o.Registry(), Target: tc}
			if err := d.Run(ctx); err != nil {
				return err
			}
			scion := d.Command
			fmt.Fprintf(streams.Out, `
Explore:
  export KUBECONFIG=%[1]s
  kubectl get packagevariantsets,packagevariants
  kubectl get packagerevisions
  %[2]s tree pvs/regional-app
  %[2]s rpkg get
Review and approve in the browser: %[2]s console --kubeconfig %[1]s, then open http://127.0.0.1:8080/
Stop with %[2]s dev down (state is kept), or start over with %[2]s dev up --fresh.
`, o.Kubeconfig(), scion)
			if d.Target != nil {
				fmt.Fprintf(streams.Out, `cluster-06's cluster (a node with Flux): kubectl --kubeconfig %[1]s -n cluster-06 get deployments,pods
  kubectl --kubeconfig %[1]s -n %[2]s get gitrepositories,kustomizations
  kubectl get repository cluster-06 -o jsonpath='{.status.cluster}'
make dev-down stops it with the control plane.
`, d.Target.Kubeconfig, d.Target.FluxNamespace)
			}
			return nil
		},
	}
	demoCmd.Flags().StringVar(&examples, "examples", "", "the examples folder (default examples/ of the checkout)")
	demoCmd.Flags().StringVar(&target, "target-cluster", "", "a real cluster with Flux where cluster-06 runs, so that the bad release crash-loops for real: the JSON file `go run ./hack/node start` writes (make demo does, as root); without it a health reporter the demo runs simulates a deployer")
	cmd.AddCommand(up, down, serve, demoCmd)
	return cmd
}

// selfCommand is how a person at this shell runs this binary: "scion" when
// that is what PATH finds, else its path, relative to the working directory
// when it is below it (bin/scion in a checkout).
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "scion"
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if p, err := exec.LookPath("scion"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && real == exe {
			return "scion"
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, string(filepath.Separator)) {
				rel = "." + string(filepath.Separator) + rel
			}
			return rel
		}
	}
	return exe
}

// kubeClient returns a client for a kubeconfig file.
func kubeClient(kubeconfig string) (client.Client, error) {
	k := &KubeFlags{Kubeconfig: kubeconfig}
	c, _, err := k.Client()
	return c, err
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
