// Package controlplane runs etcd and kube-apiserver on loopback for the
// development environment (scion dev): a certificate authority of its
// own, an administrator's client certificate, etcd's data in a folder
// that outlives the processes, and the CRDs installed.
//
// It stands where controller-runtime's envtest stood: envtest is a test
// library, and linking it into the binary the image runs made every scion
// command write a cache folder at start (a package's init), so that a
// container with a read-only root filesystem and no /tmp could not even
// print its version.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/localca"
)

// Options configure Start.
type Options struct {
	// Assets holds etcd and kube-apiserver.
	Assets string
	// Dir holds etcd's data (kept) and the certificates (made anew at each
	// start).
	Dir string
	// EtcdLog and APIServerLog receive the processes' output.
	EtcdLog, APIServerLog io.Writer
	// APIServerFlags are more kube-apiserver flags, without "--".
	APIServerFlags map[string]string
	// Timeout bounds the wait for the API server (2 minutes when 0).
	Timeout time.Duration
}

// ControlPlane is running etcd and kube-apiserver.
type ControlPlane struct {
	// Config is an administrator's (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is the same administrator's kubeconfig.
	Kubeconfig []byte
	etcd, api  *exec.Cmd
	done       map[*exec.Cmd]chan error
}

// Start starts etcd, then kube-apiserver, and waits for its /readyz.
func Start(ctx context.Context, o Options) (_ *ControlPlane, retErr error) {
	cp := &ControlPlane{done: map[*exec.Cmd]chan error{}}
	defer func() {
		if retErr != nil {
			_ = cp.Stop()
		}
	}()
	pki := filepath.Join(o.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	files, err := writePKI(pki)
	if err != nil {
		return nil, fmt.Errorf("making the control plane's certificates: %w", err)
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.etcd, err = cp.run(o.EtcdLog, filepath.Join(o.Assets, "etcd"),
		"--data-dir="+filepath.Join(o.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	flags := map[string]string{
		"etcd-servers":  etcdURL,
		"bind-address":  "127.0.0.1",
		"secure-port":   strconv.Itoa(ports[2]),
		"tls-cert-file": files["apiserver.crt"], "tls-private-key-file": files["apiserver.key"],
		"client-ca-file":           files["ca.crt"],
		"service-account-issuer":   "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		"service-account-key-file": files["sa.pub"], "service-account-signing-key-file": files["sa.key"],
		"service-cluster-ip-range": "10.0.0.0/24",
		"authorization-mode":       "RBAC",
		"allow-privileged":         "true",
		// No controller makes service account tokens here: Pods are not
		// what the environment is for.
		"disable-admission-plugins": "ServiceAccount",
	}
	for k, v := range o.APIServerFlags {
		flags[k] = v
	}
	names := make([]string, 0, len(flags))
	for k := range flags {
		names = append(names, k)
	}
	sort.Strings(names)
	args := make([]string, 0, len(names))
	for _, k := range names {
		args = append(args, "--"+k+"="+flags[k])
	}
	cp.api, err = cp.run(o.APIServerLog, filepath.Join(o.Assets, "kube-apiserver"), args...)
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	host := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	caPEM, _ := os.ReadFile(files["ca.crt"])
	certPEM, _ := os.ReadFile(files["admin.crt"])
	keyPEM, _ := os.ReadFile(files["admin.key"])
	cp.Config = &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertData: certPEM, KeyData: keyPEM}}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["scion-dev"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caPEM}
	kc.AuthInfos["scion-dev"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["scion-dev"] = &clientcmdapi.Context{Cluster: "scion-dev", AuthInfo: "scion-dev", Namespace: "default"}
	kc.CurrentContext = "scion-dev"
	if cp.Kubeconfig, err = clientcmd.Write(*kc); err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	if err := cp.waitReady(ctx, timeout); err != nil {
		return nil, err
	}
	return cp, nil
}

// run starts a process whose output goes to log.
func (cp *ControlPlane) run(log io.Writer, bin string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cp.done[cmd] = done
	return cmd, nil
}

// waitReady waits for kube-apiserver's /readyz, or for either process to
// exit.
func (cp *ControlPlane) waitReady(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if _, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); last == nil {
			return nil
		}
		for cmd, name := range map[*exec.Cmd]string{cp.etcd: "etcd", cp.api: "kube-apiserver"} {
			select {
			case err := <-cp.done[cmd]:
				cp.done[cmd] <- err
				return fmt.Errorf("%s exited: %v", name, err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver was not ready within %s: %w", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops kube-apiserver, then etcd (SIGTERM, then SIGKILL after 20
// seconds).
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, cmd := range []*exec.Cmd{cp.api, cp.etcd} {
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-cp.done[cmd]:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-cp.done[cmd]
			errs = append(errs, fmt.Errorf("%s did not stop within 20s: killed", filepath.Base(cmd.Path)))
		}
	}
	return errors.Join(errs...)
}

// Exited returns a channel that receives an error when etcd or
// kube-apiserver exits.
func (cp *ControlPlane) Exited() <-chan error {
	out := make(chan error, 1)
	for cmd, name := range map[*exec.Cmd]string{cp.etcd: "etcd", cp.api: "kube-apiserver"} {
		go func() {
			err := <-cp.done[cmd]
			cp.done[cmd] <- err
			select {
			case out <- fmt.Errorf("%s exited: %v", name, err):
			default:
			}
		}()
	}
	return out
}

// InstallCRDs creates the CRDs, or updates those that are there (an
// environment started again on its kept data), and waits until each is
// Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	for _, want := range crds {
		obj := want.DeepCopy()
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err = c.Get(ctx, client.ObjectKeyFromObject(want), cur); err == nil {
				obj.ResourceVersion = cur.ResourceVersion
				err = c.Update(ctx, obj)
			}
		}
		if err != nil {
			return fmt.Errorf("installing the CRD %s: %w", want.Name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, want := range crds {
		for {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), cur); err == nil && established(cur) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the CRD %s is not Established after a minute", want.Name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// writePKI writes the authority, the API server's serving certificate,
// the administrator's client certificate and the service accounts'
// signing key into dir, and returns their paths by name.
func writePKI(dir string) (map[string]string, error) {
	files := map[string]string{}
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		files[name] = p
		return os.WriteFile(p, data, 0o600)
	}
	ca, err := localca.New("scion-dev-ca")
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, err := ca.Issue("kube-apiserver", 2, "127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := ca.IssueClient("scion-dev", []string{"system:masters"}, 3)
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := localca.SigningKey()
	if err != nil {
		return nil, err
	}
	return files, errors.Join(
		write("ca.crt", ca.PEM),
		write("apiserver.crt", servingCert), write("apiserver.key", servingKey),
		write("admin.crt", adminCert), write("admin.key", adminKey),
		write("sa.key", saKey), write("sa.pub", saPub),
	)
}

// FreePorts finds n free ports on loopback (free when it returns: another
// process may take one before the caller listens).
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
