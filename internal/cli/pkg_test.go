package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files")

// runIn runs scion with args in dir and returns stdout and the error.
func runIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	out, _, err := runStreamsIn(t, dir, args...)
	return out, err
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	NewWithT(t).Expect(got).To(Equal(string(want)))
}

func writePkg(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	m := map[string][]byte{}
	for k, v := range files {
		m[k] = []byte(v)
	}
	if err := pkg.New(m).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
}

const cliKptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\ninfo:\n  description: the app\n"

func cliDeployment(replicas, image string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: " + replicas + "\n  template:\n    spec:\n      containers:\n      - name: app\n        image: " + image + "\n"
}

func TestPkgCloneAndUpdate(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writePkg(t, filepath.Join(dir, "v1"), map[string]string{"Kptfile": cliKptfile, "deploy.yaml": cliDeployment("1", "nginx:1.25"), "README.md": "# app\n"})
	writePkg(t, filepath.Join(dir, "v2"), map[string]string{"Kptfile": cliKptfile, "deploy.yaml": cliDeployment("3", "nginx:1.25"), "README.md": "# app v2\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n"})

	out, err := runIn(t, dir, "pkg", "clone", "v1", "tenant-a", "--for-deployment", "--repo", "https://git.example.com/catalog.git", "--ref", "app/v1", "--commit", "c0ffee")
	g.Expect(err).NotTo(HaveOccurred())
	golden(t, "pkg-clone", out)
	kf, _ := os.ReadFile(filepath.Join(dir, "tenant-a", "Kptfile"))
	g.Expect(string(kf)).To(ContainSubstring("repo: https://git.example.com/catalog.git"))
	g.Expect(string(kf)).To(ContainSubstring("commit: c0ffee"))

	_, err = runIn(t, dir, "pkg", "clone", "v1", "tenant-a")
	g.Expect(err).To(MatchError("tenant-a already exists; clone writes a new folder"))

	// A downstream edit survives the update.
	deploy := filepath.Join(dir, "tenant-a", "deploy.yaml")
	data, _ := os.ReadFile(deploy)
	g.Expect(os.WriteFile(deploy, []byte(strings.Replace(string(data), "nginx:1.25", "registry.local/nginx:1.25", 1)), 0o644)).To(Succeed())
	out, err = runIn(t, dir, "pkg", "update", "tenant-a", "--origin", "v1", "--updated", "v2", "--ref", "app/v2", "--commit", "beef")
	g.Expect(err).NotTo(HaveOccurred())
	golden(t, "pkg-update", out)
	data, _ = os.ReadFile(deploy)
	g.Expect(string(data)).To(ContainSubstring("replicas: 3"))
	g.Expect(string(data)).To(ContainSubstring("image: registry.local/nginx:1.25"))
	kf, _ = os.ReadFile(filepath.Join(dir, "tenant-a", "Kptfile"))
	g.Expect(string(kf)).To(ContainSubstring("ref: app/v2"))

	// fast-forward refuses, naming the local change, and leaves DIR alone.
	before, _ := pkg.ReadDir(filepath.Join(dir, "tenant-a"))
	_, err = runIn(t, dir, "pkg", "update", "tenant-a", "--origin", "v1", "--updated", "v2", "--strategy", "fast-forward")
	g.Expect(err).To(MatchError(ContainSubstring("fast-forward does not merge: ")))
	g.Expect(err).To(MatchError(ContainSubstring("apps/Deployment app")))
	after, _ := pkg.ReadDir(filepath.Join(dir, "tenant-a"))
	g.Expect(after.Equal(before)).To(BeTrue())

	_, err = runIn(t, dir, "pkg", "update", "tenant-a", "--strategy", "rebase")
	g.Expect(err).To(MatchError("--origin is required\n--updated is required\n--strategy \"rebase\": want resource-merge, fast-forward, force-delete-replace or copy-merge"))
}

func TestFnRender(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	kptfile := cliKptfile + "pipeline:\n  mutators:\n  - image: gcr.io/kpt-fn/set-namespace:v0.4\n    configMap:\n      namespace: tenant-a\n  - image: set-labels\n    name: team\n    configMap:\n      team: a\n"
	writePkg(t, filepath.Join(dir, "app"), map[string]string{"Kptfile": kptfile, "deploy.yaml": cliDeployment("1", "nginx:1.25")})
	out, err := runIn(t, dir, "fn", "render", "app")
	g.Expect(err).NotTo(HaveOccurred())
	golden(t, "fn-render", out)
	data, _ := os.ReadFile(filepath.Join(dir, "app", "deploy.yaml"))
	g.Expect(string(data)).To(ContainSubstring("namespace: tenant-a"))

	// A failing function: non-zero exit, the folder unchanged.
	broken := kptfile + "  - image: set-image\n    name: pin\n    configMap:\n      name: nginx\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "app", "Kptfile"), []byte(broken), 0o644)).To(Succeed())
	before, _ := pkg.ReadDir(filepath.Join(dir, "app"))
	out, err = runIn(t, dir, "fn", "render", "app")
	g.Expect(err).To(MatchError(`render: function "pin" (set-image) failed: set-image: one of data.newName, data.newTag and data.digest is required`))
	golden(t, "fn-render-failed", out)
	after, _ := pkg.ReadDir(filepath.Join(dir, "app"))
	g.Expect(after.Equal(before)).To(BeTrue())

	// Exec functions need --allow-exec.
	g.Expect(os.WriteFile(filepath.Join(dir, "app", "Kptfile"), []byte(cliKptfile+"pipeline:\n  mutators:\n  - exec: ./fn.sh\n"), 0o644)).To(Succeed())
	_, err = runIn(t, dir, "fn", "render", "app")
	g.Expect(err).To(MatchError(ContainSubstring("exec functions are disabled")))
}
