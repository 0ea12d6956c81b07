package apiserver_test

import (
	"context"
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
	os.Exit(testenv.Main(m, testenv.Options{Limits: testLimits}, func(e *testenv.Env) error {
		env, porch, storageClient = e, e.Client, e.Storage
		return rbac.Install(context.Background(), e.Storage, rbac.UserRoles)
	}))
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
