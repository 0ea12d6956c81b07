package engine

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

var update = flag.Bool("update", false, "rewrite the golden expected/ folders")

var testOrigin = Origin{Repo: "file:///catalog.git", Directory: "app", Ref: "app/v2", Commit: "2222222222222222222222222222222222222222"}

func readPkg(t *testing.T, dir string) *pkg.Package {
	t.Helper()
	p, err := pkg.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// viewsText prints a package's shared resource views and placements.
func viewsText(t *testing.T, p *pkg.Package) string {
	t.Helper()
	views, err := p.Views()
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, v := range views {
		fmt.Fprintf(&b, "--- %+v\n%s", v.Placement, v.Node.MustString())
	}
	return b.String()
}

func readOptional(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TestUpdate runs every case of testdata/update: <case>/{origin,updated,
// local} in, <case>/expected out (byte for byte), or the message of
// <case>/error.
func TestUpdate(t *testing.T) {
	cases, err := filepath.Glob("testdata/update/*")
	if err != nil || len(cases) < 25 {
		t.Fatalf("want at least 25 update cases, found %d (%v)", len(cases), err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			local := readPkg(t, filepath.Join(dir, "local"))
			before := local.DeepCopy()
			origin, updated := readPkg(t, filepath.Join(dir, "origin")), readPkg(t, filepath.Join(dir, "updated"))
			localViews, originViews, updatedViews := viewsText(t, local), viewsText(t, origin), viewsText(t, updated)
			out, changes, err := Update(local, origin, updated, testOrigin, kptfilev1.UpdateStrategy(readOptional(dir, "strategy")))
			g.Expect(local.Equal(before)).To(BeTrue(), "the local package is not modified")
			// All sides are read through shared views (the upstream cache
			// hands the same parse to every variant): not one node of them
			// may change.
			g.Expect(viewsText(t, local)).To(Equal(localViews), "the local package's shared resources are not modified")
			g.Expect(viewsText(t, origin)).To(Equal(originViews), "the origin's shared resources are not modified")
			g.Expect(viewsText(t, updated)).To(Equal(updatedViews), "the updated package's shared resources are not modified")
			if want := readOptional(dir, "error"); want != "" {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			expectedDir := filepath.Join(dir, "expected")
			if *update {
				g.Expect(os.RemoveAll(expectedDir)).To(Succeed())
				g.Expect(out.WriteDir(expectedDir)).To(Succeed())
				var lines []string
				for _, c := range changes {
					lines = append(lines, c.String())
				}
				g.Expect(os.WriteFile(filepath.Join(dir, "changes"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)).To(Succeed())
			}
			expected := readPkg(t, expectedDir)
			for _, name := range union(out.Files(), expected.Files()) {
				got, _ := out.File(name)
				want, ok := expected.File(name)
				g.Expect(ok).To(BeTrue(), "unexpected file %s:\n%s", name, got)
				g.Expect(string(got)).To(Equal(string(want)), "file %s", name)
			}
			var lines []string
			for _, c := range changes {
				lines = append(lines, c.String())
			}
			// Unsorted: the order is part of the output, and must not vary.
			g.Expect(strings.Join(lines, "\n") + "\n").To(Equal(readOptional(dir, "changes") + "\n"))
		})
	}
}

// Every strategy lists its changes in one order, run after run (map order
// must not leak into what a user reads).
func TestUpdate_deterministic(t *testing.T) {
	kf := []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	files := func(version string, names ...string) *pkg.Package {
		m := map[string][]byte{"Kptfile": kf}
		for _, n := range names {
			m[n] = []byte("# " + n + " " + version + "\n")
		}
		return pkg.New(m)
	}
	origin := files("v1", "a.md", "b.md", "c.md", "d.md", "e.md")
	local := files("v1", "a.md", "b.md", "c.md", "d.md", "e.md", "local-1.md", "local-2.md")
	updated := files("v2", "a.md", "b.md", "c.md", "f.md", "g.md", "h.md")
	for _, strategy := range []kptfilev1.UpdateStrategy{kptfilev1.ForceDeleteReplace, kptfilev1.CopyMerge, kptfilev1.ResourceMerge} {
		var first string
		for i := 0; i < 20; i++ {
			_, changes, err := Update(local, origin, updated, testOrigin, strategy)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, c := range changes {
				lines = append(lines, c.String())
			}
			got := strings.Join(lines, "\n")
			if i == 0 {
				first = got
			} else if got != first {
				t.Fatalf("%s: run %d listed\n%s\nafter\n%s", strategy, i, got, first)
			}
		}
	}
}
