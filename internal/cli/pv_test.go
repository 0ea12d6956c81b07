package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const pvYAML = `apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata:
  name: tenant-a
spec:
  upstream: {repo: catalog, package: app, revision: v1}
  downstream: {repo: cluster-01, package: tenant-a}
  packageContext:
    data: {region: useast1}
  pipeline:
    mutators:
    - image: remove-resources
      name: drop-ns
      selectors:
      - kind: Namespace
    - image: gcr.io/kpt-fn/set-namespace:v0.4
      configMap: {namespace: tenant-a}
  injectors:
  - name: useast1-endpoints
`

func appPackage(replicas string) map[string]string {
	return map[string]string{
		"Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"ns.yaml":        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n",
		"app.yaml":       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: example\nspec:\n  replicas: " + replicas + "\n",
		"endpoints.yaml": "apiVersion: example.com/v1\nkind: ServiceEndpoints\nmetadata:\n  name: endpoints\n  annotations:\n    kpt.dev/config-injection: required\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  database: placeholder\n",
	}
}

func TestPvRender(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writePkg(t, filepath.Join(dir, "v1"), appPackage("1"))
	writePkg(t, filepath.Join(dir, "v2"), appPackage("3"))
	g.Expect(os.WriteFile(filepath.Join(dir, "pv.yaml"), []byte(pvYAML), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte("apiVersion: example.com/v1\nkind: ServiceEndpoints\nmetadata:\n  name: useast1-endpoints\nspec:\n  database: db.useast1.example.com\n"), 0o644)).To(Succeed())

	// Create path.
	out, err := runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--deployment", "--out", "tenant-a")
	g.Expect(err).NotTo(HaveOccurred(), out)
	golden(t, "pv-render", out)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "tenant-a", name))
		g.Expect(err).NotTo(HaveOccurred(), name)
		return string(b)
	}
	_, err = os.Stat(filepath.Join(dir, "tenant-a", "ns.yaml"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the pipeline removed the Namespace")
	g.Expect(read("app.yaml")).To(ContainSubstring("namespace: tenant-a"))
	g.Expect(read("endpoints.yaml")).To(ContainSubstring("database: db.useast1.example.com"))
	g.Expect(read("package-context.yaml")).To(ContainSubstring("region: useast1"))
	kf := read("Kptfile")
	g.Expect(kf).To(ContainSubstring("name: PackageVariant.tenant-a.drop-ns.0"))
	g.Expect(kf).To(ContainSubstring("name: PackageVariant.tenant-a.1"))
	g.Expect(kf).To(ContainSubstring("conditionType: config.porch.kpt.dev/packagevariant"))
	g.Expect(kf).To(ContainSubstring("conditionType: config.injection.ServiceEndpoints.endpoints"))

	// Update path: a downstream edit survives the upstream's change.
	app := filepath.Join(dir, "tenant-a", "app.yaml")
	g.Expect(os.WriteFile(app, []byte(strings.Replace(read("app.yaml"), "spec:\n", "spec:\n  paused: true\n", 1)), 0o644)).To(Succeed())
	_, err = runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v2", "--origin", "v1", "--downstream", "tenant-a", "--objects", "objects.yaml", "--out", "tenant-a-v2")
	g.Expect(err).NotTo(HaveOccurred())
	updated, err := os.ReadFile(filepath.Join(dir, "tenant-a-v2", "app.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(updated)).To(ContainSubstring("replicas: 3"))
	g.Expect(string(updated)).To(ContainSubstring("paused: true"))
	g.Expect(string(updated)).To(ContainSubstring("namespace: tenant-a"))

	// Without the in-cluster object, the required point is not injected.
	out, err = runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--deployment", "--out", "no-objects")
	g.Expect(err).To(MatchError(ContainSubstring("the downstream is not ensured: configuration injection is incomplete")))
	g.Expect(out).To(ContainSubstring("type: ConfigInjected\n"))

	// A pipeline image that is not a builtin fails as in the controller
	// unless --function-images allows it (then it looks for a runtime).
	withImage := strings.Replace(pvYAML, "pipeline:\n", "pipeline:\n    validators:\n    - image: example.com/fns/check:v1\n", 1)
	g.Expect(withImage).NotTo(Equal(pvYAML))
	g.Expect(os.WriteFile(filepath.Join(dir, "image.yaml"), []byte(withImage), 0o644)).To(Succeed())
	_, err = runIn(t, dir, "pv", "render", "-f", "image.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--deployment", "--out", "image")
	g.Expect(err).To(MatchError(ContainSubstring("image example.com/fns/check:v1 is not a builtin and is not allowed to run as a container here: an administrator lets images run with --function-images")))
	t.Setenv("PATH", t.TempDir()) // no container runtime
	_, err = runIn(t, dir, "pv", "render", "-f", "image.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--deployment", "--out", "image", "--function-images", "example.com/fns/*")
	g.Expect(err).To(MatchError(ContainSubstring("image example.com/fns/check:v1 is not a builtin and no container runtime")))

	// An invalid PackageVariant: non-zero, with the validation messages.
	bad := strings.Replace(pvYAML, "revision: v1", "revision: v1, tag: stable", 1)
	g.Expect(os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)).To(Succeed())
	out, err = runIn(t, dir, "pv", "render", "-f", "bad.yaml", "--upstream", "v1", "--out", "bad")
	g.Expect(err).To(MatchError(ContainSubstring("spec.upstream: Invalid value: \"\": exactly one of revision, workspaceName, tag and versionRange must be set")))
	g.Expect(out).To(ContainSubstring("reason: ValidationError"))
}

// The preview gives what the controller gives: objects of other namespaces
// are not injected, and values read as YAML 1.2 reads them (as kubectl
// keeps them): `keep: y` stays "y".
func TestPvRenderMatchesController(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writePkg(t, filepath.Join(dir, "v1"), appPackage("1"))
	pv := strings.Replace(pvYAML, "  name: tenant-a\n", "  name: tenant-a\n  namespace: team-a\n", 1)
	pv = strings.Replace(pv, "data: {region: useast1}", "data: {region: useast1, keep: y, tls: on, debug: no}", 1)
	g.Expect(os.WriteFile(filepath.Join(dir, "pv.yaml"), []byte(pv), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte("apiVersion: example.com/v1\nkind: ServiceEndpoints\nmetadata:\n  name: useast1-endpoints\n  namespace: team-b\nspec:\n  database: db.team-b.example.com\n"), 0o644)).To(Succeed())

	_, stderr, err := runStreamsIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--deployment", "--out", "out")
	g.Expect(err).To(MatchError(ContainSubstring("configuration injection is incomplete")), "the team-b object is not injected into a team-a variant")
	g.Expect(stderr).To(Equal("warning: objects.yaml: not injected, as the controller injects only from the variant's namespace team-a: ServiceEndpoints team-b/useast1-endpoints\n"))

	// In the variant's namespace (or with none given), it is.
	g.Expect(os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte("apiVersion: example.com/v1\nkind: ServiceEndpoints\nmetadata:\n  name: useast1-endpoints\n  namespace: team-a\nspec:\n  database: db.team-a.example.com\n"), 0o644)).To(Succeed())
	_, stderr, err = runStreamsIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--deployment", "--out", "out")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	ctx, err := os.ReadFile(filepath.Join(dir, "out", "package-context.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(ctx)).To(ContainSubstring(`keep: "y"`))
	g.Expect(string(ctx)).To(ContainSubstring(`tls: "on"`))
	g.Expect(string(ctx)).To(ContainSubstring(`debug: "no"`))

	// Without --deployment there is no package context, and the message
	// names the flag.
	_, _, err = runStreamsIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--objects", "objects.yaml", "--out", "out-nodeploy")
	g.Expect(err).To(MatchError(ContainSubstring("the package has no kptfile.kpt.dev ConfigMap for spec.packageContext: pass --deployment to clone the upstream as a deployment package")))

	// A value the API server would refuse is refused, naming the field.
	g.Expect(os.WriteFile(filepath.Join(dir, "pv.yaml"), []byte(strings.Replace(pv, "keep: y", "keep: 12", 1)), 0o644)).To(Succeed())
	_, _, err = runStreamsIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", "v1", "--deployment", "--out", "out2")
	g.Expect(err).To(MatchError("pv.yaml: PackageVariant tenant-a: spec.packageContext.data[keep]: json: cannot unmarshal number into Go value of type string"))
}

func runStreamsIn(t *testing.T, dir string, args ...string) (string, string, error) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	return runStreams(args...)
}

// With --catalog the preview checks the variant's dependencies as the
// controller does, gates the package, and fails when they cannot be met.
func TestPvRenderDependencies(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	examples := filepath.Join("..", "..", "examples", "deps")
	pv := "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: app\nspec:\n  upstream: {repo: catalog, package: app, revision: v1}\n  downstream: {repo: cluster-01, package: app}\n  dependencies: {install: true}\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "pv.yaml"), []byte(pv), 0o644)).To(Succeed())
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		g.Expect(err).NotTo(HaveOccurred())
		return a
	}
	catalog, cluster := abs(filepath.Join(examples, "catalog")), abs(filepath.Join(examples, "cluster-01"))

	// app 1.0.0 needs lib ^1.4.0, which cluster-01 has.
	out, err := runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", filepath.Join(catalog, "app", "1.0.0"), "--catalog", catalog, "--installed", cluster, "--out", "ok")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("message: 1 dependencies Published in the repository\n  reason: DependenciesSatisfied\n  status: \"True\"\n  type: DependenciesReady"))
	kf, err := os.ReadFile(filepath.Join(dir, "ok", "Kptfile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kf)).To(ContainSubstring("conditionType: config.porch.kpt.dev/dependencies"))

	// app 2.1.0 needs lib >=2.0.0, which web there cannot live with.
	out, err = runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", filepath.Join(catalog, "app", "2.1.0"), "--catalog", catalog, "--installed", cluster, "--out", "bad")
	g.Expect(err).To(MatchError(ContainSubstring("the dependencies cannot be met: web 1.3.0 (installed) requires lib <2.0.0; app (installed) requires lib >=2.0.0")), out)
	g.Expect(out).To(ContainSubstring("reason: DependenciesUnsatisfiable"))

	// Into an empty repository everything is to be installed.
	out, err = runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", filepath.Join(catalog, "app", "2.1.0"), "--catalog", catalog, "--out", "empty")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("lib 2.0.0 is being installed; widget-operator 2.0.0 is being installed"))

	_, err = runIn(t, dir, "pv", "render", "-f", "pv.yaml", "--upstream", filepath.Join(catalog, "app", "2.1.0"), "--installed", cluster, "--out", "x")
	g.Expect(err).To(MatchError(ContainSubstring("--installed needs --catalog")))
}
