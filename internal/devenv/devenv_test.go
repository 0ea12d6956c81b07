package devenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// A supervisor started from a binary that was rebuilt since (go build
// writes a new file over the path) runs another build; one started from
// the file still at the path does not.
func TestRunsOtherBuild(t *testing.T) {
	g := NewWithT(t)
	sleep, err := exec.LookPath("sleep")
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(sleep)
	g.Expect(err).NotTo(HaveOccurred())
	exe := filepath.Join(t.TempDir(), "scion")
	g.Expect(os.WriteFile(exe, data, 0o755)).To(Succeed())
	cmd := exec.Command(exe, "60")
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	g.Expect(runsOtherBuild(cmd.Process.Pid, exe)).To(BeFalse(), "the same file")
	rebuilt := exe + ".new"
	g.Expect(os.WriteFile(rebuilt, data, 0o755)).To(Succeed())
	g.Expect(os.Rename(rebuilt, exe)).To(Succeed())
	g.Expect(runsOtherBuild(cmd.Process.Pid, exe)).To(BeTrue(), "rebuilt over the path")
	g.Expect(runsOtherBuild(1<<22, exe)).To(BeFalse(), "no such process")
}
