package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// The spec's PackageVariantSet examples, expanded offline.
func TestPvsExpandSpecExamples(t *testing.T) {
	td, err := filepath.Abs(filepath.Join("..", "variantset", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	f := func(n string) string { return filepath.Join(td, n) }
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"pvs-expand-list", []string{"-f", f("list.yaml"), "--repositories", f("repositories.yaml"), "-o", "table"}},
		{"pvs-expand-selector", []string{"-f", f("selector.yaml"), "--repositories", f("repositories.yaml"), "-o", "table"}},
		{"pvs-expand-cel", []string{"-f", f("cel.yaml"), "--repositories", f("repositories.yaml"), "-o", "table"}},
		{"pvs-expand-namespaces", []string{"-f", f("namespaces.yaml"), "--repositories", f("repositories.yaml")}},
		{"pvs-expand-teams", []string{"-f", f("teams.yaml"), "--repositories", f("repositories.yaml"), "--objects", f("team-objects.yaml"), "--upstream", f("upstream.yaml")}},
		{"pvs-expand-group", []string{"-f", f("group.yaml"), "--repositories", f("repositories.yaml"), "--upstream", f("group-upstreams.yaml"), "-o", "table"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(append([]string{"pvs", "expand"}, tc.args...)...)
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
			golden(t, tc.name, out)
		})
	}
}

func TestPvsExpandErrors(t *testing.T) {
	td := filepath.Join("..", "variantset", "testdata")
	f := func(n string) string { return filepath.Join(td, n) }
	g := NewWithT(t)
	// An expression reads upstream, which is not given.
	out, err := run("pvs", "expand", "-f", f("teams.yaml"), "--repositories", f("repositories.yaml"), "--objects", f("team-objects.yaml"))
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(err.Error()).To(Equal("PackageVariantSet teams: spec.targets[0].template.downstream.packageExpr: the expression uses upstream, but no upstream PackageRevision was given (give it with --upstream)"))
	// A group whose expressions read upstream, given the PackageRevision
	// of one of its three upstreams only.
	out, err = run("pvs", "expand", "-f", f("group.yaml"), "--repositories", f("repositories.yaml"), "--upstream", f("upstream.yaml"))
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(err.Error()).To(Equal("PackageVariantSet platform: spec.targets[0].template.labelExprs[0].valueExpr: the expression uses upstream, but no upstream PackageRevision was given (give it with --upstream)"))
	// The listed repositories are not given.
	_, err = run("pvs", "expand", "-f", f("list.yaml"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Count(err.Error(), "not found in namespace \"default\"")).To(Equal(4), err.Error())
	g.Expect(err.Error()).To(ContainSubstring(`spec.targets[0].repositories[2].name: Repository "cluster-03" not found`))
	// An invalid set: the validation messages.
	dir := t.TempDir()
	writePkg(t, dir, map[string]string{"bad.yaml": `apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: bad}
spec:
  upstream: {repo: r, package: p}
  targets:
  - repositories: [{name: a}]
    template:
      labelExprs: [{key: k, valueExpr: "repository.labels["}]
`})
	_, err = run("pvs", "expand", "-f", filepath.Join(dir, "bad.yaml"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("PackageVariantSet bad is invalid: [spec.upstream: Invalid value: \"\": exactly one of revision, workspaceName, tag and versionRange must be set, spec.targets[0].template.labelExprs[0].valueExpr: Invalid value: \"repository.labels[\": ERROR: <input>:1:19: Syntax error"))
}

// pvs expand and pv render take objects as people have them: a file with
// other kinds beside the set, `kubectl get -o yaml` Lists, standard input.
func TestPvsExpandNaturalInput(t *testing.T) {
	td := filepath.Join("..", "variantset", "testdata")
	g := NewWithT(t)
	want, err := run("pvs", "expand", "-f", filepath.Join(td, "list.yaml"), "--repositories", filepath.Join(td, "repositories.yaml"), "-o", "table")
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	set, _ := os.ReadFile(filepath.Join(td, "list.yaml"))
	repos, _ := os.ReadFile(filepath.Join(td, "repositories.yaml"))
	// The set after two other objects in one file.
	mixed := filepath.Join(dir, "mixed.yaml")
	g.Expect(os.WriteFile(mixed, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata: {downstream: x}\n---\n"+
		"apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata: {name: extra}\nspec: {type: git, git: {repo: http://x}}\n---\n"+string(set)), 0o644)).To(Succeed())
	// The repositories as kubectl get repositories -o yaml prints them.
	var items []any
	for _, doc := range strings.Split(string(repos), "\n---\n") {
		var m map[string]any
		g.Expect(yaml.Unmarshal([]byte(doc), &m)).To(Succeed())
		items = append(items, m)
	}
	list, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items})
	g.Expect(err).NotTo(HaveOccurred())
	listFile := filepath.Join(dir, "list.yaml")
	g.Expect(os.WriteFile(listFile, list, 0o644)).To(Succeed())

	out, stderr, err := runStreams("pvs", "expand", "-f", mixed, "--repositories", listFile, "-o", "table")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(want))
	g.Expect(stderr).To(Equal("warning: " + mixed + ": ignored 2 object(s) that are not PackageVariantSets: ConfigMap/notes, Repository/extra\n"))

	// Standard input, for the set or the repositories.
	var stdout, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{In: bytes.NewReader(list), Out: &stdout, ErrOut: &errOut})
	cmd.SetArgs([]string{"pvs", "expand", "-f", filepath.Join(td, "list.yaml"), "--repositories", "-", "-o", "table"})
	g.Expect(cmd.Execute()).To(Succeed())
	g.Expect(stdout.String()).To(Equal(want))

	// Twice standard input; a file with no set.
	_, _, err = runStreams("pvs", "expand", "-f", "-", "--repositories", "-")
	g.Expect(err).To(MatchError("standard input (-) is given 2 times; it can be read once"))
	_, _, err = runStreams("pvs", "expand", "-f", listFile)
	g.Expect(err).To(MatchError(listFile + " has no PackageVariantSet (config.porch.kpt.dev/v1alpha2); it holds Repository/cluster-01, Repository/cluster-02, Repository/cluster-03, Repository/cluster-04"))
	// An unknown field in the set names the set.
	bad := filepath.Join(dir, "bad.yaml")
	g.Expect(os.WriteFile(bad, []byte(strings.Replace(string(set), "  targets:", "  target: []\n  targets:", 1)), 0o644)).To(Succeed())
	_, _, err = runStreams("pvs", "expand", "-f", bad, "--repositories", listFile)
	g.Expect(err).To(MatchError(ContainSubstring(bad + `: PackageVariantSet example: unknown field "spec.target"`)))
	// An object without a name, in a List.
	noName := filepath.Join(dir, "noname.yaml")
	g.Expect(os.WriteFile(noName, []byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"), 0o644)).To(Succeed())
	_, _, err = runStreams("pvs", "expand", "-f", mixed, "--objects", noName)
	g.Expect(err).To(MatchError(noName + ": document 0 (List): items[0] has no metadata.name"))
}
