package packagevariant_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
	// apiRequests counts the requests the manager sends to the API server.
	apiRequests atomic.Int64
)

type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	apiRequests.Add(1)
	return c.next.RoundTrip(r)
}

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir, err := os.MkdirTemp("", "scion-cache")
	if err != nil {
		panic(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, cfg, manager.Options{MetricsAddr: "0", ProbeAddr: "0", CacheDir: cacheDir,
			RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second})
	}()
	k8sClient = env.Client
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	_ = env.Stop()
	_ = os.RemoveAll(cacheDir)
	os.Exit(code)
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)
