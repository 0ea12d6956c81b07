package packagevariantset_test

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
)

// TestMain runs the whole manager against a real API server (which, as in
// envtest, runs no garbage collector).
func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, PackageVariantSetWorkers: 2, SyncPeriod: 5 * time.Minute, TagPollPeriod: time.Second,
		ReadableKinds: kindwatch.Kinds{{Kind: "ConfigMap"}, {Group: "krm-platform.bigco.com", Kind: "*"}}}, nil, func(e *testenv.Env) {
		env, k8sClient = e, e.Storage
	}))
}
