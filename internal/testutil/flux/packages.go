package flux

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-dev/scion/internal/cli"
)

// Packages writes package revisions as a person does, with the scion CLI
// against the cluster Kubeconfig reaches, in Namespace: what a test
// deploys with Flux.
type Packages struct {
	Kubeconfig, Namespace string
}

// Scion runs the scion CLI with the kubeconfig and namespace, and returns
// what it printed.
func (p Packages) Scion(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append(args, "--kubeconfig", p.Kubeconfig, "-n", p.Namespace))
	err := cmd.Execute()
	return out.String(), err
}

// Propose writes files (and nothing else but the Kptfile) into a new
// draft of pkg in repo, a copy of the revision from (a new package when
// from is empty), and proposes it.
func (p Packages) Propose(t testing.TB, repo, pkg, ws string, files map[string]string, from string) {
	t.Helper()
	run := func(args ...string) {
		t.Helper()
		if out, err := p.Scion(args...); err != nil {
			t.Fatalf("scion %v: %v\n%s", args, err, out)
		}
	}
	name := repo + "." + pkg + "." + ws
	if from == "" {
		run("rpkg", "init", pkg, "--repository", repo, "--workspace", ws)
	} else {
		run("rpkg", "copy", from, "--workspace", ws)
	}
	dir := filepath.Join(t.TempDir(), pkg)
	run("rpkg", "pull", name, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "Kptfile" && strings.HasSuffix(e.Name(), ".yaml") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("rpkg", "push", name, dir)
	run("rpkg", "propose", name)
}

// Publish is Propose, then an approval.
func (p Packages) Publish(t testing.TB, repo, pkg, ws string, files map[string]string, from string) {
	t.Helper()
	p.Propose(t, repo, pkg, ws, files, from)
	if out, err := p.Scion("rpkg", "approve", repo+"."+pkg+"."+ws); err != nil {
		t.Fatalf("approving %s.%s.%s: %v\n%s", repo, pkg, ws, err, out)
	}
}
