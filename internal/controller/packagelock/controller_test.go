package packagelock_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// publishCRD publishes into a repository's git a package that provides
// the kind example.com/v1/<kind> (a CRD).
func publishCRD(t *testing.T, bare, name, kind string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plural := strings.ToLower(kind) + "s"
	p := pkg.New(map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
		"crd.yaml": []byte(fmt.Sprintf("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.example.com\nspec:\n  group: example.com\n  names: {kind: %s, plural: %s}\n  scope: Namespaced\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n",
			plural, kind, plural)),
	})
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: name, Workspace: "v1", Contents: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Propose(ctx, name, "v1", d.Commit, store.Proposal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, name, "v1", "", "author", ""); err != nil {
		t.Fatal(err)
	}
}

func newRepository(t *testing.T, ns, name, url string, deployment bool) {
	t.Helper()
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: configv1alpha1.RepositorySpec{Deployment: deployment, Git: &configv1alpha1.GitRepository{Repo: url, CreateBranch: true}}}
	if err := k8sClient.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
}

// A deployment repository gets a lock from git: its packages, the kinds
// they provide, and a kind two packages provide as a conflict, announced
// once on the Repository. A repository that is not a deployment
// repository has none.
func TestPackageLock_fromGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "lock")
	cluster := gitserver.InitBare(t, t.TempDir(), "cluster.git")
	publishCRD(t, cluster, "widgets", "Widget")
	publishCRD(t, cluster, "widgets-legacy", "Widget")
	newRepository(t, ns, "cluster-01", "file://"+cluster, true)
	catalog := gitserver.InitBare(t, t.TempDir(), "catalog.git")
	publishCRD(t, catalog, "gadgets", "Gadget")
	newRepository(t, ns, "catalog", "file://"+catalog, false)

	lock := &configv1alpha1.PackageLock{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01"}, lock)).To(Succeed())
		g.Expect(lock.Summary).To(Equal(configv1alpha1.LockSummary{Packages: 2, Conflicts: 1}))
	}, timeout, interval).Should(Succeed())
	g.Expect(lock.Packages).To(ConsistOf(
		And(HaveField("Name", "widgets"), HaveField("State", configv1alpha1.LockedPublished), HaveField("Provides", ConsistOf("example.com/v1/Widget"))),
		And(HaveField("Name", "widgets-legacy"), HaveField("State", configv1alpha1.LockedPublished), HaveField("Provides", ConsistOf("example.com/v1/Widget")))))
	g.Expect(lock.Conflicts[0].Kind).To(Equal("example.com/v1/Widget"))
	g.Expect(lock.Conflicts[0].Packages).To(ConsistOf("widgets", "widgets-legacy"))
	g.Expect(metav1.IsControlledBy(lock, &configv1alpha1.Repository{})).To(BeFalse())
	g.Expect(lock.OwnerReferences).To(ContainElement(HaveField("Name", "cluster-01")), "the lock leaves with its Repository")
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var conflicts []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "Repository" && e.Regarding.Name == "cluster-01" && e.Reason == "PackageConflict" {
				conflicts = append(conflicts, e.Note)
			}
		}
		g.Expect(conflicts).To(ConsistOf(ContainSubstring("example.com/v1/Widget")), "announced once")
	}, timeout, interval).Should(Succeed())

	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "catalog"}, &configv1alpha1.PackageLock{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a catalog has no lock")
}

// A repository that cannot be opened yet is waited for, not given up on:
// once its remote exists, its lock follows without any other event.
func TestPackageLock_waitsForTheRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "lock")
	root := t.TempDir()
	path := filepath.Join(root, "later.git")
	newRepository(t, ns, "later", "file://"+path, true)
	g.Consistently(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, &configv1alpha1.PackageLock{}))
	}, "2s", interval).Should(BeTrue())
	bare := gitserver.InitBare(t, root, "later.git")
	publishCRD(t, bare, "widgets", "Widget")
	g.Eventually(func(g Gomega) {
		lock := &configv1alpha1.PackageLock{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, lock)).To(Succeed())
		g.Expect(lock.Summary.Packages).To(Equal(1))
	}, timeout, interval).Should(Succeed())
}
