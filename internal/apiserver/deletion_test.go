package apiserver_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// A Published revision is deleted only after its deletion was proposed,
// by anyone (the test's client is a cluster administrator); and a
// revision something uses as its upstream is neither proposed for
// deletion nor deleted, the refusal naming what uses it: a variant that
// follows it, a set that names it (as the latest), a draft whose
// upstreamLock records it. A published revision that is superseded does
// not pin its upstream.
func TestPackageRevisions_deletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	pub := f.show(t, "blueprint", "v1", porchv1alpha1.LifecyclePublished)
	pub.Labels = map[string]string{porchv1alpha1.LatestRevisionLabel: "true"}
	pub.Spec.Revision = 1
	g.Expect(storageClient.Update(ctx, pub)).To(Succeed())
	pub.Status.Commit = "1111111111111111111111111111111111111111"
	g.Expect(storageClient.Status().Update(ctx, pub)).To(Succeed())
	key := client.ObjectKeyFromObject(pub)
	forbidden := func(err error, msg string) {
		t.Helper()
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring(msg)))
	}
	g.Eventually(func() error { return porch.Get(ctx, key, &porchv1alpha1.PackageRevision{}) }).Should(Succeed())

	forbidden(porch.Delete(ctx, pub), "PackageRevision "+pub.Name+" is Published and is not deleted directly, by anyone: propose its deletion first (scion rpkg propose-delete "+pub.Name+")")

	proposeDelete := func() error {
		cur := &porchv1alpha1.PackageRevision{}
		if err := porch.Get(ctx, key, cur); err != nil {
			return err
		}
		cur.Spec.Lifecycle = porchv1alpha1.LifecycleDeletionProposed
		return porch.Update(ctx, cur)
	}
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "follower"}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "deploy", Package: "blueprint", Revision: "v1"},
		Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: "web"},
	}}
	g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	forbidden(proposeDelete(), "PackageRevision "+pub.Name+" cannot be proposed for deletion: it is in use as an upstream by PackageVariant follower; move them to another revision first")
	g.Expect(env.Client.Delete(ctx, pv)).To(Succeed())

	set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "fleet"}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "deploy", Package: "blueprint", Revision: configv1alpha1.LatestRevision},
		Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "deploy"}}}},
	}}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	forbidden(proposeDelete(), "in use as an upstream by PackageVariantSet fleet")
	g.Expect(env.Client.Delete(ctx, set)).To(Succeed())

	// A draft made from it (its upstreamLock records its commit).
	down := f.show(t, "web", "ws", porchv1alpha1.LifecycleDraft)
	down.Status.UpstreamLock = &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: f.bare, Directory: "blueprint", Ref: "blueprint/v1", Commit: pub.Status.Commit}}
	g.Expect(storageClient.Status().Update(ctx, down)).To(Succeed())
	forbidden(proposeDelete(), "in use as an upstream by PackageRevision "+down.Name)
	// Superseded history does not pin it.
	down.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	g.Expect(storageClient.Update(ctx, down)).To(Succeed())
	g.Expect(proposeDelete()).To(Succeed())

	// Used again after its deletion was proposed: the deletion waits.
	pv = &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "late"}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "deploy", Package: "blueprint", WorkspaceName: "v1"},
		Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: "late"},
	}}
	g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	cur := &porchv1alpha1.PackageRevision{}
	g.Expect(porch.Get(ctx, key, cur)).To(Succeed())
	forbidden(porch.Delete(ctx, cur), "PackageRevision "+pub.Name+" cannot be deleted: it is in use as an upstream by PackageVariant late")
	g.Expect(env.Client.Delete(ctx, pv)).To(Succeed())
	g.Expect(porch.Delete(ctx, cur)).To(Succeed())
}
