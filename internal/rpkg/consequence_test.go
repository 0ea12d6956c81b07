package rpkg

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// Deleting a variant's revision says the variant makes it again; a
// revision nobody writes has no consequence to tell.
func TestConsequence(t *testing.T) {
	g := NewWithT(t)
	yes := true
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-01.app.v1"},
		Spec:       porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "cluster-01"},
	}
	g.Expect(Consequence(pr)).To(BeEmpty())
	pr.OwnerReferences = []metav1.OwnerReference{{Kind: "PackageVariant", Name: "app-01", Controller: &yes}}
	g.Expect(Consequence(pr)).To(Equal("PackageVariant app-01 writes package app in cluster-01 and makes a new draft of it from its upstream; to remove the package for good, delete the PackageVariant (its deletionPolicy decides what happens to its revisions)"))
}
