package dependencies

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
)

const widget = "example.com/v1/Widget"

// Two packages that provide one kind in one repository: the lock reports
// the conflict while both are drafts, both variants say so, the holder is
// published and the other's publication is refused; once the other
// leaves, the conflict is gone.
func TestLock_conflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("widget-operator", "", nil, "Widget")
	cat.publish("widgets-community", "", nil, "Widget")
	g.Expect(k8sClient.Create(ctx, variant(ns, "operator", "widget-operator", "1", nil))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, variant(ns, "community", "widgets-community", "1", nil))).To(Succeed())

	g.Eventually(func(g Gomega) {
		l := lock(g, ns, "cluster-01")
		g.Expect(l.Conflicts).To(HaveLen(1))
		g.Expect(l.Conflicts[0].Kind).To(Equal(widget))
		g.Expect(l.Conflicts[0].Packages).To(Equal([]string{"widget-operator", "widgets-community"}))
		g.Expect(l.Conflicts[0].Message).To(ContainSubstring("widget-operator holds it, and publishing widgets-community is refused"))
		g.Expect(l.Summary).To(Equal(configv1alpha1.LockSummary{Packages: 2, Conflicts: 1}))
		for _, name := range []string{"operator", "community"} {
			c := condition(g, getPV(g, ns, name), configv1alpha1.PackageConflictCondition)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("kind " + widget))
		}
	}, timeout, interval).Should(Succeed())

	// The second provider's publication is refused.
	var community string
	g.Eventually(func(g Gomega) { community = draftOf(g, ns, "community").Name }, timeout, interval).Should(Succeed())
	setLifecycle(g, ns, community, porchv1alpha1.LifecycleProposed)
	setLifecycle(g, ns, community, porchv1alpha1.LifecyclePublished)
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: community}, pr)).To(Succeed())
		ready := prCondition(pr, configv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(pkgdeps.PackageConflictReason), ready.Message)
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecycleProposed)))
	}, timeout, interval).Should(Succeed())
	// The holder is published.
	publishVariant(t, ns, "operator")
	g.Consistently(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: community}, pr)).To(Succeed())
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecycleProposed)))
	}, "2s", interval).Should(Succeed())

	// The other one leaves: no conflict any more.
	g.Expect(k8sClient.Delete(ctx, getPV(g, ns, "community"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(lock(g, ns, "cluster-01").Conflicts).To(BeEmpty())
		g.Expect(getPV(g, ns, "operator").Status.Conditions).NotTo(ContainElement(HaveField("Type", configv1alpha1.PackageConflictCondition)))
	}, timeout, interval).Should(Succeed())
}

// Two variants resolving in one repository at once, each needing another
// provider of one kind: the lock lets one win; the other is told why (and
// the lock lists the conflict), the kind never gets a second provider,
// and the winner's provider publishes and satisfies it (the loser's
// gated draft does not hold it back).
func TestLock_concurrentResolution(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("widget-operator", "", nil, "Widget")
	cat.publish("widgets-community", "", nil, "Widget")
	cat.publish("app-a", "", []requires{{"widget-operator", ""}})
	cat.publish("app-b", "", []requires{{"widgets-community", ""}})
	var wg sync.WaitGroup
	for _, name := range []string{"app-a", "app-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = k8sClient.Create(ctx, variant(ns, name, name, "1", &configv1alpha1.Dependencies{Install: true}))
		}()
	}
	wg.Wait()
	providers := func(g Gomega) []string {
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{configv1alpha1.DependencyLabel})).To(Succeed())
		var out []string
		for _, pv := range list.Items {
			out = append(out, pv.Spec.Upstream.Package)
		}
		return out
	}
	var loser, winner, provider string
	g.Eventually(func(g Gomega) {
		g.Expect(providers(g)).To(HaveLen(1))
		provider = providers(g)[0]
		winner = map[string]string{"widget-operator": "app-a", "widgets-community": "app-b"}[provider]
		loser = map[string]string{"widget-operator": "app-b", "widgets-community": "app-a"}[provider]
		c := condition(g, getPV(g, ns, loser), configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependenciesUnsatisfiableReason))
		g.Expect(c.Message).To(ContainSubstring("both provide kind " + widget))
		// The lock shows what the loser cannot have.
		l := lock(g, ns, "cluster-01")
		g.Expect(l.Conflicts).To(ContainElement(And(HaveField("Kind", widget), HaveField("RequiredBy", []string{loser}))), "%+v", l.Conflicts)
		g.Expect(l.Summary.Conflicts).To(BeNumerically(">=", 1))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(providers(g)).To(HaveLen(1))
		l := lock(g, ns, "cluster-01")
		n := 0
		for _, p := range l.Packages {
			if len(p.Provides) > 0 {
				n++
			}
		}
		g.Expect(n).To(Equal(1), "one provider of the kind in the lock: %+v", l.Packages)
	}, 3*time.Second, interval).Should(Succeed())

	// The winner is not held back by the loser's draft: its provider
	// publishes, and its dependencies are then satisfied.
	publishVariant(t, ns, pkgdeps.DependencyVariantName("cluster-01", provider))
	g.Eventually(func(g Gomega) {
		c := condition(g, getPV(g, ns, winner), configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		c = condition(g, getPV(g, ns, loser), configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependenciesUnsatisfiableReason))
	}, timeout, interval).Should(Succeed())

	// The loser goes: its stall was about the other's kind, and nothing it
	// installed is left.
	g.Expect(k8sClient.Delete(ctx, getPV(g, ns, loser))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: loser}, &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(providers(g)).To(HaveLen(1))
}

// Many variants resolving in one repository at once, all sharing a
// dependency, race to write the lock: every write that lost is retried
// against the lock it lost to, and all converge quickly, with one
// dependency variant they all own and one lock entry listing them all;
// none is left Retrying.
func TestLock_manyWriters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	t.Cleanup(func() {
		if t.Failed() {
			// Where the controller's workers are, for the next person.
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Logf("goroutines:\n%s", b.String())
		}
	})
	cat.publish("lib", "", nil)
	const n = 8
	for i := range n {
		cat.publish(fmt.Sprintf("app-%d", i), "", []requires{{"lib", "^1"}})
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("app-%d", i)
			_ = k8sClient.Create(ctx, variant(ns, name, name, "1", &configv1alpha1.Dependencies{Install: true}))
		}()
	}
	wg.Wait()
	libPV := pkgdeps.DependencyVariantName("cluster-01", "lib")
	g.Eventually(func(g Gomega) {
		var apps []string
		for i := range n {
			name := fmt.Sprintf("app-%d", i)
			apps = append(apps, name)
			pv := getPV(g, ns, name)
			ready := condition(g, pv, configv1alpha1.ReadyCondition)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s %s", name, ready.Reason, ready.Message)
			g.Expect(condition(g, pv, configv1alpha1.DependenciesReadyCondition).Reason).To(Equal(pkgdeps.DependencyPendingReason))
		}
		g.Expect(getPV(g, ns, libPV).OwnerReferences).To(HaveLen(n), "one dependency variant, owned by every dependant")
		l := lock(g, ns, "cluster-01")
		var libs []configv1alpha1.LockedPackage
		for _, p := range l.Packages {
			if p.Name == "lib" {
				libs = append(libs, p)
			}
		}
		g.Expect(libs).To(HaveLen(1))
		g.Expect(libs[0].Dependants).To(ConsistOf(apps))
	}, timeout, interval).Should(Succeed())
}
