// Package testenv starts a real kube-apiserver and etcd (controller-runtime
// envtest) with Scion's CRDs installed, for controller and API tests.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/config/crd"
	"github.com/scion-dev/scion/config/policy"
	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
)

// init keeps the Go runtime settings given to a test or benchmark
// (`GOMEMLIMIT=600MiB make bench-scale`) to the test process: the runtime
// has read them before any package's init, and the control plane's
// kube-apiserver and etcd (and any other Go program a test starts) would
// otherwise inherit them and run under a limit sized for the
// controllers.
func init() {
	for _, v := range []string{"GOMEMLIMIT", "GOGC"} {
		_ = os.Unsetenv(v)
	}
}

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	// Client is an administrator's client with the clients' scheme:
	// PackageRevisions in porch.kpt.dev, through Scion's API server, as
	// people and Porch's tools reach them.
	Client client.Client
	Scheme *runtime.Scheme
	// Storage is an administrator's client of the controllers' view
	// (scheme.NewStorage): PackageRevisions in Scion's storage.
	Storage client.Client
	env     *envtest.Environment
	dir     string // certificates, the API server's git mirrors
	stop    context.CancelFunc
	api     *apiserver.Local
	limits  store.Limits
	// apiBinary is Options.APIServerBinary.
	apiBinary string
	// egress is Options.Egress.
	egress *egress.Policy
	// registryCAFile is Options.RegistryCAFile.
	registryCAFile string
}

// Options change how Start sets up the control plane.
type Options struct {
	// Limits bound what Scion's API server accepts in a write of a
	// package's files (store.DefaultLimits when zero).
	Limits store.Limits
	// Earlier sets up an installation of an earlier version: the
	// porch.kpt.dev PackageRevision CustomResourceDefinition serves
	// PackageRevisions, and Scion's API server does not run until
	// RunAPIServer is called (an upgrade).
	Earlier bool
	// RegistryCAFile is trusted by the API server for the registries of
	// Repositories of type oci (--registry-ca-file).
	RegistryCAFile string
	// Egress is the API server's egress policy (--egress-allow and
	// --egress-deny) when it runs in this process; nil allows every
	// address. In a process of its own (APIServerBinary) it has the
	// default policy with loopback allowed.
	Egress *egress.Policy
	// APIServerBinary, when set, runs Scion's API server as
	// `APIServerBinary apiserver` in a process of its own, as an
	// installation runs it apart from the controllers, instead of in this
	// process; $SCION_APISERVER_BINARY sets it when empty (make
	// bench-scale does, with bin/scion). Limits must then be zero.
	APIServerBinary string
}

// APIServerBinaryEnv names the variable that sets
// Options.APIServerBinary for every control plane a test process starts.
const APIServerBinaryEnv = "SCION_APISERVER_BINARY"

// Start starts etcd and kube-apiserver from KUBEBUILDER_ASSETS, or from
// bin/k8s of this module (built by `make control-plane`), installs the
// CRDs (config/crd) and the lifecycle policies (config/policy), and runs
// Scion's API server in this process behind a real APIService (the
// control plane runs with aggregation), as an installation has them.
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith starts a control plane as Start does, with options.
func StartWith(o Options) (_ *Env, retErr error) {
	// Tests against a live control plane wait for what they expect with
	// a generous deadline (Gomega's default is one second, which a loaded
	// machine misses); each still ends as soon as it holds.
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	if o.APIServerBinary == "" {
		o.APIServerBinary = os.Getenv(APIServerBinaryEnv)
	}
	if o.APIServerBinary != "" && o.Limits != (store.Limits{}) {
		return nil, errors.New("testenv: Options.Limits cannot be given to an API server in a process of its own")
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control plane binary %s not found in %s: run `make control-plane` (hack/build-control-plane.sh)", bin, assets)
		}
	}
	// The API server's own logs (klog) are noise in test output;
	// SCION_TEST_LOGS=1 shows them.
	if os.Getenv("SCION_TEST_LOGS") == "" {
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	s := scheme.New()
	crds, err := crd.Definitions()
	if err != nil {
		return nil, err
	}
	if o.Earlier {
		served, err := crd.Served()
		if err != nil {
			return nil, err
		}
		for _, d := range served {
			if d.Spec.Group == porchv1alpha1.GroupVersion.Group {
				crds = append(crds, d)
			}
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		Scheme:                scheme.NewStorage(),
	}
	dir, err := os.MkdirTemp("", "scion-testenv")
	if err != nil {
		return nil, err
	}
	e := &Env{Scheme: s, env: env, dir: dir}
	defer func() {
		if retErr != nil {
			_ = e.Stop()
		}
	}()
	// Aggregation: kube-apiserver authenticates to aggregated API servers
	// (Scion's) as the front proxy, passing the user in request headers.
	flags, err := apiserver.FrontProxy(dir)
	if err != nil {
		return nil, err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for k, v := range flags {
		args.Set(k, v)
	}
	if e.Config, err = env.Start(); err != nil {
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	if e.Storage, err = client.New(e.Config, client.Options{Scheme: scheme.NewStorage()}); err != nil {
		return nil, err
	}
	// The lifecycle policies, as config/default installs them.
	if err := policy.Install(context.Background(), e.Storage); err != nil {
		return nil, err
	}
	e.limits, e.registryCAFile, e.apiBinary, e.egress = o.Limits, o.RegistryCAFile, o.APIServerBinary, o.Egress
	if !o.Earlier {
		if err := e.RunAPIServer(); err != nil {
			return nil, err
		}
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: s}); err != nil {
		return nil, err
	}
	return e, nil
}

// RunAPIServer runs Scion's API server behind the APIService
// v1alpha1.porch.kpt.dev, until Stop (Start does it, unless
// Options.Earlier).
func (e *Env) RunAPIServer() error {
	kubeconfig := filepath.Join(e.dir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig, "scion-apiserver"); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	registry, err := oci.TransportWithCA(e.registryCAFile)
	if err != nil {
		return err
	}
	var api *apiserver.Local
	if e.apiBinary != "" {
		// The tests' git servers and registries are on loopback, which
		// the installed server's default egress policy denies: allowed
		// here, as scion dev allows it.
		args := []string{"--egress-allow=127.0.0.0/8,::1"}
		if e.registryCAFile != "" {
			args = append(args, "--registry-ca-file", e.registryCAFile)
		}
		api, err = apiserver.RunLocalProcess(ctx, e.Config, kubeconfig, e.dir, e.apiBinary, args...)
	} else {
		repos := &repocache.Cache{Reader: e.Storage, Dir: filepath.Join(e.dir, "git"), AllowFileRepositories: true, Limits: e.limits, OCITransport: registry, Egress: e.egress}
		api, err = apiserver.RunLocal(ctx, e.Config, kubeconfig, e.dir, repos, e.limits, nil)
	}
	if err != nil {
		return err
	}
	e.api = api
	return nil
}

// APIServerPid is the process of Scion's API server when it runs in one of
// its own (Options.APIServerBinary), else 0.
func (e *Env) APIServerPid() int {
	if e.api == nil {
		return 0
	}
	return e.api.Pid
}

// EventuallyTimeout is the default deadline of Gomega's Eventually in
// tests against a control plane (StartWith sets it).
const EventuallyTimeout = 30 * time.Second

// Main is a test package's TestMain body for tests that share one control
// plane: it starts one with o, hands it to ready (whose error ends the run
// before any test), runs the tests, stops the control plane and returns
// the exit code for os.Exit.
func Main(m *testing.M, o Options, ready func(*Env) error) int {
	env, err := StartWith(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	if err := ready(env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Stop stops Scion's API server and the control plane.
func (e *Env) Stop() error {
	defer os.RemoveAll(e.dir)
	if e.stop != nil {
		e.stop()
		if e.api != nil {
			_ = e.api.Wait()
		}
	}
	if e.Config == nil {
		return nil
	}
	return e.env.Stop()
}

// ModuleRoot finds the folder holding go.mod, upwards from the working
// directory (go test runs in the package folder).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// WriteKubeconfig writes a kubeconfig for the control plane, whose context
// names user as its user.
func (e *Env) WriteKubeconfig(path, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*cfg, path)
}

// Namespace creates a namespace with a random name starting with prefix,
// for one test.
func (e *Env) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(6)}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// As returns a client configuration that impersonates user, bound to the
// ClusterRole role ("" for none) in ns by a RoleBinding: a person with
// Kubernetes RBAC, as Scion's user roles grant it.
func (e *Env) As(t testing.TB, ns, user, role string) *rest.Config {
	t.Helper()
	if role != "" {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		if err := e.Storage.Create(context.Background(), rb); err != nil {
			t.Fatal(err)
		}
		e.waitForBinding(t, ns, user, role)
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// waitForBinding waits until the API server's authorizer sees a new
// binding of user to role in ns: until it allows the user the first
// verb of role's first rule (its RBAC cache follows bindings a moment
// later, longer on a loaded machine).
func (e *Env) waitForBinding(t testing.TB, ns, user, role string) {
	t.Helper()
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{}
	if err := e.Storage.Get(ctx, client.ObjectKey{Name: role}, cr); err != nil || len(cr.Rules) == 0 || len(cr.Rules[0].Verbs) == 0 ||
		len(cr.Rules[0].Resources) == 0 || len(cr.Rules[0].APIGroups) == 0 {
		return // nothing to ask about: the first request says
	}
	r := cr.Rules[0]
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}}}
		if err := e.Storage.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed {
			return
		}
	}
	t.Fatalf("the binding of %s to %s in %s was not in effect after 30s", user, role, ns)
}

// SampleHeap records the peak of the process's HeapInuse in peak until the
// returned stop function is called.
func SampleHeap(peak *atomic.Uint64) (stop func()) {
	return SampleHeapProfiling(peak, "")
}

// PeakResident is the most resident memory the process has had (VmHWM in
// /proc/self/status: the heap, what is outside it such as the git object
// cache's segments, and the runtime's own), 0 where there is no such file.
func PeakResident() uint64 { return PeakResidentOf("self") }

// PeakResidentOf is PeakResident of another process (a pid, or "self").
func PeakResidentOf(pid string) uint64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// SampleHeapProfiling is SampleHeap that also, when profile is not empty,
// writes the heap profile there whenever the peak grows by a tenth: what
// was live at the collection before the peak, which is what the peak is
// made of (the heap grows to about twice that before the next one).
func SampleHeapProfiling(peak *atomic.Uint64, profile string) (stop func()) {
	done := make(chan struct{})
	go func() {
		var ms goruntime.MemStats
		var profiled uint64
		for {
			goruntime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			if profile != "" && ms.HeapInuse > profiled+profiled/10 && ms.HeapInuse > 64<<20 {
				profiled = ms.HeapInuse
				if f, err := os.Create(profile); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					_ = f.Close()
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done) }
}
