// Package flux runs Flux's source-controller and kustomize-controller,
// built from their own modules by hack/flux.sh (make flux) into bin/flux,
// against a test control plane, as processes: what deploys the packages
// Scion publishes in the tests that follow them to a cluster.
package flux

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/scion-dev/scion/internal/testutil/harness"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// DirEnv names the variable that sets the folder of Flux's executables
// and CRDs (bin/flux of this module when empty).
const DirEnv = "SCION_FLUX_DIR"

// Namespace is where the controllers run (RUNTIME_NAMESPACE).
const Namespace = "flux-system"

// ShardLabel is the label of Flux's sharding: an object with it is
// reconciled only by the Flux started for its value (StartShard), not by
// the one Start runs.
const ShardLabel = "sharding.fluxcd.io/key"

// Flux is a running Flux.
type Flux struct {
	// Dir holds the controllers' logs and source-controller's storage.
	Dir string

	procs []*exec.Cmd
}

// StartMain is Start for a whole test package, from TestMain; stop
// stops the controllers and removes their files.
func StartMain(cfg *rest.Config, c client.Client, kubeconfig string) (f *Flux, stop func(), err error) {
	stop, err = harness.Main(func(t harness.TB) { f = Start(t, cfg, c, kubeconfig) })
	return f, stop, err
}

// Start installs Flux's CRDs into the control plane cfg reaches, makes
// the flux-system namespace, and runs source-controller and
// kustomize-controller with kubeconfig until the test ends.
func Start(t harness.TB, cfg *rest.Config, c client.Client, kubeconfig string) *Flux {
	t.Helper()
	return start(t, cfg, c, kubeconfig, "!"+ShardLabel)
}

// StartShard is Start for the objects labelled ShardLabel=shard only:
// a Flux a test can stop (Stop) while the one Start runs goes on.
func StartShard(t harness.TB, cfg *rest.Config, c client.Client, kubeconfig, shard string) *Flux {
	t.Helper()
	return start(t, cfg, c, kubeconfig, ShardLabel+"="+shard)
}

// Stop kills the controllers: Flux is down; what it wrote stays.
func (f *Flux) Stop() {
	for _, cmd := range f.procs {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	f.procs = nil
}

func start(t harness.TB, cfg *rest.Config, c client.Client, kubeconfig, selector string) *Flux {
	t.Helper()
	bin := os.Getenv(DirEnv)
	if bin == "" {
		root, err := testenv.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, "bin", "flux")
	}
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("no Flux %s in %s: make test builds it (make flux: hack/flux.sh), or set %s", name, bin, DirEnv)
		}
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(bin, "crds")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing Flux's CRDs: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f := &Flux{Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(f.Dir, "storage"), 0o755); err != nil {
		t.Fatal(err)
	}
	storage := freeAddr(t)
	f.run(t, filepath.Join(bin, "source-controller"), kubeconfig, "--watch-label-selector="+selector,
		"--storage-path="+filepath.Join(f.Dir, "storage"), "--storage-addr="+storage, "--storage-adv-addr="+storage)
	f.run(t, filepath.Join(bin, "kustomize-controller"), kubeconfig, "--watch-label-selector="+selector)
	return f
}

// run starts one controller until the test ends, and waits for its
// health endpoint.
func (f *Flux) run(t harness.TB, bin, kubeconfig string, args ...string) {
	t.Helper()
	name := filepath.Base(bin)
	health := freeAddr(t)
	logf, err := os.Create(filepath.Join(f.Dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--enable-leader-election=false", "--metrics-addr=0", "--health-addr="+health, "--log-level=info")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE="+Namespace)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Killed with this process, however it ends (a test binary killed,
	// hack/node stopped).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.procs = append(f.procs, cmd)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + health + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("Flux's %s did not become ready (last: %v):\n%s", name, err, tail(log, 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Logs is the end of what the controllers logged so far, for a failing
// test's output.
func (f *Flux) Logs() string {
	var out string
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		b, _ := os.ReadFile(filepath.Join(f.Dir, name+".log"))
		out += "--- " + name + " (the end):\n" + tail(b, 3000) + "\n"
	}
	return out
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func freeAddr(t harness.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Kubeconfig writes a kubeconfig for cfg's API server that authenticates
// with token, trusting cfg's CA: what a Repository's spec.cluster names,
// for a ServiceAccount of the target cluster.
func Kubeconfig(cfg *rest.Config, token string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: target
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: scion
  user:
    token: %s
contexts:
- name: target
  context: {cluster: target, user: scion}
current-context: target
`, cfg.Host, base64.StdEncoding.EncodeToString(cfg.CAData), token))
}

// TargetCluster installs config/target-cluster (the health reader's
// ServiceAccount and Role) into namespace of the control plane cfg
// reaches, as a platform team installs it in each target cluster with
// its Kustomizations' namespace, and returns a kubeconfig with a token of
// that ServiceAccount valid for ttl (as `kubectl create token
// --duration` makes one).
func TargetCluster(t harness.TB, cfg *rest.Config, c client.Client, namespace string, ttl time.Duration) []byte {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// An overlay that sets the namespace, as the kustomization's comment
	// tells people to.
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "target-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	k := "namespace: " + namespace + "\nresources:\n- " + base + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: HealthReader, Namespace: namespace}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("a token of %s/%s: %v", namespace, HealthReader, err)
	}
	return Kubeconfig(cfg, tr.Status.Token)
}

// HealthReader is the ServiceAccount config/target-cluster makes.
const HealthReader = "scion-health-reader"
