package dependencies

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
)

// into is a variant of a catalog package into a folder of cluster-01.
func into(ns, name, upstream, revision, folder string, d *configv1alpha1.Dependencies) *configv1alpha1.PackageVariant {
	pv := variant(ns, name, upstream, revision, d)
	pv.Spec.Downstream.Package = folder
	return pv
}

// A package without a PackageDependencies object (tenant-ns) at two
// versions side by side, the ordinary state during an upgrade, holds
// nobody back; a declared onePerRepository package at two versions holds
// back only the variants that need it, and the lock lists it; a
// misspelled catalog Repository holds back nobody, and is named where a
// resolution fails.
func TestBlastRadius(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("tenant-ns", "", nil)
	cat.publish("tenant-ns", "", nil)
	// platform declares itself (a PackageDependencies object that requires
	// nothing): onePerRepository, the declaration's default.
	cat.publish("platform", "", []requires{})
	cat.publish("platform", "", []requires{})
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", "^1"}})
	cat.publish("uses-platform", "", []requires{{"platform", ""}})
	typo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "typo-repo", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file:///nonexistent/typo.git"}}}
	g.Expect(k8sClient.Create(ctx, typo)).To(Succeed())

	for _, pv := range []*configv1alpha1.PackageVariant{
		into(ns, "tenant-a", "tenant-ns", "1", "tenant-a", nil),
		into(ns, "ops", "tenant-ns", "2", "ops", nil),
		into(ns, "platform-a", "platform", "2", "platform-a", nil),
		into(ns, "platform-b", "platform", "1", "platform-b", nil),
	} {
		g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(lock(g, ns, "cluster-01").Packages).To(HaveLen(4))
	}, timeout, interval).Should(Succeed())

	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	g.Expect(k8sClient.Create(ctx, variant(ns, "uses-platform", "uses-platform", "1", &configv1alpha1.Dependencies{}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := getPV(g, ns, "app")
		c := condition(g, app, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyPendingReason), "app needs none of them: %s", c.Message)
		g.Expect(c.Message).To(Or(Equal("lib 1.0.0 is being installed"), Equal("lib 1.0.0 in lib is draft: publish it")))
		g.Expect(condition(g, app, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))

		// uses-platform needs platform, which is there twice.
		c = condition(g, getPV(g, ns, "uses-platform"), configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependenciesUnsatisfiableReason))
		g.Expect(c.Message).To(ContainSubstring("package platform is installed twice at different versions"))
		g.Expect(c.Message).To(ContainSubstring("typo-repo"), "a failed resolution names the catalog it could not read")

		l := lock(g, ns, "cluster-01")
		g.Expect(l.Conflicts).To(ConsistOf(And(HaveField("Package", "platform"), HaveField("Packages", ConsistOf("platform-a", "platform-b")))))
	}, timeout, interval).Should(Succeed())

	// The lock's conflict is the only one: tenant-ns at two versions is
	// fine.
	l := lock(g, ns, "cluster-01")
	for _, c := range l.Conflicts {
		g.Expect(c.Package).NotTo(Equal("tenant-ns"))
	}
	// Every variant but the one that needs platform is Ready.
	g.Eventually(func(g Gomega) {
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(len(list.Items)).To(BeNumerically(">", 6))
		for _, pv := range list.Items {
			if pv.Name == "uses-platform" {
				continue
			}
			r := condition(g, &pv, configv1alpha1.ReadyCondition)
			g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s %s", pv.Name, r.Reason, r.Message)
		}
	}, timeout, interval).Should(Succeed())
}
