package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env        *testenv.Env
	k8sClient  client.Client
	kubeconfig string
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "scion-e2e")
	if err != nil {
		panic(err)
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig, "tester"); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", CacheDir: filepath.Join(dir, "cache"),
			RepositoryWorkers: 4, PackageRevisionWorkers: 4, SyncPeriod: 30 * time.Second})
	}()
	k8sClient = env.Client
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	_ = env.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// scion runs the scion CLI in namespace ns and returns its output.
func scion(ns string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if len(args) > 0 && args[0] == "rpkg" {
		args = append([]string{"rpkg", "--kubeconfig", kubeconfig, "-n", ns}, args[1:]...)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
