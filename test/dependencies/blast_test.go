package dependencies

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
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

// A package pushed into a deployment repository by hand with git, with a
// file no checkout can hold (.git/config), does not stop the
// repository's other packages: a variant installing its dependencies
// there resolves and is Ready. The bad draft is shown, stalled naming the
// file and the rule (no retry mends it), and proposing it leaves it a
// draft in git.
func TestBlastRadius_badPackage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, cluster := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", "^1"}})
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bad\n"
	gitserver.CommitFiles(t, cluster, "refs/heads/drafts/bad/by-hand", map[string]string{"bad/Kptfile": kptfile, "bad/.git/config": "[core]\n"})
	gitserver.CommitFiles(t, cluster, "refs/tags/worse/v1", map[string]string{"worse/Kptfile": kptfile, "worse/.GIT/hooks/post-checkout": "#!/bin/sh\n"})
	// Seen at once: a sync asked for now, as porchctl repo sync does.
	repo := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, repo)).To(Succeed())
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Sync = &configv1alpha1.RepositorySync{RunOnceAt: &metav1.Time{Time: time.Now()}}
	g.Expect(k8sClient.Patch(ctx, repo, patch)).To(Succeed())

	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		app := getPV(g, ns, "app")
		c := condition(g, app, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyPendingReason), c.Message)
		r := condition(g, app, configv1alpha1.ReadyCondition)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s", r.Reason, r.Message)
	}, timeout, interval).Should(Succeed())

	var bad porchv1alpha1.PackageRevision
	g.Eventually(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var found []string
		for _, pr := range list.Items {
			found = append(found, pr.Spec.PackageName)
			if pr.Spec.PackageName == "bad" {
				bad = pr
			}
		}
		g.Expect(found).To(ContainElements("bad", "worse"))
	}, timeout, interval).Should(Succeed())
	setLifecycle(g, ns, bad.Name, porchv1alpha1.LifecycleProposed)
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: bad.Name}, pr)).To(Succeed())
		c := prCondition(pr, "Stalled")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(porchv1alpha1.ConditionStatus("True")), "%v", pr.Status.Conditions)
		g.Expect(c.Reason).To(Equal(pkg.InvalidPathReason))
		g.Expect(c.Message).To(ContainSubstring(`package bad: invalid package file path ".git": ".git" is git's own folder`))
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecycleDraft)), "git keeps it a draft")
	}, timeout, interval).Should(Succeed())
	// The bad packages are no candidates and no constraints: the variant
	// is still Ready.
	g.Consistently(func(g Gomega) {
		r := condition(g, getPV(g, ns, "app"), configv1alpha1.ReadyCondition)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s", r.Reason, r.Message)
	}, 2*time.Second, interval).Should(Succeed())
}
