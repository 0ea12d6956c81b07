package crd

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// The API server sets the controllers' finalizers when a PackageVariant, a
// PackageVariantSet or a Repository is created (config/policy/
// mutating.yaml), so no controller write is spent adding them; other
// finalizers are kept, ours is never doubled, and an update is left alone.
func TestFinalizerPolicy(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	g := NewWithT(t)
	create := func(file, name string, finalizers ...string) *unstructured.Unstructured {
		u, _ := fixture(t, filepath.Join("testdata", "valid", file))
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetFinalizers(finalizers)
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
		return u
	}
	for _, tc := range []struct {
		file, name string
		given      []string
		want       []string
	}{
		{"packagevariant.yaml", "pv-plain", nil, []string{configv1alpha1.PackageVariantFinalizer}},
		{"packagevariant.yaml", "pv-other", []string{"example.com/keep"}, []string{"example.com/keep", configv1alpha1.PackageVariantFinalizer}},
		{"packagevariant.yaml", "pv-ours", []string{configv1alpha1.PackageVariantFinalizer}, []string{configv1alpha1.PackageVariantFinalizer}},
		{"packagevariantset.yaml", "pvs-plain", nil, []string{configv1alpha2.PackageVariantSetFinalizer}},
		{"repository.yaml", "repo-plain", nil, []string{"config.porch.kpt.dev/repository"}},
	} {
		got := create(tc.file, tc.name, tc.given...)
		g.Expect(got.GetFinalizers()).To(Equal(tc.want), tc.name)
	}

	// Creation only: a finalizer removed later stays removed.
	pv := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pv-other"}, pv)).To(Succeed())
	pv.Finalizers = []string{"example.com/keep"}
	g.Expect(k8sClient.Update(ctx, pv)).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), pv)).To(Succeed())
	g.Expect(pv.Finalizers).To(Equal([]string{"example.com/keep"}))
}

// A package revision's storage object keeps no managed fields
// (config/policy/mutating.yaml): not when it is created, nor after a
// status write or an update, and a server-side apply (which records them
// anew) leaves none either. Objects of the public API keep theirs.
func TestRevisionStoragePolicy(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	g := NewWithT(t)
	storage := env.Storage
	untracked := func(pr *porchv1alpha1.PackageRevision, after string) {
		t.Helper()
		got := &porchv1alpha1.PackageRevision{}
		g.Expect(storage.Get(ctx, client.ObjectKeyFromObject(pr), got)).To(Succeed())
		g.Expect(got.ManagedFields).To(BeEmpty(), "after %s", after)
		g.Expect(pr.ManagedFields).To(BeEmpty(), "the answer to %s", after)
	}
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "r.app.ws", Namespace: ns, Labels: map[string]string{"a": "1"}},
		Spec:       porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "r", WorkspaceName: "ws"},
	}
	g.Expect(storage.Create(ctx, pr)).To(Succeed())
	untracked(pr, "the create")

	pr.Status.Commit = "0123456789abcdef0123456789abcdef01234567"
	pr.Status.Conditions = []porchv1alpha1.Condition{{Type: "Ready", Status: "True", Reason: "Synced"}}
	g.Expect(storage.Status().Update(ctx, pr)).To(Succeed())
	untracked(pr, "a status write")

	pr.Labels["a"] = "2"
	g.Expect(storage.Update(ctx, pr)).To(Succeed())
	untracked(pr, "an update")

	applied := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": porchv1alpha1.StorageGroupVersion.String(), "kind": "PackageRevision",
		"metadata": map[string]any{"name": pr.Name, "namespace": ns, "labels": map[string]any{"b": "1"}},
	}}
	g.Expect(storage.Patch(ctx, applied, client.Apply, client.FieldOwner("someone"))).To(Succeed())
	g.Expect(applied.GetLabels()).To(HaveKeyWithValue("b", "1"))
	g.Expect(applied.GetManagedFields()).To(BeEmpty(), "the answer to a server-side apply")
	untracked(pr, "a server-side apply")

	u, _ := fixture(t, filepath.Join("testdata", "valid", "packagevariant.yaml"))
	u.SetNamespace(ns)
	g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
	g.Expect(u.GetManagedFields()).NotTo(BeEmpty(), "a PackageVariant's managed fields")
}
