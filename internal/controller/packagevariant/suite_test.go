package packagevariant_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
	// apiRequests counts the requests the manager sends to the API server.
	apiRequests atomic.Int64
	// requestKinds counts them by method and resource, for the benchmark.
	requestKinds sync.Map
	// benchRegistry is the registry of make bench-scale STORE=oci.
	benchRegistry *registry.Registry
)

// TestMain runs the whole manager against a real API server.
// The benchmark's GIT_OBJECT_CACHE (make bench-scale) sets the size of
// the git object cache, in MiB (the controller's default otherwise).
// The benchmark's STORE=oci (SCION_BENCH_STORE) runs a registry for the
// whole package, trusted by the controllers.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	opts := manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 8, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second}
	if mib, err := strconv.Atoi(os.Getenv("SCION_BENCH_GIT_OBJECT_CACHE")); err == nil && mib > 0 {
		opts.GitObjectCacheSize = int64(mib) << 20
	}
	if os.Getenv("SCION_BENCH_STORE") == "oci" {
		r, stop, err := registry.StartMain()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		benchRegistry, opts.RegistryCAFile = r, r.CAFile
	}
	return suite.Run(m, opts, func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	})
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	apiRequests.Add(1)
	n, _ := requestKinds.LoadOrStore(requestKind(r), new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return c.next.RoundTrip(r)
}

// requestKind names a request by its method and resource, with the
// subresource and whether it is a watch: "PATCH packagevariants/status".
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := r.URL.Path
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			resource = parts[0]
			if len(parts) > 2 {
				resource += "/" + parts[2]
			}
			break
		}
	}
	if r.URL.Query().Get("watch") == "true" {
		resource += "?watch"
	}
	return r.Method + " " + resource
}
