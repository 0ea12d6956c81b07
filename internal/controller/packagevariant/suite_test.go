package packagevariant_test

import (
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
	// apiRequests counts the requests the manager sends to the API server.
	apiRequests atomic.Int64
)

// TestMain runs the whole manager against a real API server.
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 8, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second}, func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }, func(e *testenv.Env) {
		env, k8sClient = e, e.Client
	}))
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	apiRequests.Add(1)
	return c.next.RoundTrip(r)
}
