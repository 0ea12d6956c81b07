package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/version"
)

func run(args ...string) (string, error) {
	out, _, err := runStreams(args...)
	return out, err
}

func TestVersion(t *testing.T) {
	g := NewWithT(t)
	out, err := run("version")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("scion " + version.Version))

	out, err = run("version", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var info version.Info
	g.Expect(json.Unmarshal([]byte(out), &info)).To(Succeed())
	g.Expect(info.Version).To(Equal(version.Version))
	g.Expect(info.GoVersion).To(HavePrefix("go"))

	_, err = run("version", "-o", "xml")
	g.Expect(err).To(MatchError(ContainSubstring(`--output must be empty or json, not "xml"`)))
}

// docs/reference/cli.md is the reference WriteReference generates.
func TestCLIReference(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b, NewRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "reference", "cli.md")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make docs)", err)
	}
	if string(want) != b.String() {
		t.Fatalf("%s is stale: run make docs", path)
	}
}

// The commands the demo prints work as printed: "scion" only when PATH
// finds this very binary, else its path.
func TestSelfCommand(t *testing.T) {
	g := NewWithT(t)
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	exe, err = filepath.EvalSymlinks(exe)
	g.Expect(err).NotTo(HaveOccurred())

	t.Setenv("PATH", t.TempDir())
	g.Expect(selfCommand()).To(Equal(exe), "not on PATH, outside the working directory: the absolute path")

	wd, _ := os.Getwd()
	g.Expect(os.Chdir(filepath.Dir(filepath.Dir(exe)))).To(Succeed())
	defer func() { _ = os.Chdir(wd) }()
	g.Expect(selfCommand()).To(Equal(filepath.Join(filepath.Base(filepath.Dir(exe)), filepath.Base(exe))), "below the working directory: relative, like bin/scion")

	onPath := t.TempDir()
	g.Expect(os.Symlink(exe, filepath.Join(onPath, "scion"))).To(Succeed())
	t.Setenv("PATH", onPath)
	g.Expect(selfCommand()).To(Equal("scion"))

	other := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(other, "scion"), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	t.Setenv("PATH", other)
	g.Expect(selfCommand()).NotTo(Equal("scion"), "another scion on PATH is not this one")
}
