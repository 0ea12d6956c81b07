package apiserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env *testenv.Env
	// porch is a client of porch.kpt.dev through the cluster's API
	// server, as porchctl is.
	porch client.Client
	// storageClient reads and writes the storage directly.
	storageClient client.Client
	// porchScheme is porchctl's view: PackageRevision and
	// PackageRevisionResources in porch.kpt.dev.
	porchScheme = runtime.NewScheme()
)

// testLimits are small, so that a test can go over them.
var testLimits = store.Limits{FileBytes: 64 << 10}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// run starts a control plane with aggregation, Scion's API server in
// process behind a real APIService, and runs the tests.
func run(m *testing.M) (int, error) {
	var err error
	env, err = testenv.StartWith(testenv.Options{PorchAPI: true})
	if err != nil {
		return 0, err
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "scion-apiserver-test")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	for _, add := range []func(*runtime.Scheme) error{porchv1alpha1.AddToScheme, content.AddToScheme, corev1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(porchScheme); err != nil {
			return 0, err
		}
	}
	storageScheme := runtime.NewScheme()
	if err := porchv1alpha1.AddToStorageScheme(storageScheme); err != nil {
		return 0, err
	}
	if storageClient, err = client.New(env.Config, client.Options{Scheme: storageScheme}); err != nil {
		return 0, err
	}

	// The server: its serving certificate names the Service the
	// APIService points at.
	ca, cert, key, err := testenv.ServingCert("scion-apiserver.scion-system.svc")
	if err != nil {
		return 0, err
	}
	certFile, keyFile, kubeconfig := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return 0, err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return 0, err
	}
	if err := env.WriteKubeconfig(kubeconfig, "scion-apiserver"); err != nil {
		return 0, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	repos := &repocache.Cache{Reader: env.Client, Dir: filepath.Join(dir, "git"), AllowFileRepositories: true, Limits: testLimits}
	srv, err := New(Options{Config: env.Config, Kubeconfig: kubeconfig, Listener: lis, CertFile: certFile, KeyFile: keyFile, Repositories: repos, Limits: testLimits})
	if err != nil {
		return 0, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()

	if err := register(ctx, lis.Addr().(*net.TCPAddr).Port, ca); err != nil {
		return 0, err
	}
	if err := installRoles(ctx); err != nil {
		return 0, err
	}
	if porch, err = client.New(env.Config, client.Options{Scheme: porchScheme}); err != nil {
		return 0, err
	}
	code := m.Run()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			return code, fmt.Errorf("the API server: %w", err)
		}
	case <-time.After(30 * time.Second):
		return code, fmt.Errorf("the API server did not stop")
	}
	return code, nil
}

// register points an APIService for porch.kpt.dev/v1alpha1 at the
// server (through an ExternalName Service to localhost) and waits until
// the cluster's API server serves it.
func register(ctx context.Context, port int, ca []byte) error {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scion-system"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "scion-apiserver", Namespace: "scion-system"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": "v1alpha1.porch.kpt.dev"},
			"spec": map[string]any{
				"group": "porch.kpt.dev", "version": "v1alpha1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
				"service":  map[string]any{"namespace": "scion-system", "name": "scion-apiserver", "port": int64(port)},
				"caBundle": base64.StdEncoding.EncodeToString(ca),
			},
		}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T: %w", o, err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dc.ServerResourcesForGroupVersion("porch.kpt.dev/v1alpha1")
		if err != nil {
			last = err
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == "packagerevisionresources" {
				return true, nil
			}
		}
		last = fmt.Errorf("porch.kpt.dev/v1alpha1 serves %v", list.APIResources)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the APIService did not become available: %v (%w)", last, err)
	}
	return nil
}

// installRoles creates the people's roles (config/rbac/user_roles.yaml)
// and the storage's role for the server's writes
// (config/rbac/apiserver.yaml).
func installRoles(ctx context.Context) error {
	for _, name := range []string{"user_roles.yaml", "apiserver.yaml"} {
		f, err := os.Open(filepath.Join("..", "..", "config", "rbac", name))
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			u := map[string]any{}
			if err := dec.Decode(&u); err != nil {
				break
			}
			var obj client.Object
			switch u["kind"] {
			case "ClusterRole":
				obj = &rbacv1.ClusterRole{}
			case "ClusterRoleBinding":
				obj = &rbacv1.ClusterRoleBinding{}
			default:
				continue
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj); err != nil {
				f.Close()
				return err
			}
			if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	return nil
}

// as returns a porch.kpt.dev client that impersonates user, bound to role
// (a ClusterRole, "" for none) in ns.
func as(t *testing.T, ns, user, role string) client.Client {
	t.Helper()
	if role != "" {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		if err := env.Client.Create(context.Background(), rb); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: porchScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
