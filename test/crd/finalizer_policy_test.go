package crd

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
)

// The API server sets the controllers' finalizers when a PackageVariant, a
// PackageVariantSet or a Repository is created (config/policy/
// finalizers.yaml), so no controller write is spent adding them; other
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
