package crd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, func(e *testenv.Env) error {
		env, k8sClient = e, e.Client
		return nil
	}))
}

func newNamespace(t *testing.T) string { return env.Namespace(t, "test") }

// fixture reads a YAML fixture and returns it with the expected message
// from its "# expect: " first line.
func fixture(t *testing.T, path string) (*unstructured.Unstructured, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	expect := ""
	if first, _, ok := strings.Cut(string(data), "\n"); ok {
		expect, _ = strings.CutPrefix(first, "# expect: ")
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u, expect
}

func TestCRDs_validObjectsRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, tc := range []struct {
		file  string
		typed client.Object
		check func(g Gomega, obj client.Object)
	}{
		{"repository.yaml", &configv1alpha1.Repository{}, func(g Gomega, obj client.Object) {
			r := obj.(*configv1alpha1.Repository)
			g.Expect(r.Spec.Type).To(Equal(configv1alpha1.GitRepositoryType), "type defaults to git")
			g.Expect(r.Spec.Git.Branch).To(Equal("main"), "branch defaults to main")
			g.Expect(r.Spec.Git.SecretRef.Name).To(Equal("git-credentials"))
			g.Expect(r.Spec.Sync.Period.Duration.String()).To(Equal("5m0s"))
		}},
		{"packagerevision.yaml", &porchv1alpha1.PackageRevision{}, func(g Gomega, obj client.Object) {
			pr := obj.(*porchv1alpha1.PackageRevision)
			g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft), "lifecycle defaults to Draft")
			g.Expect(pr.Spec.Tasks[0].Clone.UpstreamRef.Name).To(Equal("catalog.base-ns.v3"))
		}},
		{"packagevariant.yaml", &configv1alpha1.PackageVariant{}, func(g Gomega, obj client.Object) {
			pv := obj.(*configv1alpha1.PackageVariant)
			g.Expect(pv.Spec.AdoptionPolicy).To(Equal(configv1alpha1.AdoptionPolicyAdoptNone))
			g.Expect(pv.Spec.DeletionPolicy).To(Equal(configv1alpha1.DeletionPolicyDelete))
			g.Expect(pv.Spec.Pipeline.Mutators[0].ConfigMap).To(HaveKeyWithValue("namespace", "my-ns"))
			g.Expect(*pv.Spec.Injectors[0].Kind).To(Equal("ServiceEndpoints"))
		}},
		{"packagevariantset.yaml", &configv1alpha2.PackageVariantSet{}, func(g Gomega, obj client.Object) {
			pvs := obj.(*configv1alpha2.PackageVariantSet)
			g.Expect(pvs.Spec.Upstream.Tag).To(Equal("stable"))
			g.Expect(pvs.Spec.Targets).To(HaveLen(3))
			g.Expect(pvs.Spec.Targets[1].RepositorySelector.MatchLabels).To(HaveKeyWithValue("region", "uswest1"))
			g.Expect(pvs.Spec.Targets[1].RepositorySelector.PackageNames).To(Equal([]string{"foo-a"}))
			g.Expect(pvs.Spec.Targets[1].Template.Pipeline.Mutators[0].ConfigMapExprs[0].Key).To(HaveValue(Equal("namespace")))
			g.Expect(pvs.Spec.Targets[2].ObjectSelector.Kind).To(Equal("Team"))
			g.Expect(pvs.Spec.Targets[2].ObjectSelector.MatchLabels).To(HaveKeyWithValue("org", "hr"))
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			g := NewWithT(t)
			u, _ := fixture(t, filepath.Join("testdata", "valid", tc.file))
			u.SetNamespace(ns)
			g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), tc.typed)).To(Succeed())
			tc.check(g, tc.typed)

			// The status subresource is writable on its own.
			g.Expect(k8sClient.Status().Patch(ctx, tc.typed, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"observedGeneration":1}}`)))).To(Succeed())
			back := &unstructured.Unstructured{}
			back.SetGroupVersionKind(u.GroupVersionKind())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), back)).To(Succeed())
			g.Expect(back.Object["status"]).To(HaveKeyWithValue("observedGeneration", BeEquivalentTo(1)))
		})
	}
}

// A new object reads status.observedGeneration -1 until its controller's
// first status write (none runs here), in a get and in a list, so that
// kstatus-based tools (Flux's health checks, kpt, Config Sync) see it in
// progress: without a status they would call it current. The first status
// write replaces it.
func TestCRDs_newObjectInProgress(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for _, file := range []string{"repository.yaml", "packagevariant.yaml", "packagevariantset.yaml", "ro-group.yaml"} {
		t.Run(file, func(t *testing.T) {
			g := NewWithT(t)
			u, _ := fixture(t, filepath.Join("testdata", "valid", file))
			u.SetNamespace(ns)
			g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
			observed := func(obj *unstructured.Unstructured) any {
				v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration")
				return v
			}

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
			g.Expect(got.GetGeneration()).To(BeEquivalentTo(1))
			g.Expect(observed(got)).To(BeEquivalentTo(-1))
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(u.GroupVersionKind())
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(observed(&list.Items[0])).To(BeEquivalentTo(-1))

			g.Expect(k8sClient.Status().Patch(ctx, got, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"observedGeneration":1}}`)))).To(Succeed())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
			g.Expect(observed(got)).To(BeEquivalentTo(1))
			g.Expect(k8sClient.Delete(ctx, got)).To(Succeed())
		})
	}
}

func TestCRDs_invalidObjectsRejected(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := NewWithT(t)
			u, expect := fixture(t, file)
			g.Expect(expect).NotTo(BeEmpty(), "the fixture names the expected message on its first line")
			u.SetNamespace(ns)
			err := k8sClient.Create(ctx, u)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(expect))
			g.Expect(err.Error()).To(ContainSubstring(u.GetName()), "the error names the object")
		})
	}
}

func TestPackageRevision_updateRules(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "r.app.ws", Namespace: ns},
		Spec:       porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "r", WorkspaceName: "ws"},
	}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())

	patch := func(body string) error {
		return k8sClient.Patch(ctx, pr.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(body)))
	}
	for _, tc := range []struct{ patch, message string }{
		{`{"spec":{"packageName":"other"}}`, "packageName is immutable"},
		{`{"spec":{"repository":"other"}}`, "repository is immutable"},
		{`{"spec":{"workspaceName":"other"}}`, "workspaceName is immutable"},
	} {
		err := patch(tc.patch)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.patch, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.message))
	}
	g.Expect(patch(`{"spec":{"lifecycle":"Proposed"}}`)).To(Succeed())
	g.Expect(patch(`{"spec":{"lifecycle":"Published","revision":1}}`)).To(Succeed())
	err := patch(`{"spec":{"lifecycle":"Draft"}}`)
	g.Expect(err).To(MatchError(ContainSubstring("a Published revision can only move to DeletionProposed")))
	err = patch(`{"spec":{"revision":2}}`)
	g.Expect(err).To(MatchError(ContainSubstring("revision is immutable once set")))
	g.Expect(patch(`{"spec":{"lifecycle":"DeletionProposed"}}`)).To(Succeed())
	g.Expect(patch(`{"spec":{"lifecycle":"Published"}}`)).To(Succeed())
}

// Manifests written for Porch give the revision as an integer; Scion's
// string forms mean the same revision.
func TestCRDs_revisionIntOrString(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, rev := range []string{`3`, `"3"`, `"v3"`} {
		g := NewWithT(t)
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata: {name: rev-%d, namespace: %s}
spec:
  upstream: {repo: catalog, package: foo, revision: %s}
  downstream: {repo: cluster-01, package: foo-%d}
`, i, ns, rev, i)), &u.Object)).To(Succeed())
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed(), rev)
		pv := &configv1alpha1.PackageVariant{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), pv)).To(Succeed())
		n, err := pv.Spec.Upstream.Revision.Number()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(3), rev)
		g.Expect(pv.Spec.Upstream.Revision.Ref()).To(Equal("v3"))
	}
	// Porch's -1 (the latest published revision, as Porch's own
	// manifests and load tests write it) applies; other negatives do not.
	create := func(name, rev string) error {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata: {name: %s, namespace: %s}
spec:
  upstream: {repo: catalog, package: foo, revision: %s}
  downstream: {repo: cluster-01, package: %s}
`, name, ns, rev, name)), &u.Object); err != nil {
			return err
		}
		return k8sClient.Create(ctx, u)
	}
	g := NewWithT(t)
	g.Expect(create("latest-int", "-1")).To(Succeed())
	g.Expect(create("latest-string", `"-1"`)).To(Succeed())
	pv := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "latest-int"}, pv)).To(Succeed())
	g.Expect(pv.Spec.Upstream.Revision.Latest()).To(BeTrue())
	for _, bad := range []string{"-2", `"-1x"`, `"v-1"`} {
		err := create("bad", bad)
		g.Expect(err).To(MatchError(ContainSubstring("spec.upstream.revision: Invalid value")), bad)
		g.Expect(err).To(MatchError(ContainSubstring("or -1 for the latest published revision")), bad)
	}
}
