package packagevariant_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// TestPackageVariant_hungRemoteIsolated: a tenant's Repository whose
// server accepts connections and never answers holds none of the workers
// other namespaces need. The hung exchange lasts the manager's git
// timeout (2 minutes); the 100 other variants are Ready before any
// exchange with it gave up. The variants of the hung repository say which
// repository they wait for.
func TestPackageVariant_hungRemoteIsolated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	tenant := env.Namespace(t, "tenant-x")
	tarpit := gitserver.NewTarpit(t)
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "hung", Namespace: tenant},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: tarpit.URLFor("hung.git")}}})).To(Succeed())
	const hung = 8 // as many as the manager has variant workers
	for i := range hung {
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("x-%d", i), Namespace: tenant},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:   &configv1alpha1.Upstream{Repo: "hung", Package: "app", Revision: "1"},
				Downstream: &configv1alpha1.Downstream{Repo: "hung", Package: fmt.Sprintf("x-%d", i)},
			},
		})).To(Succeed())
	}
	g.Eventually(tarpit.Accepted, timeout, interval).Should(BeNumerically(">", 0), "the hung remote is being talked to")

	start := time.Now()
	const n = 100
	for i := range n {
		pv := newVariant(ns, configv1alpha1.DeletionPolicyDelete)
		pv.Name = fmt.Sprintf("v-%03d", i)
		pv.Spec.Downstream.Package = pv.Name
		g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	}
	// Were workers held by the hung remote, they would be held for its
	// timeout (2 minutes): the variants would be Ready only once an
	// exchange with it gave up. The deadline is generous; what is checked
	// is that none had.
	g.Eventually(func() int {
		return countReady(g, ns)
	}, 5*time.Minute, 500*time.Millisecond).Should(Equal(n))
	g.Expect(tarpit.FirstClosed()).To(BeZero(), "every variant was Ready while the exchanges with the hung remote still waited: no worker waited with them")
	t.Logf("%d variants Ready in %s beside a hung remote (%d connections accepted by it, none given up yet)", n, time.Since(start).Round(time.Millisecond), tarpit.Accepted())

	// The hung repository's variants say what they wait for, but for the
	// one whose worker may be the one opening it.
	g.Eventually(func(g Gomega) {
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(tenant))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(hung))
		waiting := 0
		for _, pv := range list.Items {
			c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
			if c == nil {
				continue
			}
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), pv.Name)
			g.Expect(c.Reason).To(Equal(porchv1alpha1.RepositoryUnavailableReason), pv.Name)
			g.Expect(c.Message).To(ContainSubstring("repository hung: repository " + tenant + "/hung is being opened by another reconcile (its remote " + tarpit.URLFor("hung.git") + " is slow)"))
			r := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReconcilingCondition)
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "still at work: kstatus says InProgress")
			g.Expect(r.Reason).To(Equal(porchv1alpha1.RepositoryUnavailableReason))
			g.Expect(pv.Status.ObservedGeneration).NotTo(Equal(pv.Generation), "the reconcile is not complete")
			waiting++
		}
		g.Expect(waiting).To(BeNumerically(">=", hung-1))
	}, timeout, interval).Should(Succeed())
}

func countReady(g Gomega, ns string) int {
	list := &configv1alpha1.PackageVariantList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	ready := 0
	for _, pv := range list.Items {
		if configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration) {
			ready++
		}
	}
	return ready
}
