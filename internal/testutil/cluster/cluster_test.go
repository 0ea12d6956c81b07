package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// helperEnv makes the test binary a node's process (TestMain): it starts
// a node, says so on stdout, and waits to be signalled.
const helperEnv = "SCION_NODE_HELPER_ASSETS"

func TestMain(m *testing.M) {
	if assets := os.Getenv(helperEnv); assets != "" {
		c, err := Start(context.Background(), Options{Assets: assets})
		if err != nil {
			fmt.Println("node failed:", err)
			os.Exit(1)
		}
		fmt.Println("node up", c.Dir)
		select {} // until a signal: Start's handler tears down and exits
	}
	code := m.Run()
	// A test that failed half-way may have left a node: tear it down.
	if err := Sweep(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// assets is the control plane's and node's binaries (make node).
func assets(t *testing.T) string {
	t.Helper()
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a
	}
	a, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// machine is what a node changes on the machine, read at one moment.
type machine struct {
	sysctls  map[string]string
	paths    map[string]bool
	netns    bool
	hostVeth bool
	state    bool
	cgroups  map[string]string
}

func readMachine(t *testing.T) machine {
	t.Helper()
	m := machine{sysctls: map[string]string{}, paths: map[string]bool{}, cgroups: map[string]string{}}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			m.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	for _, p := range kubeletPaths {
		_, err := os.Stat(p)
		m.paths[p] = err == nil
	}
	m.netns = netnsExists()
	m.hostVeth = exec.Command("ip", "link", "show", hostVeth).Run() == nil
	_, err := os.Stat(statePath)
	m.state = err == nil
	for _, h := range subdirs(cgroupRoot) {
		m.cgroups[h] = strings.Join(subdirs(filepath.Join(cgroupRoot, h)), ",")
	}
	return m
}

// expectPutBack checks that the machine is as it was before a node, and
// that nothing of the node's folder is left.
func expectPutBack(t *testing.T, before machine, dir string) {
	t.Helper()
	g := NewWithT(t)
	after := readMachine(t)
	g.Expect(after.netns).To(BeFalse(), "the network namespace %s is gone", Netns)
	g.Expect(after.hostVeth).To(BeFalse(), "the host's veth %s is gone", hostVeth)
	g.Expect(after.state).To(BeFalse(), "%s is removed", statePath)
	g.Expect(after.sysctls).To(Equal(before.sysctls), "the kernel settings are put back")
	g.Expect(after.paths).To(Equal(before.paths), "the kubelet's paths are as they were")
	g.Expect(after.cgroups).To(Equal(before.cgroups), "no cgroup is left")
	if dir != "" {
		g.Expect(dir).NotTo(BeAnExistingFile(), "the node's folder is removed")
		out, _ := exec.Command("pgrep", "-f", dir).Output()
		g.Expect(strings.TrimSpace(string(out))).To(BeEmpty(), "no process of the node runs")
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		g.Expect(string(mounts)).NotTo(ContainSubstring(dir), "nothing is mounted under the node's folder")
	}
}

// A machine without the binaries: the step and the missing binary are
// named, and nothing is touched.
func TestStart_missingBinary(t *testing.T) {
	g := NewWithT(t)
	before := readMachine(t)
	_, err := Start(context.Background(), Options{Assets: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("starting the node: checking the machine: etcd not found in")))
	g.Expect(err).To(MatchError(ContainSubstring("make node")))
	expectPutBack(t, before, "")
}

// A machine without containerd: named, with what installs it.
func TestStart_missingContainerd(t *testing.T) {
	g := NewWithT(t)
	if _, err := os.Stat("/usr/sbin/containerd"); err == nil {
		t.Fatal("this test hides containerd by PATH: it must not be in /usr/sbin")
	}
	t.Setenv("PATH", t.TempDir())
	before := readMachine(t)
	_, err := Start(context.Background(), Options{Assets: assets(t)})
	g.Expect(err).To(MatchError("starting the node: checking the machine: containerd is not installed: run hack/install-node.sh (Debian's containerd, runc, containernetworking-plugins, docker-registry, iptables)"))
	expectPutBack(t, before, "")
}

// Two nodes never run at once: the second is refused, naming the first,
// before it changes anything.
func TestStart_lockHeld(t *testing.T) {
	g := NewWithT(t)
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	g.Expect(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)).To(Succeed(), "no other node runs during this test")
	g.Expect(f.Truncate(0)).To(Succeed())
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	before := readMachine(t)
	_, err = Start(context.Background(), Options{Assets: assets(t)})
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("another node runs on this machine (process %d)", os.Getpid()))))
	expectPutBack(t, before, "")
}

// A node whose kubelet cannot start: the error names the step and shows
// the kubelet's log; everything started before it is torn down.
func TestStart_failingStepLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	real := assets(t)
	fake := t.TempDir()
	for _, b := range Binaries {
		g.Expect(os.Symlink(filepath.Join(real, b), filepath.Join(fake, b))).To(Succeed())
	}
	g.Expect(os.Remove(filepath.Join(fake, "kubelet"))).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(fake, "kubelet"), []byte("#!/bin/sh\necho 'kubelet: no access to the cgroups (a test of a failing start)' >&2\nexit 1\n"), 0o755)).To(Succeed())
	before := readMachine(t)
	c, err := Start(context.Background(), Options{Assets: fake})
	g.Expect(c).To(BeNil())
	g.Expect(err).To(MatchError(MatchRegexp(`starting the node: (starting the kubelet and kube-proxy|waiting for the node to be Ready): .*kubelet exited`)))
	g.Expect(err).To(MatchError(ContainSubstring("kubelet: no access to the cgroups (a test of a failing start)")))
	dir := regexpDir(err.Error())
	g.Expect(dir).NotTo(BeEmpty(), "the error names the kubelet's log: %v", err)
	expectPutBack(t, before, dir)
}

// regexpDir is the node's folder in a message naming one of its logs.
func regexpDir(msg string) string {
	i := strings.Index(msg, "/scion-node-")
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(msg[:i], " ") + 1
	rest := msg[start:]
	end := strings.Index(rest, "/logs/")
	if end < 0 {
		return ""
	}
	return rest[:end]
}

// startHelper runs a node in a process of its own and waits until it is
// up; it returns the process and the node's folder.
func startHelper(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+assets(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		dir, ok := strings.CutPrefix(line, "node up ")
		if !ok {
			_ = cmd.Process.Kill()
			t.Fatalf("the node did not start: %s", line)
		}
		go func() {
			for range lines {
			}
		}()
		return cmd, dir
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the node did not start within 5m")
	}
	return nil, ""
}

// Interrupted (Ctrl-C, or CI ending the run): the node is torn down before
// the process exits.
func TestStart_interruptTearsDown(t *testing.T) {
	g := NewWithT(t)
	before := readMachine(t)
	cmd, dir := startHelper(t)
	g.Expect(readMachine(t).netns).To(BeTrue(), "the node runs")
	g.Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
	err := cmd.Wait()
	var exit *exec.ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue(), "the process exits with an error: %v", err)
	g.Expect(exit.ExitCode()).To(Equal(2))
	expectPutBack(t, before, dir)
}

// Killed outright (SIGKILL: no handler runs): Sweep tears down what the
// node left, as make test-cluster runs it after its tests.
func TestSweep_afterKill(t *testing.T) {
	g := NewWithT(t)
	before := readMachine(t)
	cmd, dir := startHelper(t)
	g.Expect(cmd.Process.Kill()).To(Succeed())
	_ = cmd.Wait()
	after := readMachine(t)
	g.Expect(after.netns).To(BeTrue(), "a killed node leaves its namespace")
	g.Expect(after.state).To(BeTrue(), "and its record")
	var out strings.Builder
	g.Expect(Sweep(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("tearing down the node process"))
	expectPutBack(t, before, dir)
	// Nothing left: a second sweep has nothing to do.
	out.Reset()
	g.Expect(Sweep(&out)).To(Succeed())
	g.Expect(out.String()).To(BeEmpty())
}
