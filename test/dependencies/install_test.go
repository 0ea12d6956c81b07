package dependencies

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/tree"
)

// A variant of app (app needs lib, lib needs base) with install: true
// installs lib and base into its repository as PackageVariants it owns;
// its draft carries the dependencies gate, False until both are
// Published there, and cannot be published before; the lock lists the
// three packages and their dependants.
func TestInstall_chain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("base", "", nil)
	cat.publish("lib", "", []requires{{"base", ">=1.0.0"}})
	cat.publish("app", "", []requires{{"lib", "^1"}})

	pv := variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true})
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())

	libPV, basePV := pkgdeps.DependencyVariantName("cluster-01", "lib"), pkgdeps.DependencyVariantName("cluster-01", "base")
	g.Eventually(func(g Gomega) {
		got := getPV(g, ns, "app")
		g.Expect(got.Status.Dependencies).To(ConsistOf(
			configv1alpha1.DependencyStatus{Package: "base", Version: "1.0.0", State: configv1alpha1.DependencyPending, SatisfiedBy: "base (Draft 1.0.0)", InstalledBy: basePV, Installed: true},
			configv1alpha1.DependencyStatus{Package: "lib", Version: "1.0.0", State: configv1alpha1.DependencyPending, SatisfiedBy: "lib (Draft 1.0.0)", InstalledBy: libPV, Installed: true},
		))
		c := condition(g, got, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyPendingReason))
		g.Expect(c.Message).To(ContainSubstring("lib 1.0.0 in lib is draft: publish it"))
		// The variant itself did its job: its draft is there, gated.
		g.Expect(condition(g, got, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		gate := prCondition(draftOf(g, ns, "app"), configv1alpha1.DependenciesReadinessGate)
		g.Expect(gate).NotTo(BeNil())
		g.Expect(gate.Status).To(Equal(porchv1alpha1.ConditionStatus("False")))
	}, timeout, interval).Should(Succeed())

	// The installed variants: owned by app (not as controller), labelled,
	// pinned to the revision chosen; lib checks its own dependency.
	for _, name := range []string{libPV, basePV} {
		dep := getPV(g, ns, name)
		g.Expect(dep.Labels).To(HaveKeyWithValue(configv1alpha1.DependencyLabel, "cluster-01"))
		g.Expect(dep.OwnerReferences).To(HaveLen(1))
		g.Expect(dep.OwnerReferences[0].UID).To(Equal(getPV(g, ns, "app").UID))
		g.Expect(dep.OwnerReferences[0].Controller).To(BeNil())
		g.Expect(string(dep.Spec.Upstream.Revision)).To(Equal("1"))
		g.Expect(dep.Spec.Dependencies).NotTo(BeNil())
		g.Expect(dep.Spec.Dependencies.Install).To(BeFalse())
	}

	// scion tree shows them under the variant.
	n, err := tree.Build(ctx, k8sClient, ns, "pvar", "app", tree.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	g.Expect(tree.Print(&b, n, false)).To(Succeed())
	g.Expect(b.String()).To(ContainSubstring("PackageVariant/app  Ready=True  dependencies 0/2 satisfied\n"))
	g.Expect(b.String()).To(ContainSubstring("gate config.porch.kpt.dev/dependencies=False"))
	g.Expect(b.String()).To(ContainSubstring("└─Dependency/lib  Ready=Unknown  1.0.0 Pending in lib (Draft 1.0.0), installed by PackageVariant/" + libPV + "\n"))

	// Publishing app before its dependencies is refused by its gate.
	appDraft := ""
	g.Eventually(func(g Gomega) { appDraft = draftOf(g, ns, "app").Name }, timeout, interval).Should(Succeed())
	setLifecycle(g, ns, appDraft, porchv1alpha1.LifecycleProposed)
	setLifecycle(g, ns, appDraft, porchv1alpha1.LifecyclePublished)
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: appDraft}, pr)).To(Succeed())
		ready := prCondition(pr, configv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(porchv1alpha1.ReadinessGatesNotMetReason))
		g.Expect(ready.Message).To(ContainSubstring(configv1alpha1.DependenciesReadinessGate))
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecycleProposed)))
	}, timeout, interval).Should(Succeed())

	// lib waits for base (its own gate), so base goes first.
	g.Eventually(func(g Gomega) {
		c := condition(g, getPV(g, ns, libPV), configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Reason).To(Equal(pkgdeps.DependencyPendingReason))
	}, timeout, interval).Should(Succeed())
	publishVariant(t, ns, basePV)
	publishVariant(t, ns, libPV)

	// Now the proposal's gate turns True (set on the proposal, which is
	// frozen) and the publication asked for above goes through.
	g.Eventually(func(g Gomega) {
		got := getPV(g, ns, "app")
		c := condition(g, got, configv1alpha1.DependenciesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		for _, d := range got.Status.Dependencies {
			g.Expect(d.State).To(Equal(configv1alpha1.DependencySatisfied))
		}
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: appDraft}, pr)).To(Succeed())
		g.Expect(pr.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(porchv1alpha1.LifecyclePublished)))
	}, timeout, interval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		l := lock(g, ns, "cluster-01")
		g.Expect(l.Packages).To(ConsistOf(
			configv1alpha1.LockedPackage{Name: "app", Version: "1.0.0", Directory: "app", State: configv1alpha1.LockedPublished},
			configv1alpha1.LockedPackage{Name: "base", Version: "1.0.0", Directory: "base", State: configv1alpha1.LockedPublished, Dependants: []string{"lib"}},
			configv1alpha1.LockedPackage{Name: "lib", Version: "1.0.0", Directory: "lib", State: configv1alpha1.LockedPublished, Dependants: []string{"app"}},
		))
		g.Expect(l.Conflicts).To(BeEmpty())
		g.Expect(l.OwnerReferences).To(HaveLen(1))
		g.Expect(l.OwnerReferences[0].Kind).To(Equal("Repository"))
	}, timeout, interval).Should(Succeed())
}

// A dependency two variants need is installed once, owned by both; it
// stays while one of them does, and is removed with the last.
func TestInstall_shared(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, cluster := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", ">=1.0.0"}})
	cat.publish("web", "", []requires{{"lib", "^1"}})

	app := variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true})
	web := variant(ns, "web", "web", "1", &configv1alpha1.Dependencies{Install: true})
	g.Expect(k8sClient.Create(ctx, app)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, web)).To(Succeed())
	libPV := pkgdeps.DependencyVariantName("cluster-01", "lib")
	g.Eventually(func(g Gomega) {
		dep := getPV(g, ns, libPV)
		var owners []string
		for _, ref := range dep.OwnerReferences {
			owners = append(owners, ref.Name)
		}
		g.Expect(owners).To(ConsistOf("app", "web"))
		for _, name := range []string{"app", "web"} {
			st := getPV(g, ns, name).Status.Dependencies
			g.Expect(st).To(HaveLen(1))
			g.Expect(st[0].InstalledBy).To(Equal(libPV))
			g.Expect(st[0].Installed).To(BeTrue())
		}
	}, timeout, interval).Should(Succeed())
	list := &configv1alpha1.PackageVariantList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{configv1alpha1.DependencyLabel})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "one PackageVariant per package per repository")

	g.Expect(k8sClient.Delete(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		dep := getPV(g, ns, libPV)
		g.Expect(dep.OwnerReferences).To(HaveLen(1))
		g.Expect(dep.OwnerReferences[0].Name).To(Equal("web"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) { getPV(g, ns, libPV) }, "2s", interval).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, web)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: libPV}, &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		g.Expect(drafts(t, cluster)).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// A dependency someone adopted (the label removed) is never changed nor
// deleted by Scion.
func TestInstall_adopted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", ""}})
	app := variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true})
	g.Expect(k8sClient.Create(ctx, app)).To(Succeed())
	libPV := pkgdeps.DependencyVariantName("cluster-01", "lib")
	g.Eventually(func(g Gomega) { getPV(g, ns, libPV) }, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		dep := getPV(g, ns, libPV)
		patch := client.MergeFromWithOptions(dep.DeepCopy(), client.MergeFromWithOptimisticLock{})
		delete(dep.Labels, configv1alpha1.DependencyLabel)
		dep.OwnerReferences = nil
		g.Expect(k8sClient.Patch(ctx, dep, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Expect(k8sClient.Delete(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(app), &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		dep := getPV(g, ns, libPV)
		g.Expect(dep.DeletionTimestamp).To(BeNil())
	}, "2s", interval).Should(Succeed())
}

// Turning dependencies off releases what the variant installed and
// removes the gate from its draft.
func TestInstall_turnedOff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("lib", "", nil)
	cat.publish("app", "", []requires{{"lib", ""}})
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", &configv1alpha1.Dependencies{Install: true}))).To(Succeed())
	libPV := pkgdeps.DependencyVariantName("cluster-01", "lib")
	g.Eventually(func(g Gomega) {
		getPV(g, ns, libPV)
		g.Expect(prCondition(draftOf(g, ns, "app"), configv1alpha1.DependenciesReadinessGate)).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		pv := getPV(g, ns, "app")
		patch := client.MergeFromWithOptions(pv.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pv.Spec.Dependencies = nil
		g.Expect(k8sClient.Patch(ctx, pv, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: libPV}, &configv1alpha1.PackageVariant{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		pv := getPV(g, ns, "app")
		g.Expect(pv.Status.Dependencies).To(BeEmpty())
		g.Expect(pv.Status.Conditions).NotTo(ContainElement(HaveField("Type", configv1alpha1.DependenciesReadyCondition)))
		draft := draftOf(g, ns, "app")
		g.Expect(prCondition(draft, configv1alpha1.DependenciesReadinessGate)).To(BeNil())
		for _, gate := range draft.Spec.ReadinessGates {
			g.Expect(gate.ConditionType).NotTo(Equal(configv1alpha1.DependenciesReadinessGate))
		}
	}, timeout, interval).Should(Succeed())
}
