// Package testenv starts a real kube-apiserver and etcd (controller-runtime
// envtest) with Scion's CRDs installed, for controller and API tests.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/config/crd"
	"github.com/scion-dev/scion/config/policy"
	"github.com/scion-dev/scion/internal/scheme"
)

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
	certs  string // the front proxy's certificates
}

// Options change what Start installs.
type Options struct {
	// PorchAPI installs Scion's storage of package revisions
	// (packagerevisions.internal.scion.dev) instead of the
	// porch.kpt.dev PackageRevision CustomResourceDefinition, for Scion's
	// API server to serve porch.kpt.dev.
	PorchAPI bool
}

// Start starts etcd and kube-apiserver from KUBEBUILDER_ASSETS, or from
// bin/k8s of this module (built by `make control-plane`), and installs the
// CRDs (config/crd) and the lifecycle policies (config/policy).
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith starts a control plane as Start does, with options.
func StartWith(o Options) (*Env, error) {
	root, err := moduleRoot()
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
	s := scheme.New()
	crds, err := crd.Definitions()
	if err != nil {
		return nil, err
	}
	if o.PorchAPI {
		storage, err := crd.StorageDefinition()
		if err != nil {
			return nil, err
		}
		crds = slices.DeleteFunc(crds, func(d *apiextensionsv1.CustomResourceDefinition) bool {
			return d.Spec.Group == porchv1alpha1.GroupVersion.Group
		})
		crds = append(crds, storage)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		Scheme:                s,
	}
	// Aggregation: kube-apiserver authenticates to aggregated API servers
	// (Scion's) as the front proxy, passing the user in request headers.
	certs, err := os.MkdirTemp("", "scion-front-proxy")
	if err != nil {
		return nil, err
	}
	flags, err := frontProxy(certs)
	if err != nil {
		return nil, err
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for k, v := range flags {
		args.Set(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certs)
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certs)
		return nil, err
	}
	// The lifecycle policies, as config/default installs them.
	if err := policy.Install(context.Background(), c); err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certs)
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: env, certs: certs}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	defer os.RemoveAll(e.certs)
	return e.env.Stop()
}

// moduleRoot finds the folder holding go.mod, upwards from the working
// directory (go test runs in the package folder).
func moduleRoot() (string, error) {
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

// SampleHeap records the peak of the process's HeapInuse in peak until the
// returned stop function is called.
func SampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	go func() {
		var ms goruntime.MemStats
		for {
			goruntime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
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
