package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/scion-dev/scion/internal/devenv"
	"github.com/scion-dev/scion/internal/image"
)

// startRegistry runs docker-registry in the node's network namespace on
// RegistryHost, over plain HTTP: the node pulls from it, the test pushes
// to it through the veth pair.
func (c *Cluster) startRegistry(ctx context.Context) error {
	dir := c.path("registry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, err := devenv.WriteRegistryConfig(dir, "0.0.0.0:5000")
	if err != nil {
		return err
	}
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return err
	}
	if err := c.start("registry", bin, "serve", cfg); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return c.waitFor(ctx, "the registry at "+RegistryHost, time.Minute, func() error {
		resp, err := hc.Get("http://" + RegistryHost + "/v2/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		return nil
	})
}

// PushImage pushes img to the node's registry as repo:tag and returns
// its reference by digest, as Pods name it.
func (c *Cluster) PushImage(img v1.Image, repoTag string) (string, error) {
	return image.Push(img, RegistryHost+"/"+repoTag, true)
}

// pushPause builds the sandbox image (the pause command of this module)
// and pushes it to the node's registry.
func (c *Cluster) pushPause(ctx context.Context) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		return "", fmt.Errorf("finding this module (go env GOMOD): %v", err)
	}
	bin := c.path("pause")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./internal/testutil/cluster/pause")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the pause command: %w\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	img, err := image.Build([]image.File{{Path: "pause", Mode: 0o755, Data: data}},
		v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"})
	if err != nil {
		return "", err
	}
	// By tag: containerd's sandbox_image is a tag it pulls when missing.
	ref := PauseImage
	if _, err := image.Push(img, ref, true); err != nil {
		return "", err
	}
	return ref, nil
}

// startContainerd writes containerd's configuration (everything under the
// node's folder: root, state, socket, runc's state; the sandbox image and
// a plain-HTTP mirror for the node's registry; Debian's runc with the
// cgroupfs driver; restrict_oom_score_adj, since this machine lets no
// process lower its OOM score) and the bridge network, and starts it.
func (c *Cluster) startContainerd(ctx context.Context, pause string) error {
	dir := c.path("containerd")
	for _, d := range []string{dir, c.path("cni", "net.d"), c.path("cni", "ipam")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	runcPath, err := exec.LookPath("runc")
	if err != nil {
		runcPath = "/usr/sbin/runc"
	}
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = %[7]q
        Root = %[8]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[9]q
    conf_dir = %[10]q
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[11]q]
    endpoint = ["http://%[11]s"]
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.containerdSocket(), c.containerdSocket()+".ttrpc",
		filepath.Join(dir, "opt"), pause, runcPath, c.path("runc"), cniBinDir, c.path("cni", "net.d"), RegistryHost)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	// The Pods' network: a bridge in the node's namespace, addresses from
	// PodCIDR, traffic to the host masqueraded as the node's.
	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "scion-node",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": true,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": %q
    }
  }]
}
`, PodCIDR, c.path("cni", "ipam"))
	if err := os.WriteFile(c.path("cni", "net.d", "10-scion-node.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	if err := c.start("containerd", bin, "--config", cfgPath); err != nil {
		return err
	}
	return c.waitFor(ctx, "containerd's socket", time.Minute, func() error {
		conn, err := net.Dial("unix", c.containerdSocket())
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// containerdSocket is containerd's socket.
func (c *Cluster) containerdSocket() string { return c.path("containerd", "containerd.sock") }

// startKubelet writes the kubelet's configuration and starts it: cgroup
// v1 with the cgroupfs driver and no QoS cgroups, no node allocatable
// enforcement or eviction (the machine is the test's), webhook
// authentication and authorization, its root and the Pods' logs under
// the node's folder.
func (c *Cluster) startKubelet(pki map[string]string) error {
	dir := c.path("kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
protectKernelDefaults: false
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
resolvConf: ""
clusterDomain: cluster.local
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
serializeImagePulls: false
registerNode: true
`, pki["ca.crt"], c.containerdSocket(), c.path("pod-logs"), NodeIP)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	return c.start("kubelet", filepath.Join(c.o.Assets, "kubelet"),
		"--config="+cfgPath, "--kubeconfig="+pki["kubelet.kubeconfig"],
		"--root-dir="+filepath.Join(dir, "root"), "--cert-dir="+filepath.Join(dir, "pki"),
		"--hostname-override="+NodeName, "--node-ip="+NodeIP)
}

// startKubeProxy starts kube-proxy in iptables mode, in the node's
// network namespace, leaving the machine-wide conntrack settings alone.
func (c *Cluster) startKubeProxy(pki map[string]string) error {
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %q
hostnameOverride: %s
clusterCIDR: %s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, pki["kube-proxy.kubeconfig"], NodeName, PodCIDR)
	cfgPath := c.path("kube-proxy.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	return c.start("kube-proxy", filepath.Join(c.o.Assets, "kube-proxy"), "--config="+cfgPath)
}

// KillContainer kills a container's processes with SIGKILL, as a crash
// would (no handler runs): id as a Pod's status names it
// (containerd://ID). The kubelet restarts it per the Pod's policy.
func (c *Cluster) KillContainer(id string) error {
	id = strings.TrimPrefix(id, "containerd://")
	if out, err := exec.Command("runc", "--root", c.path("runc", "k8s.io"), "kill", "--all", id, "KILL").CombinedOutput(); err != nil {
		return fmt.Errorf("runc kill %s: %w: %s", id, err, out)
	}
	return nil
}
