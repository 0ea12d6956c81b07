package deps

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		full := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadCatalog(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"lib/1.4.0/Kptfile":               testKptfile,
		"lib/v1.5.0/Kptfile":              testKptfile,
		"lib/v3/Kptfile":                  testKptfile,
		"platform/widgets/v1/Kptfile":     testKptfile,
		"platform/widgets/v1/crd.yaml":    widgetCRD,
		"platform/widgets/v1/sub/Kptfile": testKptfile, // part of the revision
		"broken/1.0.0/Kptfile":            testKptfile,
		"broken/1.0.0/deps.yaml":          declFile("  requires:\n  - {}\n"),
		"lib/README.md":                   "not a revision\n",
	})
	c, err := LoadCatalog(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Packages()).To(Equal([]string{"broken", "lib", "platform/widgets"}))
	var versions []string
	for _, r := range c.Revisions("lib") {
		versions = append(versions, r.VersionString())
	}
	g.Expect(versions).To(Equal([]string{"3.0.0", "1.5.0", "1.4.0"}))
	g.Expect(c.Revisions("platform/widgets")[0].Decl.Provides).To(Equal([]string{"example.com/v1/Widget", "example.com/v2/Widget"}))
	// A revision that does not read is kept, unusable, with its reason.
	g.Expect(c.Revisions("broken")[0].Err).To(MatchError(ContainSubstring("spec.requires[0]: Required value: exactly one of package, gvk and anyOf must be set")))

	// Two folders for one version.
	writeFiles(t, dir, map[string]string{"lib/v1.4.0/Kptfile": testKptfile})
	_, err = LoadCatalog(dir)
	g.Expect(err).To(MatchError("lib has two revisions of version 1.4.0 (1.4.0 and v1.4.0)"))
}

func TestLoadInstalled(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	locked := func(name, directory, ref string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\nupstreamLock:\n  type: git\n  git:\n    repo: https://git.example.com/catalog.git\n    directory: " + directory + "\n    ref: " + ref + "\n    commit: abc\n"
	}
	writeFiles(t, dir, map[string]string{
		"apps/web/Kptfile":            locked("web", "/web", "web/v1.3.0"),
		"apps/web/deps.yaml":          declFile("  requires:\n  - package: {name: lib, version: <2.0.0}\n"),
		"apps/web/nested/Kptfile":     testKptfile, // a subpackage of web
		"lib/Kptfile":                 locked("lib", "lib", "lib/v2"),
		"local/widgets/Kptfile":       testKptfile,
		"local/widgets/crd.yaml":      widgetCRD,
		"drafted/Kptfile":             locked("drafted", "drafted", "main"),
		"README.md":                   "not a package\n",
		".git/objects/info/something": "ignored\n",
	})
	inst, err := LoadInstalled(dir)
	g.Expect(err).NotTo(HaveOccurred())
	got := map[string]string{}
	for _, in := range inst {
		got[in.Dir] = in.Revision.Package + " " + in.Revision.VersionString()
	}
	g.Expect(got).To(Equal(map[string]string{
		"apps/web":      "web 1.3.0",
		"lib":           "lib 2.0.0",
		"local/widgets": "local/widgets (unversioned)",
		"drafted":       "drafted (unversioned)",
	}))
	for _, in := range inst {
		if in.Dir == "local/widgets" {
			g.Expect(in.Revision.Decl.Provides).To(Equal([]string{"example.com/v1/Widget", "example.com/v2/Widget"}))
		}
	}

	// A declaration that does not read in an installed package is an
	// error: what the repository holds must be known.
	writeFiles(t, dir, map[string]string{"lib/deps.yaml": declFile("  requires: 3\n")})
	_, err = LoadInstalled(dir)
	g.Expect(err).To(MatchError(ContainSubstring(filepath.Join(dir, "lib") + ": deps.yaml: PackageDependencies deps is invalid: spec.requires: Invalid value: 3: must be a list")))
}
