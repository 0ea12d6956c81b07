package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
)

// A test process started with GOMEMLIMIT keeps its limit, and what it
// starts (kube-apiserver, etcd) does not inherit it. The test runs itself
// as that process.
func TestInit_runtimeSettingsStayWithTheTestProcess(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
			t.Fatalf("GOMEMLIMIT=%s would reach the control plane", v)
		}
		if got := debug.SetMemoryLimit(-1); got != 123<<20 {
			t.Fatalf("the test process's memory limit is %d, want %d", got, 123<<20)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInit_runtimeSettingsStayWithTheTestProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "GOMEMLIMIT=123MiB")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// Scion's API server in a process of its own (as installed, and as the
// scale benchmark runs it): it serves Porch's API through the APIService;
// killed, Porch's API is unavailable (it was that process serving, not
// this one); Stop returns, and no process is left behind.
func TestStartWith_apiServerInAProcessOfItsOwn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := scionbin.Build(t)
	e, err := StartWith(Options{APIServerBinary: bin})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	defer func() {
		if !stopped {
			_ = e.Stop()
		}
	}()
	pid := e.APIServerPid()
	g.Expect(pid).NotTo(BeZero())
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(comm))).To(Equal("scion"))
	g.Expect(e.Client.List(ctx, &porchv1alpha1.PackageRevisionList{}, client.InNamespace("default"))).To(Succeed())
	g.Expect(PeakResidentOf(strconv.Itoa(pid))).To(BeNumerically(">", 0))

	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsServiceUnavailable(e.Client.List(ctx, &porchv1alpha1.PackageRevisionList{}, client.InNamespace("default")))
	}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "Porch's API still served after its process was killed")
	stopped = true
	g.Expect(e.Stop()).To(Succeed())
	_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the API server's process is still there (not reaped)")
}

// Limits are the in-process server's: refused for a process of its own
// rather than silently dropped.
func TestStartWith_limitsNeedTheServerInProcess(t *testing.T) {
	_, err := StartWith(Options{APIServerBinary: "/nonexistent/scion", Limits: store.Limits{PackageBytes: 1}})
	if err == nil || !strings.Contains(err.Error(), "Limits cannot be given") {
		t.Fatalf("StartWith = %v, want the Limits refused", err)
	}
}
