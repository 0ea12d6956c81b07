package packagelock_test

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

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
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 2}, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	}))
}

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)
