package packagevariantset_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/metrics"
)

// A person deleting or editing one generated variant costs the set a look
// at that variant: it is created again or set back, and the set's targets
// are not expanded again. The set's summary follows the deletion.
func TestSet_repairsOneVariantWithoutExpanding(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t)
	pvs, before := readyFourClusterSet(g, f, "repairs")
	expansions := testutil.ToFloat64(metrics.SetExpansions.WithLabelValues(f.ns, pvs.Name))
	g.Expect(expansions).To(BeNumerically(">=", 1))

	// A person deletes one variant: it comes back, under a new UID.
	gone := before["cluster-02/foo"]
	g.Expect(k8sClient.Delete(ctx, &gone)).To(Succeed())
	g.Eventually(func(g Gomega) {
		after, pairs := variants(g, pvs)
		g.Expect(pairs).To(HaveLen(4))
		g.Expect(after["cluster-02/foo"].UID).NotTo(Equal(gone.UID))
	}, timeout, interval).Should(Succeed())

	// A person edits another one's spec: it is set back.
	edited := before["cluster-03/foo"]
	updateVariant(g, &edited, func(pv *configv1alpha1.PackageVariant) { pv.Spec.Labels = map[string]string{"edited": "by-hand"} })
	g.Eventually(func(g Gomega) {
		after, _ := variants(g, pvs)
		g.Expect(after["cluster-03/foo"].UID).To(Equal(edited.UID))
		g.Expect(after["cluster-03/foo"].Spec).To(Equal(edited.Spec))
	}, timeout, interval).Should(Succeed())

	g.Expect(testutil.ToFloat64(metrics.SetExpansions.WithLabelValues(f.ns, pvs.Name))).To(Equal(expansions), "no expansion for a repair")
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(f.ns))).To(Succeed())
		var notes []string
		for _, e := range events.Items {
			if e.Regarding.Name == pvs.Name && e.Reason == "Repaired" {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ConsistOf(
			"PackageVariant "+gone.Name+" was deleted: created again",
			"PackageVariant "+edited.Name+" differed from the set's template: set back"))
	}, timeout, interval).Should(Succeed())
	// The summary counts the new variant once it is Ready.
	g.Eventually(func(g Gomega) {
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.Summary.Ready).To(Equal(4))
		g.Expect(condition(g, pvs, configv1alpha2.VariantsReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
}

// A variant the set wants is held in deletion (another controller's
// finalizer) while the set's spec changes: the set waits for it, saying
// so (VariantDeleting, no failure, no Warning), updates the others, and
// creates it again once it is gone.
func TestSet_waitsForVariantBeingDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t)
	pvs, before := readyFourClusterSet(g, f, "held")

	const hold = "example.com/hold"
	held := before["cluster-02/foo"]
	updateVariant(g, &held, func(pv *configv1alpha1.PackageVariant) { pv.Finalizers = append(pv.Finalizers, hold) })
	g.Expect(k8sClient.Delete(ctx, &held)).To(Succeed())
	g.Eventually(func() error {
		cur := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), cur); err != nil {
			return err
		}
		cur.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{Labels: map[string]string{"tier": "gold"}}
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		ready := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(configv1alpha2.VariantDeletingReason))
		g.Expect(ready.Message).To(ContainSubstring(held.Name + " is being deleted"))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, configv1alpha1.ReconcilingCondition)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, configv1alpha1.StalledCondition)).To(BeFalse())
		// The others follow the new template meanwhile.
		after, _ := variants(g, pvs)
		for _, key := range []string{"cluster-01/foo", "cluster-03/foo", "cluster-04/foo"} {
			g.Expect(after[key].Spec.Labels).To(HaveKeyWithValue("tier", "gold"), key)
		}
	}, timeout, interval).Should(Succeed())
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(f.ns))).To(Succeed())
	for _, e := range events.Items {
		if e.Regarding.Name == pvs.Name {
			g.Expect(e.Type).NotTo(Equal("Warning"), "%s: %s", e.Reason, e.Note)
		}
	}

	// The other controller lets go: the variant is created again, with
	// the new template, and the set is Ready.
	updateVariant(g, &held, func(pv *configv1alpha1.PackageVariant) {
		pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == hold })
	})
	g.Eventually(func(g Gomega) {
		after, _ := variants(g, pvs)
		g.Expect(after).To(HaveLen(4))
		g.Expect(after["cluster-02/foo"].UID).NotTo(Equal(held.UID))
		g.Expect(after["cluster-02/foo"].Spec.Labels).To(HaveKeyWithValue("tier", "gold"))
		g.Expect(condition(g, pvs, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(g, pvs, configv1alpha2.VariantsReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
}

// readyFourClusterSet creates fourClusterSet(name) and waits for its four
// variants to be Ready; it returns the set and its variants by
// "<repository>/<package>".
func readyFourClusterSet(g *WithT, f *fleet, name string) (*configv1alpha2.PackageVariantSet, map[string]configv1alpha1.PackageVariant) {
	pvs := fourClusterSet(f.ns, name)
	g.Expect(k8sClient.Create(context.Background(), pvs)).To(Succeed())
	var before map[string]configv1alpha1.PackageVariant
	g.Eventually(func(g Gomega) {
		var pairs []string
		before, pairs = variants(g, pvs)
		g.Expect(pairs).To(HaveLen(4))
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.Summary).NotTo(BeNil())
		g.Expect(got.Status.Summary.Ready).To(Equal(4))
	}, timeout, interval).Should(Succeed())
	return pvs, before
}

// updateVariant changes a variant as a person would: read, change, update,
// again on a conflict.
func updateVariant(g *WithT, pv *configv1alpha1.PackageVariant, change func(*configv1alpha1.PackageVariant)) {
	g.Eventually(func() error {
		cur := &configv1alpha1.PackageVariant{}
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pv), cur); err != nil {
			return err
		}
		change(cur)
		return k8sClient.Update(context.Background(), cur)
	}, timeout, interval).Should(Succeed())
}
