// Command node runs the test node of internal/testutil/cluster by hand:
//
//	go run ./hack/node up     # until Ctrl-C; prints the kubeconfig
//	go run ./hack/node sweep  # tear down a node whose process died
//
// and, for make demo, as a target cluster with Flux in the background:
//
//	go run ./hack/node start -dir .scion/node -git .scion/dev/git
//	go run ./hack/node stop -dir .scion/node
//
// start runs the node, Flux's source-controller and kustomize-controller
// (bin/flux) against it, config/target-cluster's health reader, and a git
// server (smart HTTP on loopback) over the -git folder's bare
// repositories, and writes DIR/target.json for `scion dev demo
// --target-cluster`. It returns once that is written; the node runs on
// (its log in DIR/node.log) until stop. A running one is reused.
//
// make test-cluster runs sweep after its tests, whatever their end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/demo"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/cluster"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: node up|sweep|start|stop")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", filepath.Join(".scion", "node"), "start, stop: the folder of the background node's pid, log and target.json")
	git := fs.String("git", filepath.Join(".scion", "dev", "git"), "start: the folder of bare repositories Flux reads")
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	switch os.Args[1] {
	case "sweep":
		return cluster.Sweep(os.Stdout)
	case "up":
		c, err := startNode()
		if err != nil {
			return err
		}
		fmt.Printf("node up: export KUBECONFIG=%s (Ctrl-C tears it down)\n", c.Kubeconfig)
		select {} // the node's own handler of Ctrl-C and SIGTERM tears it down and exits
	case "start":
		return start(*dir, *git)
	case "serve":
		return serve(*dir, *git)
	case "stop":
		return stop(*dir)
	default:
		return fmt.Errorf("unknown command %q: up, sweep, start or stop", os.Args[1])
	}
}

func startNode() (*cluster.Cluster, error) {
	assets, err := filepath.Abs(filepath.Join("bin", "k8s"))
	if err != nil {
		return nil, err
	}
	if v := os.Getenv("KUBEBUILDER_ASSETS"); v != "" {
		assets = v
	}
	return cluster.Start(context.Background(), cluster.Options{Assets: assets, Progress: os.Stdout, KeepDir: os.Getenv("KEEP") != ""})
}

// The background node's files in its folder.
const (
	pidFile    = "pid"
	logFile    = "node.log"
	targetFile = "target.json"
	readerFile = "reader.kubeconfig"
)

// start runs serve in the background, unless one runs, and waits until
// it wrote target.json.
func start(dir, git string) error {
	if pid, ok := running(dir); ok {
		if _, err := os.Stat(filepath.Join(dir, targetFile)); err == nil {
			fmt.Printf("==> node: running (pid %d): %s\n", pid, filepath.Join(dir, targetFile))
			return nil
		}
		return fmt.Errorf("a node (pid %d) is starting or stuck: see %s, or go run ./hack/node stop -dir %s", pid, filepath.Join(dir, logFile), dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, targetFile))
	log, err := os.Create(filepath.Join(dir, logFile))
	if err != nil {
		return err
	}
	defer log.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "serve", "-dir", dir, "-git", git)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Printf("==> node: starting a one-node cluster with Flux in the background (log: %s)\n", log.Name())
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case err := <-exited:
			_ = os.Remove(filepath.Join(dir, pidFile))
			out, _ := os.ReadFile(log.Name())
			return fmt.Errorf("the node exited (%v):\n%s", err, out)
		case <-deadline:
			return fmt.Errorf("the node is not up after 5 minutes: see %s", log.Name())
		case <-time.After(500 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(dir, targetFile)); err == nil {
			fmt.Printf("==> node: up: %s\n", filepath.Join(dir, targetFile))
			return nil
		}
	}
}

// running is the background node's pid, when its process is alive.
func running(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// stop ends the background node (its signal handler tears it down) and
// removes its files; a node that does not end is killed and swept.
func stop(dir string) error {
	defer func() {
		for _, f := range []string{pidFile, targetFile, readerFile, "tmp"} {
			_ = os.RemoveAll(filepath.Join(dir, f))
		}
	}()
	pid, ok := running(dir)
	if !ok {
		return nil
	}
	fmt.Printf("==> node: stopping (pid %d)\n", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return cluster.Sweep(os.Stdout)
}

// serve is the background node: the cluster, Flux, the health reader and
// the git server, until a signal.
func serve(dir, git string) error {
	git, err := filepath.Abs(git)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(git, 0o755); err != nil {
		return err
	}
	node, err := startNode()
	if err != nil {
		return err
	}
	// A failure from here on tears the node down; a signal does too (the
	// node's own handler), and kills Flux's controllers (they die with
	// this process).
	fail := func(err error) error {
		return errors.Join(err, node.Stop())
	}
	// Flux's storage and logs go under the background node's folder, which
	// stop removes.
	tmp, err := filepath.Abs(filepath.Join(dir, "tmp"))
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return fail(err)
	}
	c, err := client.New(node.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return fail(err)
	}
	var (
		reader []byte
		server *gitserver.Server
	)
	fmt.Println("==> node: Flux's source-controller and kustomize-controller (bin/flux), config/target-cluster, a git server")
	if _, err := harness.Main(func(t harness.TB) {
		flux.Start(t, node.Config, c, node.Kubeconfig)
		// A year, as docs/flux.md's kubectl create token --duration.
		reader = flux.TargetCluster(t, node.Config, c, flux.Namespace, 8760*time.Hour)
		server = gitserver.NewServer(t, git)
		server.ReadOnly = true
	}); err != nil {
		return fail(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(abs, readerFile), reader, 0o600); err != nil {
		return fail(err)
	}
	target, err := json.MarshalIndent(demo.TargetCluster{
		Kubeconfig: node.Kubeconfig, ReaderKubeconfig: filepath.Join(abs, readerFile),
		GitURL: server.URL, FluxNamespace: flux.Namespace, Image: cluster.PauseImage,
	}, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(abs, targetFile), append(target, '\n'), 0o644); err != nil {
		return fail(err)
	}
	fmt.Printf("==> node: up; export KUBECONFIG=%s for the node; the target for scion dev demo: %s\n", node.Kubeconfig, filepath.Join(abs, targetFile))
	// The node's handler of SIGTERM and Ctrl-C tears it down and exits;
	// this waits for it.
	select {}
}
