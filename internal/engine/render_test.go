package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
)

const renderKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: gcr.io/kpt-fn/set-namespace:v0.4
    configMap:
      namespace: tenant-a
  - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:latest
    name: labels
    configMap:
      team: a
    selectors:
    - kind: Deployment
  - image: set-annotations
    configPath: annotations.yaml
    exclude:
    - kind: Namespace
  validators:
  - image: search-replace
    configMap:
      by-value: tenant-a
`

func renderPackage() *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":          []byte(renderKptfile),
		"annotations.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotations\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  owner: platform\n"),
		"ns.yaml":          []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"),
		"app.yaml":         []byte("# the app\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: example\nspec:\n  replicas: 1\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: example\n"),
		"db/Kptfile":       []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: db\npipeline:\n  mutators:\n  - image: set-labels\n    configMap:\n      component: db\n"),
		"db/cm.yaml":       []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n  namespace: example\n"),
		"README.md":        []byte("# app\n"),
	})
}

func TestRender(t *testing.T) {
	g := NewWithT(t)
	in := renderPackage()
	out, status, err := Render(context.Background(), in, builtin.NewRuntime())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status.ErrorSummary).To(BeEmpty())
	g.Expect(status.MutationSteps).To(HaveLen(4), "db's mutator, then the root's three")
	g.Expect(status.ValidationSteps).To(HaveLen(1))

	app, _ := out.File("app.yaml")
	s := string(app)
	g.Expect(s).To(HavePrefix("# the app\n"), "comments survive")
	deploy, svc, _ := strings.Cut(s, "---")
	g.Expect(deploy).To(ContainSubstring("  namespace: tenant-a\n"))
	g.Expect(deploy).To(ContainSubstring("  labels:\n    team: a\n"))
	g.Expect(deploy).To(ContainSubstring("  annotations:\n    owner: platform\n"))
	g.Expect(svc).To(ContainSubstring("  namespace: tenant-a\n"))
	g.Expect(svc).To(ContainSubstring("  annotations:\n    owner: platform\n"))
	g.Expect(svc).NotTo(ContainSubstring("team: a"), "set-labels only selected the Deployment")
	ns, _ := out.File("ns.yaml")
	g.Expect(string(ns)).To(Equal("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-a\n"), "the Namespace is renamed and excluded from set-annotations")
	db, _ := out.File("db/cm.yaml")
	g.Expect(string(db)).To(ContainSubstring("labels:\n    component: db\n"), "the subpackage pipeline ran on its resources")
	g.Expect(string(db)).To(ContainSubstring("namespace: tenant-a"), "the parent pipeline ran on the subpackage's resources")
	ctxFile, _ := out.File("annotations.yaml")
	g.Expect(string(ctxFile)).NotTo(ContainSubstring("namespace"), "local config is left alone by set-namespace")

	kf, err := out.Kptfile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.Status.Conditions).To(ContainElement(kptfilev1.Condition{Type: RenderedCondition, Status: kptfilev1.ConditionTrue, Reason: "RenderSucceeded"}))
	g.Expect(kf.Status.RenderStatus.MutationSteps[3].Name).To(Equal(""))
	g.Expect(kf.Status.RenderStatus.MutationSteps[2].Name).To(Equal("labels"))
	readme, _ := out.File("README.md")
	g.Expect(string(readme)).To(Equal("# app\n"))

	// Rendering the output again changes nothing but is still successful.
	again, _, err := Render(context.Background(), out, builtin.NewRuntime())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Equal(out)).To(BeTrue(), "render is idempotent")
}

func TestRender_failure(t *testing.T) {
	g := NewWithT(t)
	in := renderPackage()
	kf, _ := in.File("Kptfile")
	broken := strings.Replace(string(kf), "      team: a\n", "      team: a\n  - image: set-image\n    name: images\n    configMap:\n      name: nginx\n", 1)
	g.Expect(in.SetFile("Kptfile", []byte(broken))).To(Succeed())
	before := in.DeepCopy()

	out, status, err := Render(context.Background(), in, builtin.NewRuntime())
	var re *RenderError
	g.Expect(errors.As(err, &re)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(Equal(`render: function "images" (set-image) failed: set-image: one of data.newName, data.newTag and data.digest is required`))
	g.Expect(out.Equal(before)).To(BeTrue(), "a failed render leaves the package unchanged")
	g.Expect(status.ErrorSummary).To(Equal(err.Error()))
	last := status.MutationSteps[len(status.MutationSteps)-1]
	g.Expect(last.Name).To(Equal("images"))
	g.Expect(last.Results[0].Severity).To(Equal("error"))

	// With save-on-render-failure the partial result and the status are kept.
	saved := strings.Replace(broken, "metadata:\n  name: app\n", "metadata:\n  name: app\n  annotations:\n    kpt.dev/save-on-render-failure: \"true\"\n", 1)
	g.Expect(in.SetFile("Kptfile", []byte(saved))).To(Succeed())
	out, _, err = Render(context.Background(), in, builtin.NewRuntime())
	g.Expect(err).To(HaveOccurred())
	app, _ := out.File("app.yaml")
	g.Expect(string(app)).To(ContainSubstring("namespace: tenant-a"), "what rendered before the failure is kept")
	kfOut, err := out.Kptfile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kfOut.Status.Conditions).To(ContainElement(HaveField("Status", kptfilev1.ConditionFalse)))
	g.Expect(kfOut.Status.RenderStatus.ErrorSummary).To(ContainSubstring(`function "images"`))
}

func TestRender_unknownFunction(t *testing.T) {
	g := NewWithT(t)
	in := pkg.New(map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\npipeline:\n  mutators:\n  - image: example.com/private/fn:v1\n"),
	})
	rt := builtin.NewRuntime()
	rt.ContainerRuntimes = []string{"no-such-container-cli"}
	_, _, err := Render(context.Background(), in, rt)
	g.Expect(err).To(MatchError(ContainSubstring(`function "example.com/private/fn:v1" failed: image example.com/private/fn:v1 is not a builtin and no container runtime`)))
	g.Expect(strings.Count(err.Error(), `function "example.com/private/fn:v1"`)).To(Equal(1), "the function is named once")
}
