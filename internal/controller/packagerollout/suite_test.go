package packagerollout_test

import (
	"errors"
	"net/http"
	"os"
	"sync/atomic"
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
	// cut, while set, fails every request the manager makes, as if its
	// process had died (the reconcilers keep no state of their own but
	// the caches, which a restart would fill again).
	cut atomic.Bool
)

type cutTransport struct{ next http.RoundTripper }

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if cut.Load() {
		return nil, errors.New("connection cut by the test")
	}
	return c.next.RoundTrip(req)
}

// TestMain runs the whole manager against a real API server.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 2, PackageVariantSetWorkers: 1, PackageRolloutWorkers: 2, SyncPeriod: 5 * time.Minute}, func(rt http.RoundTripper) http.RoundTripper { return cutTransport{rt} }, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	}))
}
