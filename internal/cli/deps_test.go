package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// runStreams runs the scion command and returns standard output and
// standard error apart.
func runStreams(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// The examples/deps catalog and deployment repository, resolved offline.
func TestDepsResolve(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "deps")
	catalog, installed := filepath.Join(ex, "catalog"), filepath.Join(ex, "cluster-01")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"deps-resolve-empty", []string{"--catalog", catalog, "app"}},
		// app 2.1.0 cannot go next to web 1.3.0: the solution backs off
		// to app 1.0.0 and keeps lib.
		{"deps-resolve-installed", []string{"--catalog", catalog, "--installed", installed, "app"}},
		{"deps-resolve-json", []string{"--catalog", catalog, "--installed", installed, "app@^1", "-o", "json"}},
		{"deps-resolve-upgrade", []string{"--catalog", catalog, "--installed", installed, "widget-operator@>=2", "-o", "yaml"}},
		{"deps-resolve-downgrade", []string{"--catalog", catalog, "--installed", installed, "lib@<1.5.0", "--allow-downgrade"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := runStreams(append([]string{"deps", "resolve"}, tc.args...)...)
			g := NewWithT(t)
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stderr).To(BeEmpty())
			golden(t, tc.name, out)
		})
	}
}

func TestDepsResolve_unsatisfiable(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "deps")
	catalog, installed := filepath.Join(ex, "catalog"), filepath.Join(ex, "cluster-01")
	const why = "app ^2 is requested; app 2.1.0 requires lib >=2.0.0; web 1.3.0 (installed) requires lib <2.0.0; no version of lib satisfies both (available: 1.4.0, 1.5.2, 2.0.0)"
	g := NewWithT(t)

	// Text: nothing on standard output, the reason as the error.
	out, _, err := runStreams("deps", "resolve", "--catalog", catalog, "--installed", installed, "app@^2")
	g.Expect(out).To(BeEmpty())
	g.Expect(err).To(MatchError("cannot resolve: " + why))

	// JSON: the reason in the document, and exit status 1.
	out, _, err = runStreams("deps", "resolve", "--catalog", catalog, "--installed", installed, "app@^2", "-o", "json")
	var exit *ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue())
	g.Expect(exit.Code).To(Equal(1))
	var doc map[string]any
	g.Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
	g.Expect(doc).To(Equal(map[string]any{"resolved": false, "explanation": why}))

	// Two packages that both ship the Widget CRD.
	_, _, err = runStreams("deps", "resolve", "--catalog", catalog, "widget-operator", "widgets-community")
	g.Expect(err).To(MatchError(ContainSubstring("widgets-community 1.0.0 and widget-operator (1.0.0, 2.0.0) both provide kind example.com/v1/Widget, and a kind has one provider per repository")))
}

func TestDepsResolve_badInput(t *testing.T) {
	catalog := filepath.Join("..", "..", "examples", "deps", "catalog")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"app"}, "--catalog is required"},
		{[]string{"--catalog", catalog, "app@>>1"}, `request "app@>>1": improper constraint: ">>1"`},
		{[]string{"--catalog", catalog, "../app"}, `request "../app": invalid package path "../app": use a relative slash-separated path of simple names`},
		{[]string{"--catalog", catalog, "app", "-o", "xml"}, `--output must be text, yaml or json, not "xml"`},
		{[]string{"--catalog", "no-such-folder", "app"}, "--catalog: stat no-such-folder: no such file or directory"},
		{[]string{"--catalog", filepath.Join(catalog, "lib"), "app"}, "--catalog: " + filepath.Join(catalog, "lib", "1.4.0") + ": a catalog revision is a folder <package path>/<version>/ holding a Kptfile"},
		{[]string{"--catalog", filepath.Join("..", "..", "examples", "deps"), "app"}, `--catalog: ` + filepath.Join("..", "..", "examples", "deps", "cluster-01", "lib") + `: version "lib" is neither semver nor a revision number v<N>: invalid semantic version`},
	} {
		_, _, err := runStreams(append([]string{"deps", "resolve"}, tc.args...)...)
		NewWithT(t).Expect(err).To(MatchError(tc.want), strings.Join(tc.args, " "))
	}
}
