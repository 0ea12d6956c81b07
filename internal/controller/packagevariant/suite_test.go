package packagevariant_test

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
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
	// benchRegistry is the registry of make bench-scale STORE=oci, and
	// benchRegistryKind how its table names it.
	benchRegistry     *registry.Registry
	benchRegistryKind string
)

// TestMain runs the whole manager against a real API server.
// The benchmark's GIT_OBJECT_CACHE (make bench-scale) sets the size of
// the git object cache, in MiB (the controller's default otherwise).
// The benchmark's STORE=oci (SCION_BENCH_STORE) runs a registry for the
// whole package, trusted by the controllers: by default over plain HTTP
// without authentication, as the benchmark's git server is; with
// OCI_AUTH (SCION_BENCH_REGISTRY_AUTH) htpasswd, TLS and htpasswd, or
// tokens, TLS and bearer tokens, as hosted registries have it.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// benchRegistries are the registries of STORE=oci by OCI_AUTH: how each
// is started, and how the table names it.
var benchRegistries = map[string]struct {
	start func() (*registry.Registry, func(), error)
	where string
}{
	"none":     {registry.StartMainPlain, "prefixes of an OCI registry over plain HTTP without authentication, as the git server"},
	"htpasswd": {registry.StartMain, "prefixes of an OCI registry with TLS and htpasswd"},
	"tokens":   {registry.StartMainTokens, "prefixes of an OCI registry with TLS and bearer tokens (the token service in the controllers' process)"},
}

func run(m *testing.M) int {
	opts := manager.Options{RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 8, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second}
	if mib, err := strconv.Atoi(os.Getenv("SCION_BENCH_GIT_OBJECT_CACHE")); err == nil && mib > 0 {
		opts.GitObjectCacheSize = int64(mib) << 20
	}
	store, auth := os.Getenv("SCION_BENCH_STORE"), os.Getenv("SCION_BENCH_REGISTRY_AUTH")
	switch {
	case store != "" && store != "oci":
		fmt.Fprintf(os.Stderr, "STORE=%s: not a store; leave it out (git), or say oci\n", store)
		return 1
	case store == "" && auth != "":
		fmt.Fprintf(os.Stderr, "OCI_AUTH=%s: only a registry has it; say STORE=oci as well\n", auth)
		return 1
	}
	if store == "oci" {
		kind, ok := benchRegistries[cmp.Or(auth, "none")]
		if !ok {
			fmt.Fprintf(os.Stderr, "OCI_AUTH=%s: not a registry's authentication; leave it out (none, as the git server), or say htpasswd or tokens\n", auth)
			return 1
		}
		r, stop, err := kind.start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		benchRegistry, benchRegistryKind, opts.RegistryCAFile = r, kind.where, r.CAFile
	}
	return suite.Run(m, opts, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	})
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)
