// Package flux_test deploys what Scion publishes with Flux's own
// controllers (source-controller and kustomize-controller, built from
// their modules by make flux) on the test control plane: from a
// deployment repository in git and from one in an OCI registry, and
// rollouts that judge health by the Kustomizations Flux keeps in each
// target cluster (here, a namespace of one control plane per cluster,
// read through a kubeconfig with a token of the health reader
// config/target-cluster installs, which may get Kustomizations and
// nothing else).
package flux_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/flux"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env        *testenv.Env
	k8sClient  client.Client // the Porch API, as people reach it
	kubeconfig string        // a person's
	fluxConfig string        // Flux's (an administrator's)
	running    *flux.Flux
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scion-flux")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	kubeconfig, fluxConfig = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "flux-kubeconfig")
	// No periodic sync within a test: every move a test makes is shown
	// by the write that made it (a `rpkg propose` right after a `rpkg
	// push`, whose sync request raced it, once waited for the next sync).
	opts := manager.Options{RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: time.Hour,
		TagPollPeriod: time.Second, ClusterPoll: time.Second, ClusterIdle: 5 * time.Second}
	var stopFlux func()
	code := suite.Run(m, opts, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Client
		for path, user := range map[string]string{kubeconfig: "tester", fluxConfig: "flux"} {
			if err := e.WriteKubeconfig(path, user); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		// Flux's controllers watch every namespace: each test's target
		// clusters are namespaces of their own.
		f, stop, err := flux.StartMain(e.Config, e.Client, fluxConfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		running, stopFlux = f, stop
	})
	if stopFlux != nil {
		stopFlux()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// scion runs the scion CLI in namespace ns and returns its output.
func scion(ns string, args ...string) (string, error) {
	return flux.Packages{Kubeconfig: kubeconfig, Namespace: ns}.Scion(args...)
}
