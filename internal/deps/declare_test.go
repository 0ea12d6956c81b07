package deps

import (
	"testing"

	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
)

const testKptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
  - name: v1beta1
    served: false
    storage: false
  - name: v2
    served: true
    storage: false
`

func declFile(spec string) string {
	return `apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageDependencies
metadata:
  name: deps
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
` + spec
}

func TestParsePackage(t *testing.T) {
	g := NewWithT(t)
	p := pkg.New(map[string][]byte{
		"Kptfile":   []byte(testKptfile),
		"crd.yaml":  []byte(widgetCRD),
		"deps.yaml": []byte(declFile("  requires:\n  - package: {name: lib, version: \">=1.2.0 <2.0.0\"}\n  - gvk: {apiVersion: cert-manager.io/v1, kind: Certificate}\n  - anyOf:\n    - package: {name: postgres}\n    - gvk: {apiVersion: v1, kind: Database}\n  - package: {name: metrics, version: ^2}\n    optional: true\n  provides:\n  - {apiVersion: networking.k8s.io/v1, kind: Ingress}\n")),
		// A subpackage is a package of its own: its CRD is not this one's.
		"sub/Kptfile": []byte(testKptfile),
		"sub/crd.yaml": []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true, storage: true}]
`),
	})
	d, err := ParsePackage(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.InstallationType).To(Equal(configv1alpha1.OnePerRepository))
	g.Expect(d.Provides).To(Equal([]string{"example.com/v1/Widget", "example.com/v2/Widget", "networking.k8s.io/v1/Ingress"}))
	var reqs []string
	for _, r := range d.Requires {
		s := r.String()
		if r.Optional {
			s += " (optional)"
		}
		reqs = append(reqs, s)
	}
	g.Expect(reqs).To(Equal([]string{"lib >=1.2.0 <2.0.0", "kind cert-manager.io/v1/Certificate", "one of (postgres, kind v1/Database)", "metrics ^2 (optional)"}))

	// No declaration: requires nothing, provides its CRDs.
	d, err = ParsePackage(pkg.New(map[string][]byte{"Kptfile": []byte(testKptfile), "crd.yaml": []byte(widgetCRD)}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Requires).To(BeEmpty())
	g.Expect(d.Provides).To(Equal([]string{"example.com/v1/Widget", "example.com/v2/Widget"}))
	g.Expect(d.Declared).To(BeTrue(), "a kind has one provider")

	// No declaration and no kinds: copies at different versions
	// (tenant-ns v1 beside tenant-ns v2 during an upgrade) are tolerated.
	d, err = ParsePackage(pkg.New(map[string][]byte{"Kptfile": []byte(testKptfile), "ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: t}\n")}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Declared).To(BeFalse())

	// A declaration that does not say is onePerRepository, as documented.
	d, err = ParsePackage(pkg.New(map[string][]byte{"Kptfile": []byte(testKptfile), "deps.yaml": []byte(declFile("  requires: []\n"))}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.InstallationType).To(Equal(configv1alpha1.OnePerRepository))
	g.Expect(d.Declared).To(BeTrue())
}

func TestParsePackage_errors(t *testing.T) {
	for _, tc := range []struct {
		name, file, extra, want string
	}{
		{"two kinds in one requirement", declFile("  requires:\n  - package: {name: lib}\n    gvk: {apiVersion: v1, kind: Foo}\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0]: Invalid value: "package, gvk": exactly one of package, gvk and anyOf must be set, not package and gvk`},
		{"no kind in a requirement", declFile("  requires:\n  - optional: true\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0]: Required value: exactly one of package, gvk and anyOf must be set`},
		{"bad range", declFile("  requires:\n  - package: {name: lib, version: \">=1.2.x.y\"}\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0].package.version: Invalid value: ">=1.2.x.y": not a semver range: improper constraint: ">=1.2.x.y"`},
		{"unknown field", declFile("  requires:\n  - pakage: {name: lib}\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: [spec.requires[0].pakage: Unsupported value: "pakage": unknown field; known fields are package, gvk, anyOf, optional, spec.requires[0]: Required value: exactly one of package, gvk and anyOf must be set]`},
		{"unknown spec field", declFile("  require: []\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.require: Unsupported value: "require": unknown field; known fields are requires, provides, installationType`},
		{"escaping package name", declFile("  requires:\n  - package: {name: ../../etc}\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0].package.name: Invalid value: "../../etc": invalid package path "../../etc": use a relative slash-separated path of simple names`},
		{"gvk without kind", declFile("  provides:\n  - apiVersion: example.com/v1\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.provides[0].kind: Required value`},
		{"bad apiVersion", declFile("  requires:\n  - gvk: {apiVersion: a/b/c, kind: Foo}\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0].gvk.apiVersion: Invalid value: "a/b/c": must be group/version, or the version alone for the core group`},
		{"optional alternative", declFile("  requires:\n  - anyOf:\n    - package: {name: a}\n      optional: true\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.requires[0].anyOf[0].optional: Forbidden: an alternative of anyOf cannot be optional; make the anyOf optional instead`},
		{"installation type", declFile("  installationType: onePerCluster\n"), "",
			`deps.yaml: PackageDependencies deps is invalid: spec.installationType: Unsupported value: "onePerCluster": supported values: "onePerRepository", "noRestrictions"`},
		{"not local config", "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageDependencies\nmetadata:\n  name: deps\nspec: {}\n", "",
			`deps.yaml: PackageDependencies deps is invalid: metadata.annotations[config.kubernetes.io/local-config]: Required value: PackageDependencies is local configuration: annotate it config.kubernetes.io/local-config: "true" so it is never deployed`},
		{"noRestrictions with a CRD", declFile("  installationType: noRestrictions\n"), widgetCRD,
			`deps.yaml: PackageDependencies: spec.installationType: Invalid value: "noRestrictions": a package that provides kinds (example.com/v1/Widget, example.com/v2/Widget) is installed once per repository, since a kind has one provider`},
		{"two declarations", declFile("  requires: []\n"), declFile("  provides: []\n"),
			`extra.yaml: a package has one PackageDependencies object, and deps.yaml has one already`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{"Kptfile": []byte(testKptfile), "deps.yaml": []byte(tc.file)}
			if tc.extra != "" {
				files["extra.yaml"] = []byte(tc.extra)
			}
			_, err := ParsePackage(pkg.New(files))
			NewWithT(t).Expect(err).To(MatchError(tc.want))
		})
	}
}
