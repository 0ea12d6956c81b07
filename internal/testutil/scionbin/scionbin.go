// Package scionbin builds the scion command for tests that run it as a
// process of its own (replicas, restarts, Scion's API server apart from
// the controllers).
package scionbin

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build builds ./cmd/scion of this module into a temporary folder of tb
// and returns the binary's path.
func Build(tb testing.TB) string {
	tb.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		tb.Fatalf("finding this module (go env GOMOD): %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "scion")
	build := exec.Command("go", "build", "-o", bin, "./cmd/scion")
	build.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building scion: %v\n%s", err, out)
	}
	return bin
}
