package dependencies

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
)

// A rollout that publishes a variant's proposal publishes the
// dependencies Scion installed for it in the same wave (proposing their
// drafts): the dependant is published after them, never before.
func TestRollout_publishesDependencies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("base", "", nil)
	cat.publish("lib", "", []requires{{"base", ""}})
	cat.publish("app", "", []requires{{"lib", ""}})
	pv := variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true})
	pv.Spec.Labels = map[string]string{"app": "demo"}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	var app string
	g.Eventually(func(g Gomega) {
		got := getPV(g, ns, "app")
		g.Expect(got.Status.Dependencies).To(HaveLen(2))
		app = draftOf(g, ns, "app").Name
	}, timeout, interval).Should(Succeed())
	setLifecycle(g, ns, app, porchv1alpha1.LifecycleProposed)
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, pr)).To(Succeed())
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecycleProposed)))
	}, timeout, interval).Should(Succeed())

	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: configv1alpha1.PackageRolloutSpec{RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}}}}
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	published := func(g Gomega, pvName string) *porchv1alpha1.PackageRevision {
		pr := draftOf(g, ns, pvName)
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecyclePublished)), pvName)
		return pr
	}
	g.Eventually(func(g Gomega) {
		cur := &configv1alpha1.PackageRollout{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), cur)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue(), "%v", cur.Status.Conditions)
		appPR := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, appPR)).To(Succeed())
		// On failure, say what the rollout counted and what the object
		// asked for and showed.
		g.Expect(appPR.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecyclePublished)),
			"rollout waves %+v; %s spec.lifecycle %s, generation %d, observed %d, conditions %+v",
			cur.Status.Waves, app, appPR.Spec.Lifecycle, appPR.Generation, appPR.Status.ObservedGeneration, appPR.Status.Conditions)
		// It was published through its gate: its dependencies first.
		gate := prCondition(appPR, configv1alpha1.DependenciesReadinessGate)
		g.Expect(gate).NotTo(BeNil())
		g.Expect(gate.Status).To(Equal(porchv1alpha1.ConditionStatus("True")))
		for _, dep := range []string{"lib", "base"} {
			pr := published(g, pkgdeps.DependencyVariantName("cluster-01", dep))
			g.Expect(pr.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "scion-rollout/"+ns+"/app"))
		}
	}, timeout, interval).Should(Succeed())
}
