package dependencies

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// warnings collects the warnings the API server sends.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// Deleting a deployment Repository that a variant writes to: kubectl is
// warned (the deletion goes through), its PackageRevision objects go and
// stay gone (one shown by a writer that read the Repository before its
// deletion is removed too), and the variant says the Repository is not
// found, naming it.
func TestRepository_deletedInUse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "", nil)
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", nil))).To(Succeed())
	repo := &configv1alpha1.Repository{}
	g.Eventually(func(g Gomega) {
		g.Expect(draftOf(g, ns, "app").Name).NotTo(BeEmpty())
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, repo)).To(Succeed())
		g.Expect(repo.Status.PackageVariants).To(Equal(1))
		up := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "catalog"}, up)).To(Succeed())
		g.Expect(up.Status.PackageVariants).To(Equal(1), "the upstream counts its readers")
	}, timeout, interval).Should(Succeed())

	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Delete(ctx, repo)).To(Succeed(), "a warning, not a refusal")
	g.Expect(w.text).To(ContainElement(ContainSubstring("Repository cluster-01 is used by 1 PackageVariant(s)")))

	inRepo := func(g Gomega) []porchv1alpha1.PackageRevision {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{porchv1alpha1.RepositoryLabel: pkgservice.LabelValue("cluster-01")})).To(Succeed())
		return list.Items
	}
	g.Eventually(func(g Gomega) {
		g.Expect(inRepo(g)).To(BeEmpty())
		c := condition(g, getPV(g, ns, "app"), configv1alpha1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(porchv1alpha1.RepositoryNotFoundReason))
		g.Expect(c.Message).To(ContainSubstring("Repository cluster-01 does not exist"))
	}, timeout, interval).Should(Succeed())

	// A writer that read the Repository before its deletion shows a
	// revision after it is gone: the object goes.
	orphan := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-01.late.ws",
			Labels:          map[string]string{porchv1alpha1.RepositoryLabel: pkgservice.LabelValue("cluster-01")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: configv1alpha1.GroupVersion.String(), Kind: "Repository", Name: "cluster-01", UID: repo.UID}}},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "late", Repository: "cluster-01", WorkspaceName: "ws", Lifecycle: porchv1alpha1.LifecycleDraft},
	}
	g.Expect(k8sClient.Create(ctx, orphan)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(inRepo(g)).To(BeEmpty()) }, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(inRepo(g)).To(BeEmpty()) }, 3*time.Second, interval).Should(Succeed())
}

// Deleting a variant's revision: the variant shows its new draft at once,
// often under the same name; scion rpkg delete is done when the object it
// deleted is gone, not when the name is free.
func TestRepository_deleteVariantRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "", nil)
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", nil))).To(Succeed())
	publishVariant(t, ns, "app")
	pr := draftOf(g, ns, "app")
	setLifecycle(g, ns, pr.Name, porchv1alpha1.LifecycleDeletionProposed)
	g.Expect(rpkg.Consequence(pr)).To(ContainSubstring("PackageVariant app writes package app in cluster-01 and makes a new draft of it"))
	c := &rpkg.Client{Client: k8sClient, Namespace: ns, Timeout: 30 * time.Second}
	g.Expect(c.Delete(ctx, pr.Name)).To(Succeed())
	g.Eventually(func(g Gomega) {
		again := draftOf(g, ns, "app")
		g.Expect(again.UID).NotTo(Equal(pr.UID))
		g.Expect(again.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft), "the variant made a new draft, as the note says")
	}, timeout, interval).Should(Succeed())
}

// A Repository's count of PackageVariants follows a variant whose spec
// moves it to another Repository: the old one counts one less, the new
// one one more.
func TestRepository_countFollowsAMovedVariant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cat, _ := setup(t)
	cat.publish("app", "", nil)
	other := gitserver.InitBare(t, t.TempDir(), "cluster-02.git")
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-02"},
		Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + other, CreateBranch: true}}})).To(Succeed())
	g.Expect(k8sClient.Create(ctx, variant(ns, "app", "app", "1", nil))).To(Succeed())
	count := func(g Gomega, name string) int {
		repo := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
		return repo.Status.PackageVariants
	}
	g.Eventually(func(g Gomega) {
		g.Expect(count(g, "cluster-01")).To(Equal(1))
		g.Expect(count(g, "cluster-02")).To(Equal(0))
	}, timeout, interval).Should(Succeed())
	pv := getPV(g, ns, "app")
	patch := client.MergeFrom(pv.DeepCopy())
	pv.Spec.Downstream.Repo = "cluster-02"
	g.Expect(k8sClient.Patch(ctx, pv, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(count(g, "cluster-01")).To(Equal(0))
		g.Expect(count(g, "cluster-02")).To(Equal(1))
	}, timeout, interval).Should(Succeed())
}
