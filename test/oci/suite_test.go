// Package oci_test runs Repositories of type oci end to end: the whole
// controller manager and Scion's API server against a real registry
// (docker-registry with TLS from a test CA and htpasswd), with people's
// commands through the scion CLI.
package oci_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env        *testenv.Env
	k8sClient  client.Client // the Porch API, as people reach it
	storage    client.Client // the controllers' view
	reg        *registry.Registry
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	r, stop, err := registry.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	reg = r
	dir, err := os.MkdirTemp("", "scion-oci")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	// GitTimeout bounds each exchange with a registry too: short, for the
	// hanging registry's test.
	opts := manager.Options{RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: 30 * time.Second,
		TagPollPeriod: time.Second, GitTimeout: 3 * time.Second, RegistryCAFile: reg.CAFile}
	return suite.Run(m, opts, nil, func(e *testenv.Env) {
		env, k8sClient, storage = e, e.Client, e.Storage
		if err := e.WriteKubeconfig(kubeconfig, "tester"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	})
}

// scion runs the scion CLI in namespace ns and returns its output.
func scion(ns string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if len(args) > 0 && args[0] == "rpkg" {
		args = append([]string{"rpkg", "--kubeconfig", kubeconfig, "-n", ns, "--registry-ca-file", reg.CAFile}, args[1:]...)
	}
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}
