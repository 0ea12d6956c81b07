package packagevariantset

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// A set's writes go out repository by repository, whatever order its
// targets expand in, so that one repository's drafts arrive together.
func TestByDownstream(t *testing.T) {
	g := NewWithT(t)
	pv := func(name, repo string) *configv1alpha1.PackageVariant {
		return &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: configv1alpha1.PackageVariantSpec{Downstream: &configv1alpha1.Downstream{Repo: repo, Package: name}}}
	}
	// Target by target, as expansion yields them.
	in := []*configv1alpha1.PackageVariant{pv("a-1", "cluster-1"), pv("a-2", "cluster-2"), pv("b-1", "cluster-1"), pv("b-2", "cluster-2"), {ObjectMeta: metav1.ObjectMeta{Name: "x"}}}
	var names []string
	for _, p := range byDownstream(in) {
		names = append(names, p.Name)
	}
	g.Expect(names).To(Equal([]string{"x", "a-1", "b-1", "a-2", "b-2"}))
	g.Expect(in[1].Name).To(Equal("a-2"), "the input is left as it was")
}
