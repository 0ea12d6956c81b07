// Package demo_test runs `scion dev demo`, what `make demo` runs, end to
// end: a local control plane from bin/k8s, the fleet in a box, the
// walk-through, twice (it is idempotent), then dev down and dev up with
// the state kept.
package demo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/scheme"
)

func TestDevDemo(t *testing.T) {
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	bin := filepath.Join(t.TempDir(), "scion")
	build := exec.Command("go", "build", "-o", bin, "./cmd/scion")
	build.Dir = root
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	dir := filepath.Join(t.TempDir(), "dev")
	scion := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir, "--assets", assets)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "scion %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command(bin, "dev", "down", "--dir", dir).Run() })

	for run := 1; run <= 2; run++ {
		out := scion("dev", "demo", "--examples", filepath.Join(root, "examples"))
		g.Expect(out).To(ContainSubstring("12 of 12 PackageVariants ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/regional-app  Ready=True  6/6 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/tenants  Ready=True  3/3 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/team-sandboxes  Ready=True  2/2 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("+  DATABASE_URL: postgres://db.us-east.example.com:5432/web"), "run %d: the diff shows the injected endpoints", run)
		g.Expect(out).To(ContainSubstring("updated in place; the downstream edit is kept"), "run %d", run)
		g.Expect(out).To(ContainSubstring("readiness gates not met: example.com/canary-passed (ReadinessGatesNotMet)"), "run %d", run)
		g.Expect(out).To(MatchRegexp(`cluster-01\.web\.packagevariant-\d+ is Published`), "run %d", run)
		g.Expect(out).To(ContainSubstring("export KUBECONFIG=" + filepath.Join(dir, "kubeconfig")))
	}

	// dev down keeps the state; dev up brings it back.
	scion("dev", "down")
	g.Expect(scion("dev", "up")).To(ContainSubstring("==> ready"))
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	set := &configv1alpha2.PackageVariantSet{}
	g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "regional-app"}, set)).To(Succeed())
	g.Expect(set.Spec.Upstream.Revision).To(Equal("v3"), "two runs moved the upstream twice")
	scion("dev", "down")
}
