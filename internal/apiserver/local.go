package apiserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/controlplane"
	"github.com/scion-dev/scion/internal/localca"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
)

// FrontProxyUser is the common name of the client certificate
// kube-apiserver presents to aggregated API servers (its
// --requestheader-allowed-names).
const FrontProxyUser = "front-proxy-client"

// FrontProxy writes, into dir, the front proxy's certificate authority
// and the client certificate kube-apiserver presents to aggregated API
// servers, and returns the kube-apiserver flags that use them: what a
// local control plane (scion dev, tests) needs to serve Scion's API
// server.
func FrontProxy(dir string) (map[string]string, error) {
	ca, err := localca.New("scion-local-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue(FrontProxyUser, 2)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"front-proxy-ca.crt": ca.PEM, "front-proxy-client.crt": cert, "front-proxy-client.key": key}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing the front proxy's %s: %w", name, err)
		}
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        FrontProxyUser,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-uid-headers":          "X-Remote-Uid",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(dir, "front-proxy-client.key"),
	}, nil
}

// servingCert makes a certificate authority and a serving certificate
// signed by it for the given DNS names: what an APIService's caBundle and
// the aggregated server it points at need.
func servingCert(dnsNames ...string) (caPEM, certPEM, keyPEM []byte, err error) {
	ca, err := localca.New("scion-local-serving-ca")
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = ca.Issue(dnsNames[0], 3, dnsNames...)
	return ca.PEM, certPEM, keyPEM, err
}

// Local is the server a local control plane (scion dev, the tests, the
// benchmarks) reaches through a real APIService: run in this process
// (RunLocal) or in a process of its own (RunLocalProcess).
type Local struct {
	done chan error
	// Pid is the server's process when it runs in one of its own, else 0.
	Pid int
}

// Wait returns when the server stopped (its context is done).
func (l *Local) Wait() error { return <-l.done }

// localService and localNamespace name the Service the local APIService
// points at (an ExternalName to localhost).
const localService, localNamespace = "scion-apiserver", "scion-system"

// localTLS writes into dir a serving certificate for the local Service
// and its key, signed by a new certificate authority, and returns that
// authority (the APIService's caBundle) and the files.
func localTLS(dir string) (ca []byte, certFile, keyFile string, err error) {
	ca, cert, key, err := servingCert(localService + "." + localNamespace + ".svc")
	if err != nil {
		return nil, "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return nil, "", "", err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return nil, "", "", err
	}
	return ca, certFile, keyFile, nil
}

// RunLocal starts the server in this process, behind the APIService
// v1alpha1.porch.kpt.dev of the control plane cfg reaches as an
// administrator (kubeconfig is the same, as a file): an ExternalName
// Service to localhost, the certificates in dir, the storage's role. It
// returns once the control plane serves porch.kpt.dev through it; the
// server stops when ctx is done. functionImages are Options.FunctionImages.
func RunLocal(ctx context.Context, cfg *rest.Config, kubeconfig, dir string, repos *repocache.Cache, limits store.Limits, functionImages []string) (*Local, error) {
	ca, certFile, keyFile, err := localTLS(dir)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv, err := New(Options{Config: cfg, Kubeconfig: kubeconfig, Listener: lis, CertFile: certFile, KeyFile: keyFile, Repositories: repos, Limits: limits, FunctionImages: functionImages})
	if err != nil {
		lis.Close()
		return nil, err
	}
	l := &Local{done: make(chan error, 1)}
	go func() { l.done <- srv.Run(ctx) }()
	if err := registerLocal(ctx, cfg, lis.Addr().(*net.TCPAddr).Port, ca); err != nil {
		return nil, err
	}
	return l, nil
}

// RunLocalProcess runs the server as `binary apiserver` in a process of
// its own, as an installation runs the scion-apiserver Deployment apart
// from the controllers (its own heap, its own collector), behind the
// APIService as RunLocal does, with args added to its command line. Its
// log goes to dir/apiserver.log. It returns once the control plane serves
// porch.kpt.dev through it; the process is stopped (SIGTERM) when ctx is
// done.
func RunLocalProcess(ctx context.Context, cfg *rest.Config, kubeconfig, dir, binary string, args ...string) (*Local, error) {
	ca, certFile, keyFile, err := localTLS(dir)
	if err != nil {
		return nil, err
	}
	// A free port: the server binds it itself.
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	logFile, err := os.Create(filepath.Join(dir, "apiserver.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"apiserver", "--kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--cache-dir", filepath.Join(dir, "git"), "--allow-file-repositories"}, args...)...)
	// Stopped as an installation's pod is, not killed; and so when this
	// process dies without stopping it (a test that panics).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s apiserver: %w", binary, err)
	}
	l := &Local{done: make(chan error, 1), Pid: cmd.Process.Pid}
	regCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		cancel() // no use waiting to register a server that is gone
		if ctx.Err() != nil {
			err = nil // stopped as asked
		}
		l.done <- err
	}()
	if err := registerLocal(regCtx, cfg, port, ca); err != nil {
		if ctx.Err() == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		return nil, fmt.Errorf("%w (its log: %s)", err, logFile.Name())
	}
	return l, nil
}

// registerLocal installs the storage's role, and the Service and
// APIService that send porch.kpt.dev to the server on localhost:port,
// whose serving certificate ca signed; it returns once the control plane
// serves porch.kpt.dev through it.
func registerLocal(ctx context.Context, cfg *rest.Config, port int, ca []byte) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if err := rbac.Install(ctx, c, rbac.APIServer); err != nil {
		return err
	}
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": localNamespace}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": localService, "namespace": localNamespace},
			"spec":     map[string]any{"type": "ExternalName", "externalName": "localhost"}}},
	}
	for _, v := range servedVersions {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": v.gv.Version + "." + v.gv.Group,
				// Kept if a porch.kpt.dev CustomResourceDefinition of an
				// earlier version is deleted.
				"labels": map[string]any{"kube-aggregator.kubernetes.io/automanaged": "false"}},
			"spec": map[string]any{
				"group": v.gv.Group, "version": v.gv.Version,
				"groupPriorityMinimum": int64(2000), "versionPriority": v.priority,
				"service":  map[string]any{"namespace": localNamespace, "name": localService, "port": int64(port)},
				"caBundle": base64.StdEncoding.EncodeToString(ca),
			}}})
	}
	for _, u := range objs {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("scion"), client.ForceOwnership); err != nil {
			return fmt.Errorf("registering the API server: %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return waitServed(ctx, dc, time.Minute)
}

// servedVersions are the versions of porch.kpt.dev the server serves,
// each with its APIService's versionPriority (config/apiserver: v1alpha1
// is the one kubectl prefers) and the resource that shows discovery is
// the server's.
var servedVersions = []struct {
	gv       schema.GroupVersion
	priority int64
	resource string
}{
	{porchv1alpha1.GroupVersion, 15, "packagerevisionresources"},
	{porchv1alpha2.GroupVersion, 10, "packagerevisions"},
}

// waitServed waits until clients can use porch.kpt.dev through the
// control plane, at most timeout.
func waitServed(ctx context.Context, dc discovery.DiscoveryInterface, timeout time.Duration) error {
	var last error
	// Two things must hold before clients can use a group-version, and
	// they become true in either order: its path is proxied to Scion's
	// API server (kube-aggregator answers 503 until it has marked the
	// APIService Available, although its discovery already reads the
	// server), and the control plane's discovery document, which
	// clients' REST mappers read, lists the resources.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, v := range servedVersions {
			list, err := dc.ServerResourcesForGroupVersion(v.gv.String())
			if err != nil {
				last = fmt.Errorf("the control plane does not proxy %s yet: %w", v.gv, err)
				return false, nil
			}
			if !serves(list, v.resource) {
				last = fmt.Errorf("%s is served, but not by Scion's API server", v.gv)
				return false, nil
			}
		}
		_, lists, err := dc.ServerGroupsAndResources()
		for _, v := range servedVersions {
			if !slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool { return l.GroupVersion == v.gv.String() && serves(l, v.resource) }) {
				last = fmt.Errorf("%s is not in the control plane's discovery document yet", v.gv)
				if err != nil {
					last = fmt.Errorf("%w: %w", last, err)
				}
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("the control plane does not serve porch.kpt.dev through Scion's API server: %w", last)
	}
	return nil
}

// serves reports whether a discovery list of porch.kpt.dev has resource:
// an earlier version's CustomResourceDefinition served PackageRevisions
// but never their content, nor v1alpha2.
func serves(l *metav1.APIResourceList, resource string) bool {
	return slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
}
