package variant

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

const upstreamKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: apply-setters
    name: setters
    configMap:
      replicas: "2"
`

const contextCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: app
  keep: me
  stale: old
`

func testPkg(extra map[string]string) *pkg.Package {
	files := map[string][]byte{"Kptfile": []byte(upstreamKptfile), "package-context.yaml": []byte(contextCM)}
	for k, v := range extra {
		files[k] = []byte(v)
	}
	return pkg.New(files)
}

func TestApplyContext(t *testing.T) {
	g := NewWithT(t)
	orig := testPkg(nil)
	shared := sharedText(t, orig)
	p := orig.DeepCopy()
	changed, err := ApplyContext(p, &configv1alpha1.PackageContext{Data: map[string]string{"region": "useast1", "env": "prod"}, RemoveKeys: []string{"stale", "absent"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	cm, _ := p.File("package-context.yaml")
	g.Expect(string(cm)).To(ContainSubstring("  name: app\n  keep: me\n  env: prod\n  region: useast1\n"))
	g.Expect(string(cm)).NotTo(ContainSubstring("stale"))
	g.Expect(sharedText(t, orig)).To(Equal(shared), "the parse p shares with orig is not modified")

	// Applying again changes nothing; keys added earlier and no longer listed stay.
	changed, err = ApplyContext(p, &configv1alpha1.PackageContext{Data: map[string]string{"region": "useast1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	cm, _ = p.File("package-context.yaml")
	g.Expect(string(cm)).To(ContainSubstring("env: prod"))

	// A value the file holds already, written differently but reading the
	// same ("3" must stay quoted), is no change either: the file keeps its
	// bytes.
	quoted := testPkg(map[string]string{"package-context.yaml": strings.Replace(contextCM, "keep: me", `replicas: "3"`, 1)})
	before, _ := quoted.File("package-context.yaml")
	changed, err = ApplyContext(quoted, &configv1alpha1.PackageContext{Data: map[string]string{"replicas": "3", "name": "app"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	after, _ := quoted.File("package-context.yaml")
	g.Expect(string(after)).To(Equal(string(before)))

	_, err = ApplyContext(pkg.New(map[string][]byte{"Kptfile": []byte(upstreamKptfile)}), &configv1alpha1.PackageContext{Data: map[string]string{"a": "b"}})
	g.Expect(err).To(MatchError(ErrNoPackageContext))
	changed, err = ApplyContext(pkg.New(map[string][]byte{"Kptfile": []byte(upstreamKptfile)}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "no package context needed when none is asked for")
}

func names(t *testing.T, p *pkg.Package) []string {
	kf, err := p.Kptfile()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if kf.Pipeline != nil {
		for _, f := range kf.Pipeline.Mutators {
			out = append(out, f.Name)
		}
		for _, f := range kf.Pipeline.Validators {
			out = append(out, "validator:"+f.Name)
		}
	}
	return out
}

func TestApplyPipeline(t *testing.T) {
	g := NewWithT(t)
	p := testPkg(nil)
	spec := &kptfilev1.Pipeline{
		Mutators:   []kptfilev1.Function{{Image: "gcr.io/kpt-fn/set-namespace:v0.1", Name: "my-func", ConfigMap: map[string]string{"namespace": "my-ns"}}, {Image: "gcr.io/kpt-fn/set-labels:v0.1", ConfigMap: map[string]string{"app": "foo"}}},
		Validators: []kptfilev1.Function{{Image: "kubeval"}},
	}
	changed, err := ApplyPipeline(p, "my-pv", spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(names(t, p)).To(Equal([]string{"PackageVariant.my-pv.my-func.0", "PackageVariant.my-pv.1", "setters", "validator:PackageVariant.my-pv.0"}), "the spec's example names, prepended")

	// A second variant, whose name starts like the first's, chains its functions.
	_, err = ApplyPipeline(p, "my-pv.b", &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-annotations", ConfigMap: map[string]string{"a": "b"}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(t, p)[0]).To(Equal("PackageVariant.my-pv.b.0"))

	// Re-applying the first variant with one function replaces exactly its own.
	_, err = ApplyPipeline(p, "my-pv", &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", Name: "ns", ConfigMap: map[string]string{"namespace": "other"}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(t, p)).To(Equal([]string{"PackageVariant.my-pv.ns.0", "PackageVariant.my-pv.b.0", "setters"}), "my-pv.b's PackageVariant.my-pv.b.0 is not my-pv's, though its name could parse as such")

	// Nothing to change: nothing written.
	before, _ := p.File("Kptfile")
	changed, err = ApplyPipeline(p, "my-pv", &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", Name: "ns", ConfigMap: map[string]string{"namespace": "other"}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	after, _ := p.File("Kptfile")
	g.Expect(string(after)).To(Equal(string(before)))

	// Removing the pipeline from the spec removes the variant's functions.
	_, err = ApplyPipeline(p, "my-pv", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(t, p)).To(Equal([]string{"PackageVariant.my-pv.b.0", "setters"}))
	kf, _ := p.File("Kptfile")
	g.Expect(string(kf)).To(ContainSubstring(`{"my-pv.b":["PackageVariant.my-pv.b.0"]}`))
}

const endpoints = `apiVersion: example.com/v1
kind: ServiceEndpoints
metadata:
  name: endpoints
  annotations:
    kpt.dev/config-injection: required
    config.kubernetes.io/local-config: "true"
spec:
  database: placeholder
`

const defaults = `apiVersion: v1
kind: ConfigMap
metadata:
  name: defaults
  annotations:
    kpt.dev/config-injection: optional
data:
  color: blue
`

func objects(t *testing.T, yaml string) *StaticObjects {
	objs, err := ReadObjects([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return &StaticObjects{Objects: objs}
}

const clusterObjects = `apiVersion: example.com/v1
kind: ServiceEndpoints
metadata:
  name: useast1-endpoints
spec:
  database: db.useast1.example.com
  cache: cache.useast1.example.com
---
apiVersion: example.com/v1
kind: ServiceEndpoints
metadata:
  name: uswest1-endpoints
spec:
  database: db.uswest1.example.com
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: regional
data:
  color: red
`

func TestInjectConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		files     map[string]string
		injectors []configv1alpha1.InjectionSelector
		objects   string
		ok        bool
		contains  map[string][]string // file -> substrings
		message   string
	}{
		{name: "first matching injector wins, GVK filters apply",
			files: map[string]string{"ep.yaml": endpoints, "defaults.yaml": defaults},
			injectors: []configv1alpha1.InjectionSelector{
				{Kind: ptr.To("ConfigMap"), Name: "useast1-endpoints"},
				{Name: "useast1-endpoints"},
				{Name: "uswest1-endpoints"},
				{Kind: ptr.To("ConfigMap"), Name: "regional"},
			},
			objects: clusterObjects, ok: true,
			contains: map[string][]string{
				"ep.yaml":       {"database: db.useast1.example.com", "cache: cache.useast1.example.com", "kpt.dev/injected-resource-name: useast1-endpoints"},
				"defaults.yaml": {"color: red", "kpt.dev/injected-resource-name: regional"},
				"Kptfile":       {"conditionType: config.injection.ServiceEndpoints.endpoints", "type: config.injection.ServiceEndpoints.endpoints\n    status: \"True\"", "type: config.injection.ConfigMap.defaults\n    status: \"True\""},
			},
			message: "injected ConfigMap/defaults from regional, ServiceEndpoints/endpoints from useast1-endpoints"},
		{name: "a required point without a match",
			files:     map[string]string{"ep.yaml": endpoints, "defaults.yaml": defaults},
			injectors: []configv1alpha1.InjectionSelector{{Name: "nowhere"}},
			objects:   clusterObjects, ok: false,
			contains: map[string][]string{"ep.yaml": {"database: placeholder"}, "Kptfile": {"reason: NotInjected"}},
			message:  "required injection points not injected: ServiceEndpoints/endpoints: no in-cluster object to inject: tried injectors nowhere: no ServiceEndpoints of those names in namespace default"},
		{name: "no injectors",
			files:   map[string]string{"ep.yaml": endpoints},
			objects: clusterObjects, ok: false,
			message: "ServiceEndpoints/endpoints: no in-cluster object to inject: spec.injectors is empty"},
		{name: "no injector of the kind",
			files:     map[string]string{"ep.yaml": endpoints},
			injectors: []configv1alpha1.InjectionSelector{{Kind: ptr.To("ConfigMap"), Name: "regional"}, {Group: ptr.To("other.example.com"), Name: "useast1-endpoints"}},
			objects:   clusterObjects, ok: false,
			message: "ServiceEndpoints/endpoints: no in-cluster object to inject: none of the 2 injectors selects kind ServiceEndpoints (example.com/v1)"},
		{name: "a Secret is never injected",
			files:     map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  annotations:\n    kpt.dev/config-injection: required\n"},
			injectors: []configv1alpha1.InjectionSelector{{Name: "creds"}},
			objects:   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: hunter2\n", ok: false,
			contains: map[string][]string{"s.yaml": {"name: creds"}},
			message:  "Secret/creds: Secrets are not read: their data would be copied into git or onto other objects; an administrator can allow it by adding Secret to --readable-kinds"},
		{name: "an injector naming another namespace",
			files:     map[string]string{"ep.yaml": endpoints},
			injectors: []configv1alpha1.InjectionSelector{{Name: "tenant-b/useast1-endpoints"}},
			objects:   clusterObjects, ok: false,
			message: "ServiceEndpoints/endpoints: no in-cluster object to inject: injectors tenant-b/useast1-endpoints name objects of other namespaces, which are never read (injectors name objects in the variant's namespace default)"},
		{name: "a missing schema",
			files:     map[string]string{"ep.yaml": endpoints},
			injectors: []configv1alpha1.InjectionSelector{{Name: "useast1-endpoints"}},
			objects:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", ok: false,
			message: "required injection points not injected: ServiceEndpoints/endpoints: the cluster has no schema for example.com/v1, Kind=ServiceEndpoints"},
		{name: "a schema without spec",
			files:     map[string]string{"ep.yaml": endpoints},
			injectors: []configv1alpha1.InjectionSelector{{Name: "useast1-endpoints"}},
			objects:   "apiVersion: example.com/v1\nkind: ServiceEndpoints\nmetadata:\n  name: useast1-endpoints\nstatus:\n  x: y\n", ok: false,
			message: "the schema of example.com/v1, Kind=ServiceEndpoints has no spec field to inject"},
		{name: "an invalid annotation value",
			files:   map[string]string{"ep.yaml": strings.Replace(endpoints, "required", "mandatory", 1)},
			objects: clusterObjects, ok: false,
			message: `ServiceEndpoints endpoints: annotation kpt.dev/config-injection must be required or optional, not "mandatory"`},
		{name: "ambiguous injection points",
			files:   map[string]string{"ep.yaml": endpoints, "ep2.yaml": strings.Replace(endpoints, "example.com/v1", "other.example.com/v1", 1)},
			objects: clusterObjects, ok: false,
			message: "injection points are ambiguous: 2 resources (example.com/v1, other.example.com/v1) share condition config.injection.ServiceEndpoints.endpoints"},
		{name: "no injection points",
			files: map[string]string{}, objects: clusterObjects, ok: true, message: "the package has no injection points"},
		{name: "two optional points not injected",
			files: map[string]string{"ep.yaml": strings.Replace(endpoints, "required", "optional", 1),
				"ep2.yaml": strings.Replace(strings.Replace(endpoints, "required", "optional", 1), "name: endpoints", "name: other", 1)},
			objects: clusterObjects, ok: true,
			message: "2 optional injection point(s) left as they are (no injector names an object for them): ServiceEndpoints/endpoints, ServiceEndpoints/other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// p shares its parse with orig: injection edits copies.
			orig := testPkg(tc.files)
			shared := sharedText(t, orig)
			p := orig.DeepCopy()
			res, err := InjectConfig(ctx, p, tc.injectors, objects(t, tc.objects))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sharedText(t, orig)).To(Equal(shared), "the shared parse is not modified")
			g.Expect(res.OK()).To(Equal(tc.ok))
			g.Expect(res.Message()).To(ContainSubstring(tc.message))
			for file, subs := range tc.contains {
				data, _ := p.File(file)
				for _, s := range subs {
					g.Expect(string(data)).To(ContainSubstring(s), file)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	pv := &configv1alpha1.PackageVariant{Spec: configv1alpha1.PackageVariantSpec{
		Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "latest", Tag: "stable"},
		Downstream:     &configv1alpha1.Downstream{Repo: "cluster-01"},
		DeletionPolicy: "keep",
		PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"name": "x"}, RemoveKeys: []string{"package-path"}},
		Pipeline:       &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "x", Name: "a.b"}, {}}},
		Injectors:      []configv1alpha1.InjectionSelector{{}},
	}}
	var msgs []string
	for _, e := range Validate(pv) {
		msgs = append(msgs, e.Error())
	}
	g.Expect(msgs).To(ConsistOf(
		`spec.upstream: Invalid value: "": exactly one of revision, workspaceName, tag and versionRange must be set`,
		`spec.upstream.revision: Invalid value: "latest": must be a revision number from 0 to 999999999, such as 3 or "v3", or -1 for the latest published revision`,
		`spec.downstream.package: Required value`,
		`spec.deletionPolicy: Unsupported value: "keep": supported values: "delete", "orphan"`,
		`spec.packageContext.data[name]: Invalid value: "name": the key is reserved`,
		`spec.packageContext.removeKeys[0]: Invalid value: "package-path": the key is reserved`,
		`spec.pipeline.mutators[0].name: Invalid value: "a.b": function names must not contain '.'`,
		`spec.pipeline.mutators[1]: Invalid value: "": exactly one of image and exec must be set`,
		`spec.injectors[0].name: Required value`,
	))

	// Labels and annotations the PackageRevision object could not carry
	// are refused before anything is written, quoting at most the start of
	// a long value.
	pv = &configv1alpha1.PackageVariant{Spec: configv1alpha1.PackageVariantSpec{
		Upstream:    &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
		Downstream:  &configv1alpha1.Downstream{Repo: "cluster-01", Package: "app"},
		Labels:      map[string]string{"team": strings.Repeat("x", 70000), "bad key!": "v"},
		Annotations: map[string]string{"also bad": "v"},
	}}
	msgs = nil
	for _, e := range Validate(pv) {
		msgs = append(msgs, e.Error())
	}
	g.Expect(msgs).To(HaveLen(3))
	g.Expect(strings.Join(msgs, "\n")).To(And(
		ContainSubstring(`spec.labels: Invalid value: "xxxxxxxxxx`),
		ContainSubstring(`... (69900 bytes more)": must be no more than 63 bytes`),
		ContainSubstring(`spec.labels: Invalid value: "bad key!"`),
		ContainSubstring(`spec.annotations: Invalid value: "also bad"`)))
	g.Expect(len(strings.Join(msgs, "\n"))).To(BeNumerically("<", 1500))

	// A variant of its own upstream package (the CRD refuses it too).
	pv = &configv1alpha1.PackageVariant{Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "-1"},
		Downstream: &configv1alpha1.Downstream{Repo: "catalog", Package: "app"},
	}}
	g.Expect(Validate(pv).ToAggregate()).To(MatchError(`spec.downstream: Invalid value: "catalog/app": the downstream package is the upstream package: a package cannot be a variant of itself; name another package or repository`))
	pv.Spec.Downstream.Package = "app-variant"
	g.Expect(Validate(pv)).To(BeEmpty())

	// Paths that leave the repository, and injectors naming another
	// namespace, are refused with the field named (the CRD refuses them
	// too; this is for objects that bypassed it).
	pv = &configv1alpha1.PackageVariant{Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "/etc", Revision: "1"},
		Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "../../escape"},
		Injectors:  []configv1alpha1.InjectionSelector{{Name: "tenant-b/endpoints-b"}},
	}}
	msgs = nil
	for _, e := range Validate(pv) {
		msgs = append(msgs, e.Error())
	}
	g.Expect(msgs).To(ConsistOf(
		`spec.upstream.package: Invalid value: "/etc": must be a relative slash-separated path of simple names, with no empty, '.' or '..' segments`,
		`spec.downstream.package: Invalid value: "../../escape": must be a relative slash-separated path of simple names, with no empty, '.' or '..' segments`,
		`spec.injectors[0].name: Invalid value: "tenant-b/endpoints-b": injectors name objects in the variant's own namespace: give the object's name alone; objects of other namespaces are never read`,
	))
}

// sharedText prints the resources of a package as its parse holds them
// (shared by its copies), to tell whether an edit reached them.
func sharedText(t *testing.T, p *pkg.Package) string {
	t.Helper()
	views, err := p.Views()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, v := range views {
		b.WriteString(v.Node.MustString())
	}
	return b.String()
}
