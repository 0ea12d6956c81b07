package testenv

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
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
