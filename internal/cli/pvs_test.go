package cli

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
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
	g.Expect(err.Error()).To(ContainSubstring("PackageVariantSet bad is invalid: [spec.upstream: Invalid value: \"\": exactly one of revision, workspaceName and tag must be set, spec.targets[0].template.labelExprs[0].valueExpr: Invalid value: \"repository.labels[\": ERROR: <input>:1:19: Syntax error"))
}
