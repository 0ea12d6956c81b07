package pkgdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
)

const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"

func deployment(replicas int) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: example\nspec:\n  replicas: " + strconv.Itoa(replicas) + "\n"
}

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"

// A reviewer sees each resource by identity: a changed field as one
// removed and one added line, a resource moved to another file as moved
// (or modified, naming both files), the Kptfile apart, a renamed file as
// renamed.
func TestCompute(t *testing.T) {
	g := NewWithT(t)
	before := pkg.New(map[string][]byte{
		"Kptfile":   []byte(kptfile),
		"app.yaml":  []byte(deployment(1) + "---\n" + configMap),
		"gone.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: old\n"),
		"README.md": []byte("# app\n"),
	})
	after := pkg.New(map[string][]byte{
		"Kptfile":        []byte(kptfile + "info:\n  description: the app\n"),
		"deploy.yaml":    []byte(deployment(3)),
		"settings.yaml":  []byte(configMap),
		"service.yaml":   []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: example\n"),
		"docs/README.md": []byte("# app\n"),
	})
	d, err := Compute(before, after)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Kptfiles).To(HaveLen(1))
	g.Expect(d.Kptfiles[0].Diff).To(ContainSubstring("+info:\n+  description: the app\n"))
	byID := map[string]Resource{}
	for _, r := range d.Resources {
		byID[r.ID()] = r
	}
	g.Expect(byID).To(HaveLen(4))
	dep := byID["apps/v1/Deployment/example/app"]
	g.Expect(dep.Action).To(Equal(Modified))
	g.Expect(dep.FromPath).To(Equal("app.yaml"))
	g.Expect(dep.Path).To(Equal("deploy.yaml"))
	g.Expect(dep.Diff).To(ContainSubstring("-  replicas: 1\n+  replicas: 3\n"))
	g.Expect(byID["v1/ConfigMap/settings"]).To(Equal(Resource{APIVersion: "v1", Kind: "ConfigMap", Name: "settings", Action: Moved, Path: "settings.yaml", FromPath: "app.yaml"}))
	g.Expect(byID["v1/Service/example/app"].Action).To(Equal(Added))
	g.Expect(byID["v1/Secret/old"].Action).To(Equal(Deleted))
	g.Expect(byID["v1/Secret/old"].Diff).To(ContainSubstring("-kind: Secret"))
	g.Expect(d.Files).To(Equal([]File{{Path: "docs/README.md", FromPath: "README.md", Action: Renamed}}))

	var out bytes.Buffer
	g.Expect(d.WriteUnified(&out)).To(Succeed())
	g.Expect(out.String()).To(HavePrefix("modified Kptfile\n--- a/Kptfile\n+++ b/Kptfile\n"))
	g.Expect(out.String()).To(ContainSubstring("modified apps/v1/Deployment/example/app (app.yaml -> deploy.yaml)\n--- a/apps/v1/Deployment/example/app\n+++ b/apps/v1/Deployment/example/app\n@@"))
	g.Expect(out.String()).To(ContainSubstring("moved v1/ConfigMap/settings (app.yaml -> settings.yaml)\n"))
	g.Expect(out.String()).To(HaveSuffix("renamed README.md -> docs/README.md\n"))
	out.Reset()
	g.Expect(d.WriteStat(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("modified  apps/v1/Deployment/example/app | -1 +1\n"))
	g.Expect(out.String()).To(HaveSuffix("1 Kptfile(s), 4 resource(s), 1 file(s) changed; 5 line(s) removed, 8 added\n"))
}

// A first revision is all added; equal packages change nothing; the
// same change made to two different packages has one digest (what
// grouping compares), another change another.
func TestCompute_firstEqualDigest(t *testing.T) {
	g := NewWithT(t)
	a := pkg.New(map[string][]byte{"Kptfile": []byte(kptfile), "app.yaml": []byte(deployment(1))})
	d, err := Compute(nil, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Resources).To(ConsistOf(HaveField("Action", Added)))
	g.Expect(d.Kptfiles).To(ConsistOf(HaveField("Action", Added)))
	same, err := Compute(a, a.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same.Empty()).To(BeTrue())
	var out bytes.Buffer
	g.Expect(same.WriteUnified(&out)).To(Succeed())
	g.Expect(out.String()).To(Equal("no changes\n"))

	bump := func(extra string, from, to int) *Diff {
		x := pkg.New(map[string][]byte{"Kptfile": []byte(kptfile), "app.yaml": []byte(deployment(from)), "notes.md": []byte(extra)})
		y := pkg.New(map[string][]byte{"Kptfile": []byte(kptfile), "app.yaml": []byte(deployment(to)), "notes.md": []byte(extra)})
		d, err := Compute(x, y)
		g.Expect(err).NotTo(HaveOccurred())
		return d
	}
	g.Expect(bump("cluster-01", 1, 3).Digest()).To(Equal(bump("cluster-02", 1, 3).Digest()), "what differs but did not change is not part of the change")
	g.Expect(bump("cluster-01", 1, 3).Digest()).NotTo(Equal(bump("cluster-01", 2, 3).Digest()))
	data, err := json.Marshal(bump("x", 1, 3))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal(`{"resources":[{"apiVersion":"apps/v1","kind":"Deployment","namespace":"example","name":"app","action":"modified","path":"app.yaml","diff":"@@ -4,4 +4,4 @@\n   name: app\n   namespace: example\n spec:\n-  replicas: 1\n+  replicas: 3\n"}]}`))
}

// The hunks of a unified diff, applied to the old text, give the new one:
// checked on random edits of a long file (changes near and far apart,
// at the start and the end).
func TestUnified_applies(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 300; round++ {
		var before []string
		for i := 0; i < 1+r.Intn(60); i++ {
			before = append(before, fmt.Sprintf("line %d", r.Intn(20)))
		}
		after := append([]string(nil), before...)
		for e := 0; e < 1+r.Intn(6); e++ {
			i := r.Intn(len(after) + 1)
			switch r.Intn(3) {
			case 0:
				after = append(after[:i], append([]string{fmt.Sprintf("new %d", r.Intn(5))}, after[i:]...)...)
			case 1:
				if i < len(after) {
					after = append(after[:i], after[i+1:]...)
				}
			default:
				if i < len(after) {
					after[i] = "changed " + after[i]
				}
			}
		}
		b, a := strings.Join(before, "\n")+"\n", strings.Join(after, "\n")+"\n"
		if len(after) == 0 {
			a = ""
		}
		got, err := apply(b, unified(b, a))
		if err != nil || got != a {
			t.Fatalf("round %d: applying\n%s\nto\n%q\ngave\n%q (%v), want\n%q", round, unified(b, a), b, got, err, a)
		}
	}
}

// apply applies unified hunks to text, checking every context and
// removed line and every line number.
func apply(text, hunks string) (string, error) {
	old := splitLines(text)
	if text == "" {
		old = nil
	}
	var out []string
	next := 0 // index in old of the next line not yet copied
	lines := strings.Split(strings.TrimSuffix(hunks, "\n"), "\n")
	if hunks == "" {
		lines = nil
	}
	for i := 0; i < len(lines); {
		h := lines[i]
		f := strings.Fields(h)
		if len(f) != 4 || f[0] != "@@" || f[3] != "@@" {
			return "", fmt.Errorf("bad hunk header %q", h)
		}
		oStart, oCount := hunkRange(f[1][1:])
		nStart, nCount := hunkRange(f[2][1:])
		startOld := oStart - 1
		if oCount == 0 {
			startOld = oStart // an empty range names the line before
		}
		if startOld < next {
			return "", fmt.Errorf("hunk %q overlaps", h)
		}
		out = append(out, old[next:startOld]...)
		if want := nStart - 1; nCount == 0 && len(out) != nStart || nCount > 0 && len(out) != want {
			return "", fmt.Errorf("hunk %q: new text at line %d, header says %d", h, len(out)+1, nStart)
		}
		next = startOld
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			switch l[0] {
			case ' ', '-':
				if next >= len(old) || old[next] != l[1:] {
					return "", fmt.Errorf("hunk %q: line %d is not %q", h, next+1, l[1:])
				}
				next++
				if l[0] == ' ' {
					out = append(out, l[1:])
				}
			case '+':
				out = append(out, l[1:])
			}
		}
	}
	out = append(out, old[next:]...)
	if len(out) == 0 {
		return "", nil
	}
	return strings.Join(out, "\n") + "\n", nil
}

// hunkRange parses start[,count] (count 1 when left out).
func hunkRange(s string) (int, int) {
	start, count, found := strings.Cut(s, ",")
	a, _ := strconv.Atoi(start)
	if !found {
		return a, 1
	}
	b, _ := strconv.Atoi(count)
	return a, b
}
