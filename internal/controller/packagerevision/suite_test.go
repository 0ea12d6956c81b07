package packagerevision

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/scion-dev/scion/internal/controller/repository"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var k8sClient client.Client

// TestMain runs the PackageRevision controller together with the
// Repository controller, as the manager does.
func TestMain(m *testing.M) {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir, err := os.MkdirTemp("", "scion-cache")
	if err != nil {
		panic(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		panic(err)
	}
	cache := &repocache.Cache{Reader: mgr.GetAPIReader(), Dir: cacheDir}
	service := &pkgservice.Service{Client: mgr.GetClient()}
	if err := (&repository.Reconciler{Client: mgr.GetClient(), Cache: cache, Service: service,
		Recorder: mgr.GetEventRecorder("repository"), Options: repository.Options{SyncPeriod: 2 * time.Second}}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient(), Cache: cache, Service: service,
		Recorder: mgr.GetEventRecorder("packagerevision"), Options: Options{Workers: 4}}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	k8sClient = env.Client
	code := m.Run()
	cancel()
	<-done
	_ = env.Stop()
	_ = os.RemoveAll(cacheDir)
	os.Exit(code)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pr-" + rand.String(6)}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)
