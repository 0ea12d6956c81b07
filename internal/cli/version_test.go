package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/version"
)

func run(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
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
