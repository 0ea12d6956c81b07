package dependencies

import (
	"context"
	"testing"
	"time"

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

// A rollout that rolls a variant's revision back holds the variant on the
// upstream revision before: the rolled-back content is not proposed again
// (UpdateAvailable, UpstreamHeld) until the upstream moves past it.
func TestRollout_rollbackHoldsUpstream(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "", nil)
	cat.publish("app", "bad", nil)
	pv := variant(ns, "app", "app", "1", nil)
	pv.Spec.Labels = map[string]string{"app": "held"}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	publishVariant(t, ns, "app")

	// The upstream moves to revision 2; its draft is proposed and rolled
	// out, and never becomes healthy.
	follow(g, ns, "app", "2")
	var draft string
	g.Eventually(func(g Gomega) {
		pr := draftOf(g, ns, "app")
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
		g.Expect(pr.Status.UpstreamLock).NotTo(BeNil())
		draft = pr.Name
	}, timeout, interval).Should(Succeed())
	setLifecycle(g, ns, draft, porchv1alpha1.LifecycleProposed)
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: configv1alpha1.PackageRolloutSpec{RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "held"}},
			Health:           &configv1alpha1.RolloutHealth{ConditionType: "example.com/synced"},
			ProgressDeadline: &metav1.Duration{Duration: 2 * time.Second}, RollbackOnFailure: true}}
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())

	g.Eventually(func(g Gomega) {
		cur := getPV(g, ns, "app")
		g.Expect(cur.Annotations).To(HaveKey(configv1alpha1.HoldUpstreamAnnotation))
		c := condition(g, cur, configv1alpha1.UpdateAvailableCondition)
		g.Expect(c.Reason).To(Equal(configv1alpha1.UpstreamHeldReason))
		g.Expect(c.Message).To(ContainSubstring("app revision 2"))
		g.Expect(c.Message).To(ContainSubstring("the variant stays on revision 1"))
		g.Expect(condition(g, cur, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		// The rollout says so in its status.
		got := &configv1alpha1.PackageRollout{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), got)).To(Succeed())
		stalled := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Message).To(ContainSubstring("rolled back: PackageVariant app stays on the upstream revision before"))
	}, timeout, interval).Should(Succeed())
	// Nothing with revision 2's content is proposed again: no draft, or
	// one made from revision 1.
	g.Consistently(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{porchv1alpha1.RepositoryLabel: "cluster-01"})).To(Succeed())
		for _, pr := range list.Items {
			if pr.Status.Lifecycle == porchv1alpha1.LifecycleDraft || pr.Status.Lifecycle == porchv1alpha1.LifecycleProposed {
				g.Expect(pr.Status.UpstreamLock.Git.Ref).NotTo(HaveSuffix("/v2"), "%s proposes the rolled-back content again", pr.Name)
			}
		}
	}, 3*time.Second, interval).Should(Succeed())

	// A fixed upstream revision is taken as usual.
	cat.publish("app", "fixed", nil)
	follow(g, ns, "app", "3")
	g.Eventually(func(g Gomega) {
		cur := getPV(g, ns, "app")
		g.Expect(cur.Status.Conditions).NotTo(ContainElement(HaveField("Reason", configv1alpha1.UpstreamHeldReason)))
		pr := draftOf(g, ns, "app")
		g.Expect(pr.Status.UpstreamLock.Git.Ref).To(HaveSuffix("/v3"))
	}, timeout, interval).Should(Succeed())
}

// follow moves a variant to an upstream revision, as a person editing it
// (or its set) would.
func follow(g Gomega, ns, name, revision string) {
	g.Eventually(func(g Gomega) {
		cur := getPV(g, ns, name)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Upstream.Revision = configv1alpha1.RevisionNumber(revision)
		g.Expect(k8sClient.Patch(context.Background(), cur, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}
