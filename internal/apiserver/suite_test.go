package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	// env runs Scion's API server behind a real APIService.
	env *testenv.Env
	// porch is a client of porch.kpt.dev through the cluster's API
	// server, as porchctl is.
	porch client.Client
	// storageClient reads and writes the storage directly.
	storageClient client.Client
)

// testLimits are small, so that a test can go over them.
var testLimits = store.Limits{FileBytes: 64 << 10}

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.StartWith(testenv.Options{Limits: testLimits})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	porch, storageClient = env.Client, env.Storage
	code := 1
	if err := rbac.Install(context.Background(), env.Storage, rbac.UserRoles); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// as returns a porch.kpt.dev client that impersonates user, bound to role
// (a ClusterRole, "" for none) in ns.
func as(t *testing.T, ns, user, role string) client.Client {
	t.Helper()
	c, err := client.New(env.As(t, ns, user, role), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
