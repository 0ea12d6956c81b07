// Package suite runs a test package against a real control plane with
// Scion's whole controller manager, as the controllers run in production.
package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/requests"
	"github.com/scion-dev/scion/internal/testutil/syncbuf"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// Logs holds what the manager logged.
var Logs = &syncbuf.Buffer{}

// Requests counts the requests the manager sends to the API server.
var Requests = &requests.Counter{}

// Run starts a control plane and the manager (metrics and probes off, a
// temporary cache), calls ready with the environment, runs the tests, and
// stops everything. wrap, when set, wraps the manager's HTTP transport
// (to cut its connection, say); Requests counts what reaches it. It returns the exit code for os.Exit.
func Run(m *testing.M, opts manager.Options, wrap func(http.RoundTripper) http.RoundTripper, ready func(*testenv.Env)) int {
	// The manager's logs are noise in test output (failures say what went
	// wrong through the objects' status); SCION_TEST_LOGS=1 shows them.
	// They are kept in Logs, for tests that check what they say.
	var out io.Writer = Logs
	if os.Getenv("SCION_TEST_LOGS") != "" {
		out = io.MultiWriter(Logs, os.Stderr)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(out)))
	env, err := testenv.StartWith(testenv.Options{RegistryCAFile: opts.RegistryCAFile, Egress: opts.Egress})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	cacheDir, err := os.MkdirTemp("", "scion-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cacheDir)
	opts.MetricsAddr, opts.ProbeAddr, opts.CacheDir = "0", "0", cacheDir
	// The tests' remotes are bare repositories on disk.
	opts.AllowFileRepositories = true
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		rt = Requests.Wrap(rt)
		if wrap != nil {
			rt = wrap(rt)
		}
		return rt
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, cfg, opts) }()
	ready(env)
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}
