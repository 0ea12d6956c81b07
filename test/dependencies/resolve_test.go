package dependencies

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
)

// A new dependant that needs a higher version of an installed dependency
// moves it (Scion installed it); one that needs a lower version is
// refused, with the resolver's explanation, and moves nothing.
func TestResolve_upgradeAndDowngrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", ">=1.0.0"}})
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	libPV := pkgdeps.DependencyVariantName("cluster-01", "lib")
	g.Eventually(func(g Gomega) {
		g.Expect(string(getPV(g, ns, libPV).Spec.Upstream.Revision)).To(Equal("1"))
		g.Expect(getPV(g, ns, "app").Status.Dependencies).To(ConsistOf(HaveField("Version", "1.0.0")))
	}, timeout, interval).Should(Succeed())

	// lib 2.0.0 is published: app keeps what is installed.
	cat.publish("lib", "", nil)
	cat.publish("web", "", []requires{{"lib", ">=2.0.0"}})
	g.Expect(k8sClient.Create(ctx, variant(ns, "web", "web", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(string(getPV(g, ns, libPV).Spec.Upstream.Revision)).To(Equal("2"), "web's need moves lib")
		web := getPV(g, ns, "web")
		g.Expect(web.Status.Dependencies).To(ConsistOf(HaveField("Version", "2.0.0")))
		// app still lives with lib 2.0.0, and says so once it looks.
		g.Expect(getPV(g, ns, "app").Status.Dependencies).To(ConsistOf(HaveField("Version", "2.0.0")))
	}, timeout, interval).Should(Succeed())

	// old needs lib <2.0.0: a downgrade, refused.
	cat.publish("old", "", []requires{{"lib", "<2.0.0"}})
	g.Expect(k8sClient.Create(ctx, variant(ns, "old", "old", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		old := getPV(g, ns, "old")
		c := condition(g, old, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(pkgdeps.DependenciesUnsatisfiableReason))
		g.Expect(c.Message).To(ContainSubstring("old 1.0.0 requires lib <2.0.0"))
		g.Expect(c.Message).To(ContainSubstring("(a downgrade is not allowed)"))
		stalled := condition(g, old, configv1alpha1.StalledCondition)
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(pkgdeps.DependenciesUnsatisfiableReason))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(string(getPV(g, ns, libPV).Spec.Upstream.Revision)).To(Equal("2"))
	}, "2s", interval).Should(Succeed())
}

// check only (install: false): a missing dependency is reported, nothing
// is installed; a dependency someone else put there at another version is
// a conflict Scion does not touch.
func TestResolve_checkOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", ">=2.0.0"}})
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := getPV(g, ns, "app")
		c := condition(g, app, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyMissingReason))
		g.Expect(c.Message).To(Equal("lib 2.0.0 is not in the repository: install it, or set spec.dependencies.install: true"))
		g.Expect(app.Status.Dependencies).To(ConsistOf(configv1alpha1.DependencyStatus{Package: "lib", Version: "2.0.0", State: configv1alpha1.DependencyMissing}))
	}, timeout, interval).Should(Succeed())
	list := &configv1alpha1.PackageVariantList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{configv1alpha1.DependencyLabel})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())

	// Someone installs lib 1.0.0 with a variant of their own: app needs
	// 2.0.0 and the resolver would move it, but Scion did not install it.
	g.Expect(k8sClient.Create(ctx, variant(ns, "their-lib", "lib", "1", nil))).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, getPV(g, ns, "app"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := getPV(g, ns, "app")
		c := condition(g, app, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyConflictReason))
		g.Expect(c.Message).To(ContainSubstring("lib is at 1.0.0 in lib, put there by PackageVariant their-lib, and this variant needs 2.0.0"))
		g.Expect(app.Status.Dependencies).To(ConsistOf(HaveField("State", configv1alpha1.DependencyConflict)))
	}, timeout, interval).Should(Succeed())
	g.Expect(string(getPV(g, ns, "their-lib").Spec.Upstream.Revision)).To(Equal("1"))
}
