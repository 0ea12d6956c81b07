package repository_test

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
)

// TestMain runs the whole manager against a real API server.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 2, SyncPeriod: configv1alpha1.DefaultSyncPeriod}, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	}))
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func newNamespace(t *testing.T) string { return env.Namespace(t, "repo") }
