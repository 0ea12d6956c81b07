package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// What a careless user types gets an answer that helps: a namespace that
// does not exist is named, an empty one says so instead of printing a
// bare header, and a misspelt revision, set or rollout suggests the one
// meant.
func TestRpkg_carelessInput(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := setup(t)
	out, err := scion("no-such-namespace", "rpkg", "get")
	g.Expect(err).To(MatchError("namespace no-such-namespace does not exist"), out)
	out, err = scion(ns, "rpkg", "get")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(BeEmpty(), "no header without rows (the message goes to stderr)")

	out, err = scion(ns, "rpkg", "init", "base", "--repository", "catalog", "--workspace", "v1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	_, err = scion(ns, "rpkg", "propose", "catalog.bsae.v1")
	g.Expect(err).To(MatchError("package revision catalog.bsae.v1 not found in namespace " + ns + "; did you mean catalog.base.v1?"))
	_, err = scion(ns, "rpkg", "propose", "catalog.unrelated.v9")
	g.Expect(err).To(MatchError("package revision catalog.unrelated.v9 not found in namespace " + ns))
	_, err = scion(ns, "rpkg", "propose", "--variant-set", "regoinal-app")
	g.Expect(err).To(MatchError("PackageVariantSet regoinal-app not found in namespace " + ns))
	g.Expect(k8sClient.Create(context.Background(), &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "web-release", Namespace: ns},
		Spec: configv1alpha1.PackageRolloutSpec{RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Waves: []configv1alpha1.RolloutWave{{Name: "all"}}}})).To(Succeed())
	_, err = scion(ns, "rpkg", "approve", "--rollout", "web-relaese")
	g.Expect(err).To(MatchError("PackageRollout web-relaese not found in namespace " + ns + "; did you mean web-release?"))
}
