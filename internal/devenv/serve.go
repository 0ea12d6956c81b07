package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/scion-dev/scion/config/crd"
	"github.com/scion-dev/scion/config/policy"
	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/controlplane"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
)

// devFunctionImages lets the environment's pipelines run any image as a
// container (with a container runtime on the PATH): it is the developer's
// own machine, as its file:// repositories are.
var devFunctionImages = []string{"*"}

// Serve runs the environment until ctx ends: the supervisor behind Up.
// Each step is written to the progress file; a failing step stops
// everything started so far and names its log.
func Serve(ctx context.Context, o Options) (retErr error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.path(pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(o.path(pidFile))
	progress, err := os.Create(o.path(progressFile))
	if err != nil {
		return err
	}
	defer progress.Close()
	var mu sync.Mutex
	report := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(progress, line)
	}
	step := ""
	begin := func(what string) { step = what; report(stepPrefix + what) }
	fail := func(logName string, err error) error {
		report(fmt.Sprintf("%s%s: %v (log: %s)", failedPrefix, step, err, o.path(logName)))
		return fmt.Errorf("%s: %w", step, err)
	}

	logs := map[string]*os.File{}
	openLog := func(name string) (*os.File, error) {
		f, err := os.Create(o.path(name))
		if err == nil {
			logs[name] = f
		}
		return f, err
	}
	defer func() {
		for _, f := range logs {
			f.Close()
		}
	}()

	begin("starting etcd and kube-apiserver")
	etcdLog, err := openLog("etcd.log")
	if err != nil {
		return fail("etcd.log", err)
	}
	apiLog, err := openLog("kube-apiserver.log")
	if err != nil {
		return fail("kube-apiserver.log", err)
	}
	// Aggregation, for Scion's API server (porch.kpt.dev).
	if err := os.MkdirAll(o.path("apiserver"), 0o700); err != nil {
		return fail(serveLog, err)
	}
	proxyFlags, err := apiserver.FrontProxy(o.path("apiserver"))
	if err != nil {
		return fail(serveLog, err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Assets: o.Assets, Dir: o.Dir, EtcdLog: etcdLog, APIServerLog: apiLog,
		APIServerFlags: proxyFlags, Timeout: 2 * time.Minute,
	})
	if err != nil {
		return fail("kube-apiserver.log", err)
	}
	defer func() {
		if err := cp.Stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	crds, err := crd.Definitions()
	if err != nil {
		return fail(serveLog, err)
	}
	if err := controlplane.InstallCRDs(ctx, cp.Config, crds); err != nil {
		return fail("kube-apiserver.log", err)
	}

	begin("starting a local OCI registry (docker-registry)")
	regLog, err := openLog("registry.log")
	if err != nil {
		return fail("registry.log", err)
	}
	stopRegistry, haveRegistry, err := o.startRegistry(regLog)
	if err != nil {
		return fail("registry.log", err)
	}
	if haveRegistry {
		defer stopRegistry()
	} else {
		report(stepPrefix + "no OCI registry installed (make registry): its part of the demo is skipped")
	}

	begin("writing the kubeconfig")
	if err := os.WriteFile(o.Kubeconfig(), cp.Kubeconfig, 0o600); err != nil {
		return fail(serveLog, err)
	}

	adminClient, err := client.New(cp.Config, client.Options{Scheme: scheme.NewStorage()})
	if err != nil {
		return fail(serveLog, err)
	}
	if err := policy.Install(ctx, adminClient); err != nil {
		return fail(serveLog, err)
	}
	// The people's roles, as a cluster has them (docs/lifecycle.md), so
	// that a role binding is all it takes to try a reviewer or an editor.
	if err := rbac.Install(ctx, adminClient, rbac.UserRoles); err != nil {
		return fail(serveLog, err)
	}

	begin("starting Scion's API server (porch.kpt.dev)")
	apiLogFile, err := openLog("apiserver.log")
	if err != nil {
		return fail("apiserver.log", err)
	}
	klog.LogToStderr(false)
	klog.SetOutput(apiLogFile)
	apiCtx, stopAPI := context.WithCancel(ctx)
	repos := &repocache.Cache{Reader: adminClient, Dir: filepath.Join(o.path("apiserver"), "git"), AllowFileRepositories: true, Egress: devEgress()}
	api, err := apiserver.RunLocal(apiCtx, rest.CopyConfig(cp.Config), o.Kubeconfig(), o.path("apiserver"), repos, store.Limits{}, devFunctionImages)
	if err != nil {
		stopAPI()
		return fail("apiserver.log", err)
	}
	defer func() {
		stopAPI()
		_ = api.Wait()
	}()

	begin("starting kube-controller-manager (garbage collector, namespaces)")
	kcmLog, err := openLog("kube-controller-manager.log")
	if err != nil {
		return fail("kube-controller-manager.log", err)
	}
	kcm := exec.Command(filepath.Join(o.Assets, "kube-controller-manager"),
		"--kubeconfig="+o.Kubeconfig(),
		"--controllers=garbagecollector,namespace",
		"--leader-elect=false",
		"--secure-port=0",
	)
	kcm.Stdout, kcm.Stderr = kcmLog, kcmLog
	if err := kcm.Start(); err != nil {
		return fail("kube-controller-manager.log", err)
	}
	kcmDone := make(chan error, 1)
	go func() { kcmDone <- kcm.Wait() }()
	defer func() {
		_ = kcm.Process.Signal(os.Interrupt)
		select {
		case <-kcmDone:
		case <-time.After(10 * time.Second):
			_ = kcm.Process.Kill()
		}
	}()

	begin("starting the Scion controller")
	ctrlLog, err := openLog("controller.log")
	if err != nil {
		return fail("controller.log", err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(ctrlLog)))
	// The webhook receiver on a free loopback port, written down for
	// people and scripts (docs/cli.md).
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return fail("controller.log", err)
	}
	hooks := fmt.Sprintf("127.0.0.1:%d", ports[0])
	if err := os.WriteFile(o.path(WebhookAddressFile), []byte("http://"+hooks+"\n"), 0o600); err != nil {
		return fail("controller.log", err)
	}
	mgr, err := manager.New(rest.CopyConfig(cp.Config), manager.Options{
		WebhookAddr: hooks, Notifications: true,
		AllowFileRepositories: true, // the fleet in a box is local git
		Egress:                devEgress(),
		FunctionImages:        devFunctionImages,
		MetricsAddr:           "0", ProbeAddr: "0", CacheDir: o.path("cache"),
		RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, PackageVariantSetWorkers: 2,
		SyncPeriod: time.Minute, TagPollPeriod: 10 * time.Second,
	})
	if err != nil {
		return fail("controller.log", err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		<-mgrDone
	}()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	synced := mgr.GetCache().WaitForCacheSync(syncCtx)
	cancel()
	if !synced {
		return fail("controller.log", errors.New("the controller's caches did not sync"))
	}
	report(readyLine)

	select {
	case <-ctx.Done():
		return nil
	case err := <-cp.Exited():
		report(fmt.Sprintf("%s%v (logs: %s, %s)", failedPrefix, err, o.path("etcd.log"), o.path("kube-apiserver.log")))
		return err
	case err := <-kcmDone:
		report(fmt.Sprintf("%skube-controller-manager exited: %v (log: %s)", failedPrefix, err, o.path("kube-controller-manager.log")))
		return fmt.Errorf("kube-controller-manager exited: %w", err)
	case err := <-mgrDone:
		mgrDone <- err
		report(fmt.Sprintf("%sthe Scion controller exited: %v (log: %s)", failedPrefix, err, o.path("controller.log")))
		return fmt.Errorf("the Scion controller exited: %w", err)
	}
}

// devEgress is the development environment's egress policy: a
// controller's default, but that the machine's own loopback (its git
// servers and registry) may be reached.
func devEgress() *egress.Policy {
	p, err := egress.New([]string{"127.0.0.0/8", "::1"}, egress.DefaultDeny)
	if err != nil {
		panic(err) // constants
	}
	return p
}

// WebhookAddressFile, in the environment's folder, holds the URL of the
// controller's webhook receiver (http://127.0.0.1:PORT; hooks go to
// /hook/<namespace>).
const WebhookAddressFile = "webhook-address"
