// Package cluster runs a real one-node Kubernetes cluster on this machine
// for tests: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler built from the control plane's Kubernetes source
// (hack/build-control-plane.sh --node), and a node made of Debian's
// containerd and runc, the kubelet and kube-proxy, with a bridge network
// of Debian's CNI plugins and an image registry (Debian's docker-registry)
// that both the test and the node reach.
//
// Everything the node changes on the machine is kept to one network
// namespace (scion-node: its interfaces, routes, iptables chains and
// network sysctls) and one folder (its state, mounts, logs), except what
// the kubelet changes machine-wide (kernel sysctls, /var/lib/kubelet, the
// cgroups of containers): those are recorded before they change in
// /run/scion-node.json and put back by Stop, by a signal handler, and by
// Sweep (the next Start, or `go run ./hack/node sweep`) when the process
// died before it could. A lock keeps two nodes from running at once.
//
// The node's network: the test's side of a veth pair is HostIP, the
// node's NodeIP (the API server's address, NodeIP:6443, and the
// registry's, NodeIP:5000); Pods are in PodCIDR and reach the host at
// HostIP (a git server the test serves there), Services are in
// ServiceCIDR.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/localca"
)

// The node's names and addresses.
const (
	// NodeName is the Node's name.
	NodeName = "scion-node"
	// Netns is the network namespace the node runs in.
	Netns = "scion-node"
	// HostIP is the test's address on the node's network: Pods reach a
	// server the test listens with there.
	HostIP = "10.213.0.1"
	// NodeIP is the node's address: the API server's and the registry's.
	NodeIP = "10.213.0.2"
	// PodCIDR holds the Pods' addresses.
	PodCIDR = "10.214.0.0/24"
	// ServiceCIDR holds the Services' addresses.
	ServiceCIDR = "10.215.0.0/24"
	// RegistryHost is the node's image registry (plain HTTP): the test
	// pushes images there and the node pulls them from there.
	RegistryHost = NodeIP + ":5000"
	// PauseImage is the node's sandbox image, in its registry: a
	// Deployment of it runs (its command is /pause, its user 65535).
	PauseImage = RegistryHost + "/scion-node/pause:1"

	networkCIDR  = "10.213.0.0/24"
	hostVeth     = "scion-host"
	nodeVeth     = "scion-eth0"
	apiPort      = "6443"
	kubernetesIP = "10.215.0.1"
)

// Files outside the node's folder: the lock that keeps two nodes from
// running at once and the record of what to put back.
var (
	lockPath  = "/run/scion-node.lock"
	statePath = "/run/scion-node.json"
)

// Binaries is what Options.Assets must hold.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

// Options configure Start.
type Options struct {
	// Assets holds Binaries (bin/k8s, make node).
	Assets string
	// Progress receives a line per step (nil: none).
	Progress io.Writer
	// KeepDir keeps the node's folder (logs) after Stop, for debugging.
	KeepDir bool
}

// Cluster is a running one-node cluster.
type Cluster struct {
	// Dir is the node's folder: state, certificates, logs (Dir/logs).
	Dir string
	// Kubeconfig is a cluster administrator's kubeconfig (system:masters).
	Kubeconfig string
	// Config is the same administrator's client configuration.
	Config *rest.Config
	// Kubectl is the kubectl of the control plane's release.
	Kubectl string

	o       Options
	lock    *os.File
	mu      sync.Mutex
	procs   []*proc
	st      *state
	stopped bool
	signals chan os.Signal
	sigDone chan struct{}
}

// proc is one process of the cluster.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// Start brings the cluster up, each step named in what it returns when
// it fails; a failure tears down what was started.
func Start(ctx context.Context, o Options) (_ *Cluster, retErr error) {
	c := &Cluster{o: o}
	step := ""
	begin := func(s string) {
		step = s
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "==> node: %s\n", s)
		}
	}
	defer func() {
		if retErr != nil {
			retErr = fmt.Errorf("starting the node: %s: %w", step, retErr)
			if c.st != nil {
				if err := c.Stop(); err != nil {
					retErr = fmt.Errorf("%w; then tearing it down: %v", retErr, err)
				}
			} else if c.lock != nil {
				c.lock.Close()
			}
		}
	}()

	begin("checking the machine")
	if err := preflight(o.Assets); err != nil {
		return nil, err
	}
	begin("taking the node lock " + lockPath)
	if err := c.takeLock(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(statePath); err == nil {
		begin("tearing down what a node that died left behind (" + statePath + ")")
		if err := sweep(o.Progress); err != nil {
			return nil, err
		}
	}
	if err := checkAddresses(); err != nil {
		return nil, err
	}

	begin("recording the machine's state")
	dir, err := os.MkdirTemp("", "scion-node-")
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	st, err := record(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.st = st
	c.watchSignals()

	begin("making the node's network (network namespace " + Netns + ")")
	if err := makeNetwork(ctx); err != nil {
		return nil, err
	}

	begin("making certificates")
	pki, err := c.makePKI()
	if err != nil {
		return nil, err
	}

	begin("starting etcd")
	if err := c.start("etcd", filepath.Join(o.Assets, "etcd"),
		"--data-dir="+c.path("etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380",
		"--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}

	begin("starting kube-apiserver")
	apiArgs := []string{
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--secure-port=" + apiPort, "--advertise-address=" + NodeIP,
		"--tls-cert-file=" + pki["apiserver.crt"], "--tls-private-key-file=" + pki["apiserver.key"],
		"--client-ca-file=" + pki["ca.crt"],
		"--service-account-key-file=" + pki["sa.pub"], "--service-account-signing-key-file=" + pki["sa.key"],
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + pki["apiserver-kubelet.crt"], "--kubelet-client-key=" + pki["apiserver-kubelet.key"],
		"--kubelet-preferred-address-types=InternalIP",
	}
	proxyDir := c.path("front-proxy")
	if err := os.MkdirAll(proxyDir, 0o700); err != nil {
		return nil, err
	}
	proxy, err := apiserver.FrontProxy(proxyDir)
	if err != nil {
		return nil, err
	}
	for k, v := range proxy {
		apiArgs = append(apiArgs, "--"+k+"="+v)
	}
	if err := c.start("kube-apiserver", filepath.Join(o.Assets, "kube-apiserver"), apiArgs...); err != nil {
		return nil, err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return nil, err
	}

	begin("starting kube-controller-manager and kube-scheduler")
	if err := c.start("kube-controller-manager", filepath.Join(o.Assets, "kube-controller-manager"),
		"--kubeconfig="+pki["controller-manager.kubeconfig"],
		"--service-account-private-key-file="+pki["sa.key"], "--root-ca-file="+pki["ca.crt"],
		"--use-service-account-credentials=true", "--leader-elect=false", "--secure-port=0",
	); err != nil {
		return nil, err
	}
	if err := c.start("kube-scheduler", filepath.Join(o.Assets, "kube-scheduler"),
		"--kubeconfig="+pki["scheduler.kubeconfig"], "--leader-elect=false", "--secure-port=0",
	); err != nil {
		return nil, err
	}

	begin("starting the image registry (docker-registry, " + RegistryHost + ")")
	if err := c.startRegistry(ctx); err != nil {
		return nil, err
	}
	begin("building the sandbox (pause) image")
	pause, err := c.pushPause(ctx)
	if err != nil {
		return nil, err
	}

	begin("starting containerd")
	if err := c.startContainerd(ctx, pause); err != nil {
		return nil, err
	}

	begin("starting the kubelet and kube-proxy")
	if err := c.startKubelet(pki); err != nil {
		return nil, err
	}
	if err := c.startKubeProxy(pki); err != nil {
		return nil, err
	}

	begin("waiting for the node to be Ready")
	if err := c.waitNode(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// path is a path in the node's folder.
func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

// preflight checks what the node needs before anything changes.
func preflight(assets string) error {
	if os.Geteuid() != 0 {
		return errors.New("a node needs root (network namespaces, mounts, cgroups)")
	}
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return fmt.Errorf("%s not found in %s: run `make node` (hack/build-control-plane.sh --node)", b, assets)
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ip", "nsenter", "iptables", "docker-registry"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err2 := os.Stat(filepath.Join("/usr/sbin", b)); err2 != nil {
				return fmt.Errorf("%s is not installed: run hack/install-node.sh (Debian's containerd, runc, containernetworking-plugins, docker-registry, iptables)", b)
			}
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			return fmt.Errorf("the CNI plugin %s is not in %s: run hack/install-node.sh (Debian's containernetworking-plugins)", p, cniBinDir)
		}
	}
	// The kubelet and runc make cgroups (v1, cgroupfs driver).
	probe := filepath.Join(cgroupRoot, "cpu", "scion-node-probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		return fmt.Errorf("no write access to the cgroup hierarchy %s (the kubelet and runc make cgroups there): %w", filepath.Dir(probe), err)
	}
	_ = os.Remove(probe)
	return nil
}

// cniBinDir is where Debian's containernetworking-plugins are.
const cniBinDir = "/usr/lib/cni"

// cgroupRoot is where the cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// takeLock takes the machine's node lock, or says who holds it.
func (c *Cluster) takeLock() error {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath)
		f.Close()
		return fmt.Errorf("another node runs on this machine (process %s): two cannot run at once", strings.TrimSpace(string(holder)))
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	c.lock = f
	return nil
}

// checkAddresses refuses to start when the node's addresses overlap a
// network this machine already routes.
func checkAddresses() error {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return fmt.Errorf("reading the routes (ip route): %w", err)
	}
	var ours []*net.IPNet
	for _, s := range []string{networkCIDR, PodCIDR, ServiceCIDR} {
		_, n, _ := net.ParseCIDR(s)
		ours = append(ours, n)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "default" || f[0] == "local" || f[0] == "broadcast" {
			continue
		}
		dst := f[0]
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		_, n, err := net.ParseCIDR(dst)
		if err != nil {
			continue
		}
		for _, o := range ours {
			if n.Contains(o.IP) || o.Contains(n.IP) {
				return fmt.Errorf("the node's network %s overlaps the route %q of this machine", o, strings.TrimSpace(line))
			}
		}
	}
	return nil
}

// makeNetwork makes the network namespace, the veth pair between it and
// the host, and its loopback.
func makeNetwork(ctx context.Context) error {
	steps := [][]string{
		{"ip", "netns", "add", Netns},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nodeVeth, "netns", Netns},
		{"ip", "addr", "add", HostIP + "/24", "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "-n", Netns, "addr", "add", NodeIP + "/24", "dev", nodeVeth},
		{"ip", "-n", Netns, "link", "set", nodeVeth, "up"},
		{"ip", "-n", Netns, "link", "set", "lo", "up"},
		// The node's default route points at the host, so that a Pod's
		// traffic has a way out to the test's servers (HostIP).
		{"ip", "-n", Netns, "route", "add", "default", "via", HostIP},
		// The test reaches Pods and Services as a machine on the node's
		// network would (these routes go with the veth pair).
		{"ip", "route", "add", PodCIDR, "via", NodeIP},
		{"ip", "route", "add", ServiceCIDR, "via", NodeIP},
	}
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// start starts a process of the cluster in the node's network namespace,
// its output in Dir/logs/NAME.log.
func (c *Cluster) start(name, bin string, args ...string) error {
	if err := os.MkdirAll(c.path("logs"), 0o755); err != nil {
		return err
	}
	logPath := c.path("logs", name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + Netns, "--", bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.Dir
	// Not the test's process group: a Ctrl-C reaches the test, whose
	// handler stops the node in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return nil
}

// exited says which process of the cluster has exited, with its log's
// last lines, or "" while all run.
func (c *Cluster) exited() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Sprintf("%s exited (%v); the end of %s:\n%s", p.name, p.err, p.log, tail(p.log, 15))
		default:
		}
	}
	return ""
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ok every half second until it is true, a process of the
// cluster exits, or the deadline; what it returns names what it waited
// for and the last error.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, ok func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = ok(); last == nil {
			return nil
		}
		if ex := c.exited(); ex != "" {
			return errors.New(ex)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s: %w", what, timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// makePKI makes the cluster's certificate authority, the API server's
// serving certificate, a client certificate and kubeconfig for each
// component and the administrator, and the service accounts' signing key.
// It returns the files by name.
func (c *Cluster) makePKI() (map[string]string, error) {
	dir := c.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	files := map[string]string{}
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		files[name] = p
		return os.WriteFile(p, data, 0o600)
	}
	ca, err := localca.New("scion-node-ca")
	if err != nil {
		return nil, err
	}
	if err := write("ca.crt", ca.PEM); err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue("kube-apiserver", 2, NodeIP, kubernetesIP, "127.0.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return nil, err
	}
	if err := errors.Join(write("apiserver.crt", cert), write("apiserver.key", key)); err != nil {
		return nil, err
	}
	// The service accounts' tokens are signed with this key.
	saKey, saPub, err := localca.SigningKey()
	if err != nil {
		return nil, err
	}
	if err := errors.Join(write("sa.key", saKey), write("sa.pub", saPub)); err != nil {
		return nil, err
	}
	users := []struct {
		file, name string
		groups     []string
	}{
		{"admin", "scion-node-admin", []string{"system:masters"}},
		{"apiserver-kubelet", "kube-apiserver-kubelet-client", []string{"system:masters"}},
		{"controller-manager", "system:kube-controller-manager", nil},
		{"scheduler", "system:kube-scheduler", nil},
		{"kubelet", "system:node:" + NodeName, []string{"system:nodes"}},
		{"kube-proxy", "system:kube-proxy", nil},
	}
	for i, u := range users {
		cert, key, err := ca.IssueClient(u.name, u.groups, int64(10+i))
		if err != nil {
			return nil, err
		}
		if err := errors.Join(write(u.file+".crt", cert), write(u.file+".key", key)); err != nil {
			return nil, err
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters["scion-node"] = &clientcmdapi.Cluster{Server: "https://" + NodeIP + ":" + apiPort, CertificateAuthorityData: ca.PEM}
		kc.AuthInfos[u.file] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
		kc.Contexts["scion-node"] = &clientcmdapi.Context{Cluster: "scion-node", AuthInfo: u.file}
		kc.CurrentContext = "scion-node"
		p := filepath.Join(dir, u.file+".kubeconfig")
		if err := clientcmd.WriteToFile(*kc, p); err != nil {
			return nil, err
		}
		files[u.file+".kubeconfig"] = p
	}
	c.Kubeconfig = files["admin.kubeconfig"]
	c.Kubectl = filepath.Join(c.o.Assets, "kubectl")
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c.Config = cfg
	return files, nil
}

// waitAPIServer waits for kube-apiserver's /readyz.
func (c *Cluster) waitAPIServer(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "kube-apiserver's /readyz", 2*time.Minute, func() error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

// waitNode waits for the Node to be Ready and the default namespace's
// ServiceAccount (made by kube-controller-manager) to exist.
func (c *Cluster) waitNode(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "the Node "+NodeName+" Ready and the default ServiceAccount", 3*time.Minute, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return fmt.Errorf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
				}
				ready = true
			}
		}
		if !ready {
			return errors.New("no Ready condition yet")
		}
		_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// watchSignals tears the node down when the test process is interrupted
// or terminated, then exits.
func (c *Cluster) watchSignals() {
	c.signals = make(chan os.Signal, 1)
	c.sigDone = make(chan struct{})
	signal.Notify(c.signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-c.signals:
			fmt.Fprintf(os.Stderr, "node: %v: tearing the node down\n", s)
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "node:", err)
			}
			os.Exit(2)
		case <-c.sigDone:
		}
	}()
}

// Stop stops every process of the cluster and its containers, and puts
// back what the node changed on the machine. It can be called more than
// once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	if c.sigDone != nil {
		signal.Stop(c.signals)
		close(c.sigDone)
	}
	var errs []error
	if c.st != nil {
		errs = append(errs, teardown(c.st, c.o.KeepDir))
	}
	// The processes were killed by teardown; reap them.
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("%s did not exit", p.name))
		}
	}
	if c.lock != nil {
		_ = c.lock.Close()
	}
	return errors.Join(errs...)
}

// Logs is the last lines of each component's log, for a failing test.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	entries, _ := os.ReadDir(c.path("logs"))
	for _, e := range entries {
		fmt.Fprintf(&b, "--- %s\n%s\n", e.Name(), tail(c.path("logs", e.Name()), n))
	}
	return b.String()
}

// writeJSON writes v as JSON to path, atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
