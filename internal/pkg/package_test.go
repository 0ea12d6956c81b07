package pkg

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const deployment = `# the app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # name comment
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: app
          image: nginx:1.25
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  ports:
  - port: 80
`

func testPackage() *Package {
	return New(map[string][]byte{
		"Kptfile":          []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"app.yaml":         []byte(deployment),
		"README.md":        []byte("# App\n"),
		"values/data.yaml": []byte("just: data\nnot: krm\n"),
		"sub/Kptfile":      []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n"),
		"sub/cm.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n"),
	})
}

func TestPackage_resourcesRoundTrip(t *testing.T) {
	g := NewWithT(t)
	p := testPackage()
	nodes, err := p.Resources()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(3), "Deployment, Service and the subpackage ConfigMap; non-KRM YAML is left out")

	// Writing the same resources back changes nothing, byte for byte.
	q := p.DeepCopy()
	g.Expect(q.SetResources(nodes)).To(Succeed())
	g.Expect(q.Equal(p)).To(BeTrue())
}

func TestPackage_setResourcesEdits(t *testing.T) {
	g := NewWithT(t)
	p := testPackage()
	nodes, err := p.Resources()
	g.Expect(err).NotTo(HaveOccurred())

	// Edit the Deployment, drop the ConfigMap, add a Namespace.
	var kept []*yaml.RNode
	for _, n := range nodes {
		switch n.GetKind() {
		case "Deployment":
			g.Expect(n.PipeE(yaml.Lookup("spec"), yaml.SetField("replicas", yaml.NewScalarRNode("3")))).To(Succeed())
			kept = append(kept, n)
		case "ConfigMap":
		default:
			kept = append(kept, n)
		}
	}
	ns := yaml.MustParse("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant\n")
	kept = append(kept, ns)
	g.Expect(p.SetResources(kept)).To(Succeed())

	app, _ := p.File("app.yaml")
	g.Expect(string(app)).To(ContainSubstring("# the app"))
	g.Expect(string(app)).To(ContainSubstring("name: app # name comment"))
	g.Expect(string(app)).To(ContainSubstring("replicas: 3"))
	g.Expect(string(app)).To(ContainSubstring("        - name: app"), "sequence indentation is preserved")
	g.Expect(string(app)).NotTo(ContainSubstring("internal.config.kubernetes.io"))
	_, ok := p.File("sub/cm.yaml")
	g.Expect(ok).To(BeFalse(), "a resource file with no resources left is removed")
	nsFile, ok := p.File("namespace_tenant.yaml")
	g.Expect(ok).To(BeTrue())
	g.Expect(string(nsFile)).To(ContainSubstring("kind: Namespace"))
	data, _ := p.File("values/data.yaml")
	g.Expect(string(data)).To(Equal("just: data\nnot: krm\n"))
}

func TestPackage_dirRoundTrip(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	p := testPackage()
	g.Expect(os.MkdirAll(filepath.Join(dir, "stale/deep"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "stale/deep/x.yaml"), []byte("x: 1\n"), 0o644)).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(dir, ".git"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, ".git/HEAD"), []byte("ref\n"), 0o644)).To(Succeed())

	g.Expect(p.WriteDir(dir)).To(Succeed())
	_, err := os.Stat(filepath.Join(dir, "stale"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "files not in the package and their empty folders are removed")
	_, err = os.Stat(filepath.Join(dir, ".git/HEAD"))
	g.Expect(err).NotTo(HaveOccurred(), ".git is left alone")

	back, err := ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Equal(p)).To(BeTrue())
}

func TestValidPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a.yaml", true}, {"sub/a.yaml", true}, {"", false}, {"/etc/passwd", false},
		{"../x", false}, {"a/../b", false}, {"./a", false}, {"a//b", false}, {`a\b`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.ok {
				g.Expect(ValidPath(tc.name)).To(Succeed())
			} else {
				g.Expect(ValidPath(tc.name)).To(MatchError(ContainSubstring("invalid package file path")))
			}
		})
	}
}

func TestPackage_kptfile(t *testing.T) {
	g := NewWithT(t)
	p := testPackage()
	kf, err := p.Kptfile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.Metadata.Name).To(Equal("app"))
	_, err = New(nil).Kptfile()
	g.Expect(err).To(MatchError("package has no Kptfile"))
}

func TestValidatePackagePath(t *testing.T) {
	g := NewWithT(t)
	for _, p := range []string{"a", "team/app", "a-b_c.d/e"} {
		g.Expect(ValidatePackagePath(p)).To(Succeed(), p)
	}
	for _, p := range []string{"", "/a", "a/", "a//b", "../a", "../../escape", "a/.git", ".hidden", "a b", "a:b", "x.lock", "a/./b"} {
		g.Expect(ValidatePackagePath(p)).To(HaveOccurred(), p)
	}
}

func TestPackage_views(t *testing.T) {
	g := NewWithT(t)
	p := testPackage()
	views, err := p.Views()
	g.Expect(err).NotTo(HaveOccurred())
	nodes, err := p.Resources()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(views).To(HaveLen(len(nodes)))
	for i, n := range nodes {
		g.Expect(views[i].Placement).To(Equal(placementOf(n)), "resource %d", i)
		g.Expect(views[i].Node.GetAnnotations()).NotTo(HaveKey(kioutil.PathAnnotation))
		g.Expect(views[i].Node.MustString()).To(Equal(yaml.NewRNode(strippedDoc(n)).MustString()), "a view is the resource without its reader annotations")
	}

	// Views are shared, not copied: a second read (also by a DeepCopy of
	// the package) hands out the same nodes, and the reads above left the
	// package's bytes alone.
	again, err := p.DeepCopy().Views()
	g.Expect(err).NotTo(HaveOccurred())
	for i := range views {
		g.Expect(again[i].Node.YNode()).To(BeIdenticalTo(views[i].Node.YNode()))
	}
	g.Expect(p.Equal(testPackage())).To(BeTrue())
}

// A resource handed back as a bare mapping (as edits in place and
// functions often do) that equals its document keeps the file's bytes.
func TestPackage_setResourcesBareMapping(t *testing.T) {
	g := NewWithT(t)
	const odd = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k:    v   # spaced out\n"
	p := New(map[string][]byte{"cm.yaml": []byte(odd)})
	nodes, err := p.Resources()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes[0].Document().Kind).To(Equal(yaml.DocumentNode))
	bare := []*yaml.RNode{yaml.NewRNode(nodes[0].YNode())}
	g.Expect(p.SetResources(bare)).To(Succeed())
	got, _ := p.File("cm.yaml")
	g.Expect(string(got)).To(Equal(odd))
}

// Files whose names git and checkouts hold are accepted, dotfiles
// included; .git in any spelling, control and direction characters and
// names of spaces are not; a file cannot also be a folder.
func TestValidPath_whatGitHolds(t *testing.T) {
	g := NewWithT(t)
	for _, ok := range []string{"Kptfile", "a/b.yaml", ".gitignore", ".github/workflows/ci.yaml", "ünïcode/ß.yaml", "with space.yaml", "a.git/x"} {
		g.Expect(ValidPath(ok)).To(Succeed(), ok)
	}
	for bad, why := range map[string]string{
		".git/config": `".git" is git's own folder`, "x/.Git/hooks/pre-commit": `".Git" is git's own folder`, ".git /x": `".git " is git's own folder`,
		"a\x00b": "control character U+0000", "a\tb": "control character U+0009", "a\u202Eb": "control character U+202E", "a\u2066b": "control character U+2066",
		" ": "a name of only spaces", "a/  /b": "a name of only spaces", "bad\xffutf8": "not UTF-8", "../x": "invalid package file path",
	} {
		g.Expect(ValidPath(bad)).To(MatchError(ContainSubstring(why)), "%q", bad)
	}
	g.Expect(PathConflict([]string{"Kptfile", "Kptfile/x", "a.yaml"})).To(Equal("Kptfile is a file, and Kptfile/x puts a file inside it"))
	g.Expect(PathConflict([]string{"a/b/c", "a/b"})).To(Equal("a/b is a file, and a/b/c puts a file inside it"))
	g.Expect(PathConflict([]string{"Kptfile", "a/b", "a/c"})).To(BeEmpty())
}
