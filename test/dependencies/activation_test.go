package dependencies

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// rangeVariant is a variant of app following a version range.
func rangeVariant(ns, rng string, policy configv1alpha1.UpdatePolicy) *configv1alpha1.PackageVariant {
	pv := variant(ns, "app", "app", "", nil)
	pv.Spec.Upstream = &configv1alpha1.Upstream{Repo: "catalog", Package: "app", VersionRange: rng, UpdatePolicy: policy}
	return pv
}

// upstreamCommit is the upstream commit the variant's draft records.
func upstreamCommit(g Gomega, ns string) string {
	pr := draftOf(g, ns, "app")
	g.Expect(pr.Status.UpstreamLock).NotTo(BeNil())
	g.Expect(pr.Status.UpstreamLock.Git).NotTo(BeNil())
	return pr.Status.UpstreamLock.Git.Commit
}

func commitOf(t *testing.T, c *catalog, revision int) string {
	rev, err := c.st.Get(context.Background(), "app", "", revision)
	if err != nil {
		t.Fatal(err)
	}
	return rev.Commit
}

// Automatic: the variant follows the newest published revision in its
// range, by semver tag; a newer one outside the range is not taken.
func TestActivation_automatic(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "v1.0.0", nil)
	cat.publish("app", "v1.1.0", nil)
	g.Expect(k8sClient.Create(ctx, rangeVariant(ns, "^1", ""))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPV(g, ns, "app").Status.UpstreamVersion).To(Equal("1.1.0"))
		g.Expect(upstreamCommit(g, ns)).To(Equal(commitOf(t, cat, 2)))
	}, timeout, interval).Should(Succeed())

	cat.publish("app", "v2.0.0", nil)
	g.Consistently(func(g Gomega) {
		g.Expect(getPV(g, ns, "app").Status.UpstreamVersion).To(Equal("1.1.0"))
	}, "3s", interval).Should(Succeed())

	cat.publish("app", "v1.2.0", nil)
	g.Eventually(func(g Gomega) {
		g.Expect(getPV(g, ns, "app").Status.UpstreamVersion).To(Equal("1.2.0"))
		g.Expect(upstreamCommit(g, ns)).To(Equal(commitOf(t, cat, 4)))
	}, timeout, interval).Should(Succeed())
}

// Manual: the variant stays on the revision its downstream was made from
// and reports the newer one in range; a range that leaves it behind moves
// it.
func TestActivation_manual(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "v1.0.0", nil)
	g.Expect(k8sClient.Create(ctx, rangeVariant(ns, "^1", configv1alpha1.UpdatePolicyManual))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPV(g, ns, "app").Status.UpstreamVersion).To(Equal("1.0.0"))
		g.Expect(upstreamCommit(g, ns)).To(Equal(commitOf(t, cat, 1)))
	}, timeout, interval).Should(Succeed())

	cat.publish("app", "v1.1.0", nil)
	g.Eventually(func(g Gomega) {
		pv := getPV(g, ns, "app")
		c := condition(g, pv, configv1alpha1.UpdateAvailableCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(HavePrefix("app 1.1.0 (revision 2) is published in range ^1; the variant stays on 1.0.0"))
		g.Expect(pv.Status.UpstreamVersion).To(Equal("1.0.0"))
		g.Expect(condition(g, pv, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	g.Expect(upstreamCommit(g, ns)).To(Equal(commitOf(t, cat, 1)))

	// The range moves past the revision it is on: it takes the newest.
	g.Eventually(func(g Gomega) {
		pv := getPV(g, ns, "app")
		patch := client.MergeFromWithOptions(pv.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pv.Spec.Upstream.VersionRange = "~1.1"
		g.Expect(k8sClient.Patch(ctx, pv, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		pv := getPV(g, ns, "app")
		g.Expect(pv.Status.UpstreamVersion).To(Equal("1.1.0"))
		g.Expect(pv.Status.Conditions).NotTo(ContainElement(HaveField("Type", configv1alpha1.UpdateAvailableCondition)))
		g.Expect(upstreamCommit(g, ns)).To(Equal(commitOf(t, cat, 2)))
	}, timeout, interval).Should(Succeed())
}

// A range nothing matches stalls the variant with what is published.
func TestActivation_noMatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "v1.0.0", nil)
	g.Expect(k8sClient.Create(ctx, rangeVariant(ns, ">=3", ""))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(g, getPV(g, ns, "app"), configv1alpha1.StalledCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("spec.upstream.versionRange: Repository catalog has no published revision in range >=3 of package app (published versions: 1.0.0)"))
	}, timeout, interval).Should(Succeed())
}
