package packagevariant_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/reconciler"
)

// A status computed for a spec that moved on while the variant was being
// reconciled (someone edited it: the write conflicts, the variant is read
// again) is not written: it would say the new generation is observed and
// Ready before anything was done for it. A status of the current
// generation is written.
func TestStatus_notWrittenForASpecThatMovedOn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "stale")
	// In a shard no replica of this suite owns: the test is its only
	// writer.
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: ns, Labels: map[string]string{configv1alpha1.ShardLabel: "nobody"}},
		Spec: configv1alpha1.PackageVariantSpec{Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "1"},
			Downstream: &configv1alpha1.Downstream{Repo: "edge", Package: "app"}}}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	read := pv.DeepCopy() // what a reconcile started from
	edited := pv.DeepCopy()
	edited.Spec.Upstream.Revision = "2"
	g.Expect(k8sClient.Update(ctx, edited)).To(Succeed())
	g.Expect(edited.Generation).To(Equal(read.Generation + 1))

	r := &packagevariant.Reconciler{Client: k8sClient, APIReader: k8sClient, Status: reconciler.NewStatusWriter(k8sClient, k8sClient, nil)}
	g.Expect(r.WriteEnsuredStatus(ctx, read)).To(Succeed())
	got := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(int64(-1)), "nothing claims the edited spec is observed: the default of a status never written")
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeNil())

	g.Expect(r.WriteEnsuredStatus(ctx, got.DeepCopy())).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(edited.Generation))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue())
}
