package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// state is what the node changes on the machine outside its network
// namespace and folder, recorded before it changes (statePath).
type state struct {
	// Pid is the process that started the node.
	Pid int `json:"pid"`
	// Dir is the node's folder.
	Dir string `json:"dir"`
	// Sysctls are the kernel settings the kubelet sets, as they were.
	Sysctls map[string]string `json:"sysctls"`
	// Absent are paths the kubelet makes that did not exist.
	Absent []string `json:"absent"`
	// Cgroups are the cgroups at the top of each hierarchy, as they were.
	Cgroups map[string][]string `json:"cgroups"`
}

// kubeletSysctls are the machine-wide kernel settings the kubelet sets
// (its setupKernelTunables); the network ones kube-proxy and the CNI
// plugins set are the network namespace's own.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// kubeletPaths are paths outside --root-dir the kubelet writes.
var kubeletPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods"}

// record writes the state of the machine the node will change.
func record(dir string) (*state, error) {
	st := &state{Pid: os.Getpid(), Dir: dir, Sysctls: map[string]string{}, Cgroups: map[string][]string{}}
	for _, s := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			continue // not on this kernel: the kubelet cannot set it either
		}
		st.Sysctls[s] = strings.TrimSpace(string(b))
	}
	for _, p := range kubeletPaths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			st.Absent = append(st.Absent, p)
		}
	}
	hierarchies, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", cgroupRoot, err)
	}
	for _, h := range hierarchies {
		if !h.IsDir() {
			continue
		}
		st.Cgroups[h.Name()] = subdirs(filepath.Join(cgroupRoot, h.Name()))
	}
	return st, writeJSON(statePath, st)
}

// subdirs lists the folders in dir.
func subdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Sweep tears down a node whose process died before it could (the state
// file is there and no process holds the lock): what `make test-cluster`
// runs after its tests, whatever their end. It says what it did on w.
func Sweep(w io.Writer) error {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath)
		return fmt.Errorf("a node is running (process %s): stop it first", strings.TrimSpace(string(holder)))
	}
	return sweep(w)
}

// sweep is Sweep with the lock held.
func sweep(w io.Writer) error {
	b, err := os.ReadFile(statePath)
	if errors.Is(err, os.ErrNotExist) {
		if netnsExists() {
			// A namespace without a record: tear down what is in it.
			if w != nil {
				fmt.Fprintf(w, "node: tearing down the network namespace %s left without a record\n", Netns)
			}
			return teardown(&state{}, false)
		}
		return nil
	}
	if err != nil {
		return err
	}
	st := &state{}
	if err := json.Unmarshal(b, st); err != nil {
		return fmt.Errorf("reading %s: %w", statePath, err)
	}
	if w != nil {
		fmt.Fprintf(w, "node: tearing down the node process %d left (%s)\n", st.Pid, st.Dir)
	}
	return teardown(st, false)
}

// netnsExists says whether the node's network namespace is there.
func netnsExists() bool {
	_, err := os.Stat("/run/netns/" + Netns)
	return err == nil
}

// teardown stops the containers and every process in the node's network
// namespace, unmounts what is mounted under its folder, deletes the
// namespace (its interfaces, routes and iptables chains with it), and puts
// back the machine-wide state st recorded. Each step runs whatever the
// ones before did; the errors are joined.
func teardown(st *state, keepDir bool) error {
	var errs []error
	// First what makes containers (the kubelet, containerd and its
	// shims: every process in the node's namespace), so that none is
	// made again; then the containers, whose processes are in the Pods'
	// namespaces (runc needs only its state folder); then the node's
	// namespace again, for the containers of hostNetwork Pods.
	errs = append(errs, killNetnsProcesses())
	if st.Dir != "" {
		errs = append(errs, killContainers(filepath.Join(st.Dir, "runc")))
	}
	errs = append(errs, killNetnsProcesses())
	if st.Dir != "" {
		errs = append(errs, unmountUnder(st.Dir))
	}
	if netnsExists() {
		if out, err := exec.Command("ip", "netns", "delete", Netns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns delete %s: %w: %s", Netns, err, out))
		}
	}
	// The host's end of the pair goes with the node's, once the kernel
	// has let go of the namespace (a moment after it is deleted): wait
	// for it, then delete it if it is still there.
	linkThere := func() bool { return exec.Command("ip", "link", "show", hostVeth).Run() == nil }
	for deadline := time.Now().Add(10 * time.Second); linkThere() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if linkThere() {
		if out, err := exec.Command("ip", "link", "delete", hostVeth).CombinedOutput(); err != nil && linkThere() {
			errs = append(errs, fmt.Errorf("ip link delete %s: %w: %s", hostVeth, err, out))
		}
	}
	for name, v := range st.Sysctls {
		if err := os.WriteFile("/proc/sys/"+name, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("putting back %s=%s: %w", strings.ReplaceAll(name, "/", "."), v, err))
		}
	}
	for _, p := range st.Absent {
		errs = append(errs, unmountUnder(p))
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	for h, before := range st.Cgroups {
		errs = append(errs, removeNewCgroups(filepath.Join(cgroupRoot, h), before))
	}
	if st.Dir != "" && !keepDir {
		if err := os.RemoveAll(st.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing the node down: %w", err)
	}
	if err := os.Remove(statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// killContainers kills and deletes every container runc knows under
// root (one folder per containerd namespace).
func killContainers(root string) error {
	var errs []error
	for _, ns := range subdirs(root) {
		r := filepath.Join(root, ns)
		out, err := exec.Command("runc", "--root", r, "list", "-q").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("runc --root %s list: %w", r, err))
			continue
		}
		for _, id := range strings.Fields(string(out)) {
			if b, err := exec.Command("runc", "--root", r, "delete", "--force", id).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("runc delete --force %s: %w: %s", id, err, b))
			}
		}
	}
	return errors.Join(errs...)
}

// killNetnsProcesses ends every process in the node's network namespace:
// TERM, then KILL after five seconds.
func killNetnsProcesses() error {
	if !netnsExists() {
		return nil
	}
	pids := func() []int {
		out, _ := exec.Command("ip", "netns", "pids", Netns).Output()
		var ps []int
		for _, f := range strings.Fields(string(out)) {
			if p, err := strconv.Atoi(f); err == nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	for _, p := range pids() {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(pids()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range pids() {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(pids()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v in %s did not end", pids(), Netns)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// unmountUnder unmounts every mount at or under dir, deepest first
// (lazily: what still holds one lets go when it ends).
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeNewCgroups removes the cgroups under hierarchy that were not
// there before (before: its top folders then), children first.
func removeNewCgroups(hierarchy string, before []string) error {
	had := map[string]bool{}
	for _, b := range before {
		had[b] = true
	}
	var errs []error
	for _, d := range subdirs(hierarchy) {
		if had[d] {
			continue
		}
		errs = append(errs, removeCgroup(filepath.Join(hierarchy, d)))
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup and its children (a cgroup folder is
// removed with rmdir, once it has no children and no processes). A
// process still in it is the node's (a container whose runc state was
// lost): it is killed first.
func removeCgroup(dir string) error {
	for _, d := range subdirs(dir) {
		if err := removeCgroup(filepath.Join(dir, d)); err != nil {
			return err
		}
	}
	var err error
	for try := 0; try < 50; try++ {
		if b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, aerr := strconv.Atoi(f); aerr == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing the cgroup %s: %w", dir, err)
}
