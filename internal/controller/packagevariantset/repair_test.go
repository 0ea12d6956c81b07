package packagevariantset_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
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
	pvs := fourClusterSet(f.ns, "repairs")
	g.Expect(k8sClient.Create(ctx, pvs)).To(Succeed())
	var before map[string]configv1alpha1.PackageVariant
	g.Eventually(func(g Gomega) {
		var pairs []string
		before, pairs = variants(g, pvs)
		g.Expect(pairs).To(HaveLen(4))
		got := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pvs), got)).To(Succeed())
		g.Expect(got.Status.Summary).NotTo(BeNil())
		g.Expect(got.Status.Summary.Ready).To(Equal(4))
	}, timeout, interval).Should(Succeed())
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
	g.Eventually(func() error {
		cur := &configv1alpha1.PackageVariant{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&edited), cur); err != nil {
			return err
		}
		cur.Spec.Labels = map[string]string{"edited": "by-hand"}
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
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
