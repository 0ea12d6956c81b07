package packagerevision_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func newRepository(t *testing.T, ns, name string, deployment bool) string {
	t.Helper()
	bare := gitserver.InitBare(t, t.TempDir(), name+".git")
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: deployment,
			Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}},
	}
	if err := k8sClient.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	return bare
}

func newRevision(ns, repo, pkgName, ws string, task porchv1alpha1.Task) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: pkgservice.ObjectName(repo, pkgName, ws), Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: pkgName, Repository: repo, WorkspaceName: ws,
			Tasks: []porchv1alpha1.Task{task}},
	}
}

// draftInGit creates a draft of package app in repo and waits until git
// has it.
func draftInGit(t *testing.T, ns, repo, ws string) *porchv1alpha1.PackageRevision {
	t.Helper()
	g := NewWithT(t)
	pr := newRevision(ns, repo, "app", ws, initTask())
	g.Expect(k8sClient.Create(context.Background(), pr)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(get(g, pr).Status.Commit).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())
	return pr
}

// approveAs records who as a Proposed revision's approver and publishes
// it.
func approveAs(t *testing.T, pr *porchv1alpha1.PackageRevision, who string) *porchv1alpha1.PackageRevision {
	t.Helper()
	cur := get(NewWithT(t), pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: who}
	if err := k8sClient.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	return setLifecycle(t, pr, porchv1alpha1.LifecyclePublished)
}

func initTask() porchv1alpha1.Task {
	return porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "a test package"}}
}

func get(g Gomega, pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	out := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pr), out)).To(Succeed())
	return out
}

func ready(pr *porchv1alpha1.PackageRevision) porchv1alpha1.Condition {
	for _, c := range pr.Status.Conditions {
		if c.Type == configv1alpha1.ReadyCondition {
			return c
		}
	}
	return porchv1alpha1.Condition{}
}

// setLifecycle asks for a lifecycle and waits until git has it.
func setLifecycle(t *testing.T, pr *porchv1alpha1.PackageRevision, lc porchv1alpha1.Lifecycle) *porchv1alpha1.PackageRevision {
	t.Helper()
	g := NewWithT(t)
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = lc
	g.Expect(k8sClient.Patch(context.Background(), cur, patch)).To(Succeed())
	var out *porchv1alpha1.PackageRevision
	g.Eventually(func(g Gomega) {
		out = get(g, pr)
		g.Expect(out.Status.ObservedGeneration).To(Equal(out.Generation))
		g.Expect(out.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, string(lc)))
	}, timeout, interval).Should(Succeed())
	return out
}

func TestPackageRevision_lifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "blueprints", false)

	pr := newRevision(ns, "blueprints", "base/ns", "ws1", initTask())
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"))
		g.Expect(got.Status.Commit).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "show", "drafts/base/ns/ws1:base/ns/Kptfile")).To(ContainSubstring("description: a test package"))
	g.Expect(gitserver.Git(t, bare, "log", "-1", "--format=%B", "drafts/base/ns/ws1")).To(ContainSubstring(store.TrailerObjectUID + ": " + string(get(g, pr).UID)))

	setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "proposed/*")).To(ContainSubstring("proposed/base/ns/ws1"))
	setLifecycle(t, pr, porchv1alpha1.LifecycleDraft)
	setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)

	pub := approveAs(t, pr, "jane")
	g.Expect(pub.Spec.Revision).To(Equal(1))
	g.Expect(pub.Status.PublishedBy).To(Equal("jane"))
	g.Expect(pub.Labels).To(HaveKeyWithValue(porchv1alpha1.LatestRevisionLabel, "true"))
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("base/ns/v1"))

	// A Published revision cannot go back to Draft (the API server says so).
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(MatchError(ContainSubstring("a Published revision can only move to DeletionProposed")))

	setLifecycle(t, pr, porchv1alpha1.LifecycleDeletionProposed)
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "deletionProposed/*")).To(ContainSubstring("deletionProposed/base/ns/v1"))
	setLifecycle(t, pr, porchv1alpha1.LifecyclePublished)
	setLifecycle(t, pr, porchv1alpha1.LifecycleDeletionProposed)

	// Deleting the object removes the revision from git.
	g.Expect(k8sClient.Delete(ctx, get(g, pr))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), &porchv1alpha1.PackageRevision{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(BeEmpty())
	g.Expect(gitserver.Git(t, bare, "ls-tree", "main", "base/")).To(BeEmpty())
}

func TestPackageRevision_readinessGates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns, "catalog", false)
	bare := newRepository(t, ns, "cluster-01", true)

	// A published blueprint, cloned into the deployment repository.
	up := newRevision(ns, "catalog", "app", "v1", initTask())
	g.Expect(k8sClient.Create(ctx, up)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(get(g, up).Status.Commit).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())
	setLifecycle(t, up, porchv1alpha1.LifecycleProposed)
	setLifecycle(t, up, porchv1alpha1.LifecyclePublished)

	down := newRevision(ns, "cluster-01", "app", "ws", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone,
		Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{Name: up.Name}}})
	down.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: "example.com/approved"}}
	g.Expect(k8sClient.Create(ctx, down)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, down)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.UpstreamLock).NotTo(BeNil())
		g.Expect(got.Status.UpstreamLock.Git.Ref).To(Equal("app/v1"))
	}, timeout, interval).Should(Succeed())
	kf := gitserver.Git(t, bare, "show", "drafts/app/ws:app/Kptfile")
	g.Expect(kf).To(ContainSubstring("conditionType: example.com/approved"), "gates added on the object are written to the Kptfile")
	g.Expect(gitserver.Git(t, bare, "show", "drafts/app/ws:app/package-context.yaml")).To(ContainSubstring("name: app"), "clones into deployment repositories get a package context")

	setLifecycle(t, down, porchv1alpha1.LifecycleProposed)
	cur := get(g, down)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := ready(get(g, down))
		g.Expect(c.Reason).To(Equal(porchv1alpha1.ReadinessGatesNotMetReason))
		g.Expect(c.Message).To(Equal("cannot publish into deployment repository cluster-01: readiness gates not met: example.com/approved"))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(BeEmpty(), "nothing is published while a gate is unmet")
	// What is shown is what git has, and what is asked for beside it.
	waiting := get(g, down)
	g.Expect(waiting.Status.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed), "git has it Proposed")
	g.Expect(waiting.GitLifecycle()).To(Equal(porchv1alpha1.LifecycleProposed))
	g.Expect(waiting.ShownLifecycle()).To(Equal("Proposed → Published (waiting: ReadinessGatesNotMet: cannot publish into deployment repository cluster-01: readiness gates not met...)"))

	// Setting the condition lets the publish through.
	cur = get(g, down)
	before := cur.DeepCopy()
	cur.Status.Conditions = append(cur.Status.Conditions, porchv1alpha1.Condition{Type: "example.com/approved", Status: "True", Reason: "Reviewed"})
	g.Expect(k8sClient.Status().Patch(ctx, cur, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, down)
		g.Expect(got.Spec.Revision).To(Equal(1))
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"))
		g.Expect(got.Status.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(got.ShownLifecycle()).To(Equal("Published"))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("app/v1"))
	// The condition set while proposed is recorded in git: the published
	// Kptfile has it, and a sync shows it from there.
	published := gitserver.Git(t, bare, "show", "app/v1:app/Kptfile")
	g.Expect(published).To(MatchRegexp(`(?s)- type: example.com/approved\n\s+status: "True"\n\s+reason: Reviewed`))
	g.Expect(gitserver.Git(t, bare, "log", "--format=%s", "app/v1")).To(ContainSubstring("Set conditions and readiness gates: example.com/approved=True"))
	requestSync(t, ns, "cluster-01")
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, down).Status.Conditions).To(ContainElement(And(HaveField("Type", "example.com/approved"), HaveField("Status", BeEquivalentTo("True")))))
	}, 2*time.Second, interval).Should(Succeed())
}

func TestPackageRevision_concurrentPublish(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "r", false)
	var prs []*porchv1alpha1.PackageRevision
	for i := 0; i < 3; i++ {
		pr := newRevision(ns, "r", "app", fmt.Sprintf("ws%d", i), initTask())
		pr.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
		g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
		prs = append(prs, pr)
	}
	for _, pr := range prs {
		g.Eventually(func(g Gomega) { g.Expect(get(g, pr).Status.Commit).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())
		setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	}
	var wg sync.WaitGroup
	for _, pr := range prs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur := &porchv1alpha1.PackageRevision{}
			_ = k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), cur)
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
			_ = k8sClient.Patch(ctx, cur, patch)
		}()
	}
	wg.Wait()
	revisions := map[int]bool{}
	g.Eventually(func(g Gomega) {
		revisions = map[int]bool{}
		for _, pr := range prs {
			got := get(g, pr)
			g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
			g.Expect(got.Spec.Revision).To(BeNumerically(">", 0))
			revisions[got.Spec.Revision] = true
		}
	}, timeout, interval).Should(Succeed())
	g.Expect(revisions).To(Equal(map[int]bool{1: true, 2: true, 3: true}))
	g.Expect(strings.Fields(gitserver.Git(t, bare, "tag"))).To(ConsistOf("app/v1", "app/v2", "app/v3"))
}

// TestPackageRevision_crashAfterGitWrite: a draft written to git for an
// object, before the object was updated (a crash), is found again and not
// written twice.
func TestPackageRevision_crashAfterGitWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	// The object exists before its Repository, so the controller waits.
	pr := newRevision(ns, "late", "app", "ws", initTask())
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(ready(get(g, pr)).Reason).To(Equal(porchv1alpha1.RepositoryNotFoundReason)) }, timeout, interval).Should(Succeed())

	// What a crashed controller left: the draft in git, recording the object.
	bare := gitserver.InitBare(t, t.TempDir(), "late.git")
	work := t.TempDir()
	gitserver.Git(t, work, "init", "-q", "-b", "main")
	gitserver.Git(t, work, "commit", "-q", "--allow-empty", "-m", "init")
	gitserver.Git(t, work, "push", "-q", bare, "main")
	uid := string(get(g, pr).UID)
	g.Expect(writeFile(work, "app/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")).To(Succeed())
	gitserver.Git(t, work, "add", "-A")
	gitserver.Git(t, work, "commit", "-q", "-m", "Initialize app\n\n"+store.TrailerObjectUID+": "+uid+"\nScion-Package: app\nScion-Workspace: ws")
	gitserver.Git(t, work, "push", "-q", bare, "HEAD:refs/heads/drafts/app/ws")
	head := gitserver.Git(t, bare, "rev-parse", "drafts/app/ws")

	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}}
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"))
		g.Expect(got.Status.Commit).To(Equal(head))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "rev-parse", "drafts/app/ws")).To(Equal(head), "no second draft commit")
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "the sync shows the draft on the same object")
}

func TestPackageRevision_invalid(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	newRepository(t, ns, "r", false)
	pr := newRevision(ns, "r", "app", "ws", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone,
		Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{Name: "missing"}}})
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := ready(get(g, pr))
		g.Expect(c.Reason).To(Equal(porchv1alpha1.InvalidReason))
		g.Expect(c.Message).To(ContainSubstring("spec.tasks[0].clone.upstreamRef: PackageRevision " + ns + "/missing does not exist"))
	}, timeout, interval).Should(Succeed())
}

// TestPackageRevision_deleteFailure: when git refuses the deletion, the
// object keeps its finalizer and says why; once git accepts, it goes.
func TestPackageRevision_deleteFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "guarded", false)
	pr := draftInGit(t, ns, "guarded", "ws")

	hook := bare + "/hooks/pre-receive"
	g.Expect(writeFile(bare, "hooks/pre-receive", "#!/bin/sh\necho 'deletions are frozen' >&2\nexit 1\n")).To(Succeed())
	g.Expect(chmod(hook)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, get(g, pr))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Finalizers).To(ContainElement(porchv1alpha1.PackageRevisionFinalizer))
		c := ready(got)
		g.Expect(c.Reason).To(Equal(porchv1alpha1.DeleteFailedReason))
		g.Expect(c.Message).To(ContainSubstring("removing the revision from git"))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "drafts/*")).NotTo(BeEmpty(), "nothing was lost")

	g.Expect(removeFile(hook)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), &porchv1alpha1.PackageRevision{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}, timeout, interval).Should(Succeed(), "the deletion is retried and completes")
	g.Expect(gitserver.Git(t, bare, "branch", "--list", "drafts/*")).To(BeEmpty())
}

// TestPackageRevision_createdNotShown: an object made for a revision git
// has, whose maker stopped before writing its status, is shown by the
// controller after its grace period.
func TestPackageRevision_createdNotShown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "shown", false)
	pr := newRevision(ns, "shown", "app", "ws", initTask())
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	var head string
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"))
		head = got.Status.Commit
	}, timeout, interval).Should(Succeed())

	// The object goes while git refuses to delete the draft, and its
	// finalizer is dropped: git keeps the draft, the mirror knows it.
	hook := bare + "/hooks/pre-receive"
	g.Expect(writeFile(bare, "hooks/pre-receive", "#!/bin/sh\nexit 1\n")).To(Succeed())
	g.Expect(chmod(hook)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, get(g, pr))).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(ready(get(g, pr)).Reason).To(Equal(porchv1alpha1.DeleteFailedReason)) }, timeout, interval).Should(Succeed())
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Finalizers = nil
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), &porchv1alpha1.PackageRevision{}))).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "rev-parse", "drafts/app/ws")).To(Equal(head))

	// A new object is made the way a sync or a PackageVariant makes one,
	// but its status write never comes. (The hook stays: a retry of the
	// deletion still under way must not remove the draft after all.)
	again := newRevision(ns, "shown", "app", "ws", initTask())
	again.Spec.Tasks = nil
	g.Expect(k8sClient.Create(ctx, again)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, again)
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"))
		g.Expect(got.Status.Commit).To(Equal(head))
	}, timeout, interval).Should(Succeed())
	g.Expect(removeFile(hook)).To(Succeed())
}

// requestSync asks the Repository controller to sync now.
func requestSync(t *testing.T, ns, name string) {
	t.Helper()
	if err := askSync(ns, name); err != nil {
		t.Fatal(err)
	}
}

func askSync(ns, name string) error {
	repo := &configv1alpha1.Repository{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo); err != nil {
		return err
	}
	patch := client.MergeFrom(repo.DeepCopy())
	if repo.Annotations == nil {
		repo.Annotations = map[string]string{}
	}
	repo.Annotations[configv1alpha1.SyncRequestedAnnotation] = time.Now().String()
	return k8sClient.Patch(context.Background(), repo, patch)
}

// Three writers set a draft's conditions at once (people through rpkg,
// the Repository sync showing git, the PackageRevision controller writing
// them to git and showing the result), many times: no condition is lost,
// on the object or in git.
func TestPackageRevision_concurrentConditionWriters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "catalog", false)
	pr := draftInGit(t, ns, "catalog", "ws")

	people := &rpkg.Client{Client: k8sClient, Namespace: ns}
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				_, err := people.SetCondition(ctx, pr.Name, porchv1alpha1.Condition{Type: fmt.Sprintf("example.com/check-%02d", i), Status: "True", Reason: "Passed"})
				errs <- err
			}
		}()
	}
	// The sync runs again and again meanwhile.
	stop := make(chan struct{})
	syncs := make(chan struct{})
	go func() {
		defer close(syncs)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_ = askSync(ns, "catalog")
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-syncs
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	want := make([]any, n)
	for i := range n {
		want[i] = And(HaveField("Type", fmt.Sprintf("example.com/check-%02d", i)), HaveField("Status", BeEquivalentTo("True")))
	}
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Status.Conditions).To(ContainElements(want...), "every condition is on the object")
		kf := gitserver.Git(t, bare, "show", "drafts/app/ws:app/Kptfile")
		for i := range n {
			g.Expect(kf).To(ContainSubstring(fmt.Sprintf("type: example.com/check-%02d", i)), "and in git")
		}
	}, timeout, interval).Should(Succeed())
	requestSync(t, ns, "catalog")
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, pr).Status.Conditions).To(ContainElements(want...))
	}, 2*time.Second, interval).Should(Succeed(), "and stays there after a sync")
}

// The git server applies a draft's push but the answer is lost: the retry
// recognises its own write (by the object's UID trailer), and there is
// exactly one object for the revision, never an Invalid one.
func TestPackageRevision_lostPushAnswer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	root := t.TempDir()
	bare := gitserver.InitBare(t, root, "pkgs.git")
	backend := gitserver.NewServer(t, root)
	var dropped atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") && strings.Contains(gitserver.Git(t, bare, "for-each-ref", "refs/heads/main"), "main") && dropped.CompareAndSwap(false, true) {
			// The server does the push; the answer never arrives.
			backend.Config.Handler.ServeHTTP(httptest.NewRecorder(), r)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		backend.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "pkgs", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: proxy.URL + "/pkgs.git", CreateBranch: true}}}
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	g.Eventually(func() string { return gitserver.Git(t, bare, "for-each-ref", "refs/heads/main") }, timeout, interval).ShouldNot(BeEmpty())

	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-first", Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "hello", Repository: "pkgs", WorkspaceName: "ws1",
			Tasks: []porchv1alpha1.Task{initTask()}},
	}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"), ready(got).Message)
		g.Expect(got.Status.Commit).To(Equal(gitserver.Git(t, bare, "rev-parse", "drafts/hello/ws1")))
	}, timeout, interval).Should(Succeed())
	g.Expect(dropped.Load()).To(BeTrue(), "an answer was lost")
	requestSync(t, ns, "pkgs")
	g.Consistently(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1), "one object for the revision")
		g.Expect(list.Items[0].Name).To(Equal("hello-first"))
	}, 3*time.Second, interval).Should(Succeed())
	g.Expect(strings.Fields(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)", "refs/heads/drafts/"))).To(Equal([]string{"refs/heads/drafts/hello/ws1"}))
}

// A controller stopped between a git write and the matching object update
// (propose, publish, delete) leaves git ahead of the objects. The objects
// are made to say so before their Repository is registered, so that no
// controller acts until then; once it does, each converges from what git
// has, writing nothing twice.
func TestPackageRevision_crashBetweenGitAndObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := gitserver.InitBare(t, t.TempDir(), "crash.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	contents := pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")})

	// Three objects, each created (and so recorded in its draft's commit)
	// before git moves on without them.
	objects := map[string]*porchv1alpha1.PackageRevision{}
	for _, ws := range []string{"proposed", "published", "deleted"} {
		pr := newRevision(ns, "crash", "app", ws, initTask())
		pr.Finalizers = []string{porchv1alpha1.PackageRevisionFinalizer}
		g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
		d, err := (&pkgservice.Service{}).CreateDraft(ctx, st, get(g, pr), contents, "Create app")
		g.Expect(err).NotTo(HaveOccurred())
		objects[ws] = get(g, pr)
		switch ws {
		case "proposed": // proposed in git; the object's spec asks for it
			_, err = st.Propose(ctx, "app", ws, d.Commit, store.Proposal{})
			setLifecycleTo(g, objects[ws], porchv1alpha1.LifecycleProposed)
		case "published": // published in git; the object's spec asks for it
			_, err = st.Propose(ctx, "app", ws, d.Commit, store.Proposal{})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = st.Publish(ctx, "app", ws, "", "approver", "")
			setLifecycleTo(g, objects[ws], porchv1alpha1.LifecycleProposed)
			setLifecycleTo(g, objects[ws], porchv1alpha1.LifecyclePublished)
		case "deleted": // gone from git; the object is being deleted
			err = st.Delete(ctx, d, "")
			g.Expect(k8sClient.Delete(ctx, objects[ws])).To(Succeed())
		}
		g.Expect(err).NotTo(HaveOccurred())
	}
	refs := gitserver.Git(t, bare, "for-each-ref", "--format=%(refname) %(objectname)")

	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := get(g, objects["proposed"])
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(p.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, "Proposed"))
		pub := get(g, objects["published"])
		g.Expect(pub.Status.ObservedGeneration).To(Equal(pub.Generation))
		g.Expect(pub.Spec.Revision).To(Equal(1))
		g.Expect(ready(pub).Status).To(BeEquivalentTo("True"))
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(objects["deleted"]), &porchv1alpha1.PackageRevision{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deleted revision's object goes")
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname) %(objectname)")).To(Equal(refs), "git is left as it was: nothing written twice")
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "one object per revision")
}

func setLifecycleTo(g Gomega, pr *porchv1alpha1.PackageRevision, lc porchv1alpha1.Lifecycle) {
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = lc
	g.Expect(k8sClient.Patch(context.Background(), cur, patch)).To(Succeed())
}

// A revision whose spec ran ahead of git (proposed, then approved, before
// the controller acted, as a controller of an older version could leave
// it) is moved in order, Draft to Proposed to Published; until then it
// never claims what git does not have.
func TestPackageRevision_specAheadOfGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := gitserver.InitBare(t, t.TempDir(), "ahead.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	pr := newRevision(ns, "ahead", "app", "ws", initTask())
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	_, err = (&pkgservice.Service{}).CreateDraft(ctx, st, get(g, pr), pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")}), "Create app")
	g.Expect(err).NotTo(HaveOccurred())
	setLifecycleTo(g, pr, porchv1alpha1.LifecycleProposed)
	setLifecycleTo(g, pr, porchv1alpha1.LifecyclePublished)
	g.Expect(ready(get(g, pr)).Status).NotTo(BeEquivalentTo("True"), "nothing claims the move yet")
	g.Expect(get(g, pr).Status.ObservedGeneration).NotTo(Equal(get(g, pr).Generation))

	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "ahead", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Spec.Revision).To(Equal(1))
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"), ready(got).Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("app/v1"), "git has what the object says")
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "refs/heads/drafts/", "refs/heads/proposed/")).To(BeEmpty())
}

// A revision created by an init task and moved to Proposed, then
// Published (each move allowed), before any controller acted on it and
// before git has anything of it: the controller writes the draft and
// carries the moves out in order, instead of refusing it as "a new
// PackageRevision starts as Draft" with nothing in git.
func TestPackageRevision_movedBeforeTheControllerActed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pr := newRevision(ns, "later", "app", "ws", initTask())
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	setLifecycleTo(g, pr, porchv1alpha1.LifecycleProposed)
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	cur.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "bob"}
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	g.Expect(get(g, pr).Status.Commit).To(BeEmpty(), "nothing acted yet: its Repository does not exist")

	bare := newRepository(t, ns, "later", false)
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(ready(got).Status).To(BeEquivalentTo("True"), ready(got).Message)
		g.Expect(got.Spec.Revision).To(Equal(1))
		g.Expect(got.Status.PublishedBy).To(ContainSubstring("bob"))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("app/v1"), "git has what the object says")
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "refs/heads/drafts/", "refs/heads/proposed/")).To(BeEmpty())
}

// A draft annotated for auto-propose is proposed once its readiness gates
// are True, and not before; one without the annotation never is.
func TestPackageRevision_autoPropose(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "catalog", false)
	auto := newRevision(ns, "catalog", "app", "auto", initTask())
	auto.Annotations = map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true"}
	auto.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: "example.com/ipam"}}
	manual := newRevision(ns, "catalog", "app", "manual", initTask())
	manual.Spec.ReadinessGates = auto.Spec.ReadinessGates
	for _, pr := range []*porchv1alpha1.PackageRevision{auto, manual} {
		g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(get(g, pr).Status.Commit).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())
	}
	people := &rpkg.Client{Client: k8sClient, Namespace: ns}
	_, err := people.SetCondition(ctx, manual.Name, porchv1alpha1.Condition{Type: "example.com/ipam", Status: "True", Reason: "Allocated"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, auto).Spec.Lifecycle).To(BeElementOf(porchv1alpha1.LifecycleDraft, porchv1alpha1.Lifecycle("")), "its gate is not met")
		g.Expect(get(g, manual).Spec.Lifecycle).To(BeElementOf(porchv1alpha1.LifecycleDraft, porchv1alpha1.Lifecycle("")), "not annotated")
	}, 3*time.Second, interval).Should(Succeed())

	_, err = people.SetCondition(ctx, auto.Name, porchv1alpha1.Condition{Type: "example.com/ipam", Status: "True", Reason: "Allocated"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		got := get(g, auto)
		g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
		g.Expect(got.Annotations).To(HaveKeyWithValue(porchv1alpha1.ProposedByAnnotation, "scion (config.porch.kpt.dev/auto-lifecycle-mgmt)"))
		g.Expect(got.Labels).To(HaveKeyWithValue(porchv1alpha1.LifecycleLabel, "Proposed"))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)", "refs/heads/proposed/")).To(Equal("refs/heads/proposed/app/auto"))
	g.Expect(get(g, manual).Spec.Lifecycle).NotTo(Equal(porchv1alpha1.LifecycleProposed))

	// A settle time that is no duration: said, and nothing proposed.
	cur := get(g, manual)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Annotations = map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true", porchv1alpha1.AutoProposeSettleAnnotation: "soon"}
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", porchv1alpha1.InvalidReason),
			HaveField("Note", ContainSubstring(`not proposed automatically: metadata.annotations[config.porch.kpt.dev/auto-propose-settle]: "soon" is not a duration`)))))
	}, timeout, interval).Should(Succeed())
	g.Expect(get(g, manual).Spec.Lifecycle).NotTo(Equal(porchv1alpha1.LifecycleProposed))
}

// Publishing a package's second revision takes the latest-revision label
// from the first before the second shows it: never two latest revisions
// of one package (the repository's sync, minutes away, is not waited
// for).
func TestPackageRevision_oneLatest(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns, "blueprints", false)
	publish := func(ws string) *porchv1alpha1.PackageRevision {
		pr := newRevision(ns, "blueprints", "app", ws, initTask())
		g.Expect(k8sClient.Create(context.Background(), pr)).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(get(g, pr).Status.Commit).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())
		setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
		return setLifecycle(t, pr, porchv1alpha1.LifecyclePublished)
	}
	first := publish("ws1")
	g.Expect(first.Labels).To(HaveKeyWithValue(porchv1alpha1.LatestRevisionLabel, "true"))
	second := publish("ws2")
	g.Expect(second.Spec.Revision).To(Equal(2))
	g.Expect(second.Labels).To(HaveKeyWithValue(porchv1alpha1.LatestRevisionLabel, "true"))
	g.Expect(get(g, first).Labels).NotTo(HaveKey(porchv1alpha1.LatestRevisionLabel), "the first gave the label up before the second showed it")
}

// withdrawnAfterPublish publishes a revision of app in a new repository
// blueprints, then leaves what a withdrawal that lost the race with the
// publication leaves: spec.lifecycle Draft, admitted while the status
// still showed Proposed, with git Published. It returns the namespace,
// the bare repository, the revision and the object as read before the
// withdrawal.
func withdrawnAfterPublish(t *testing.T) (ns, bare string, pr, before *porchv1alpha1.PackageRevision) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns = newNamespace(t)
	bare = newRepository(t, ns, "blueprints", false)
	pr = draftInGit(t, ns, "blueprints", "ws")
	setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	setLifecycle(t, pr, porchv1alpha1.LifecyclePublished)
	before = get(g, pr)
	g.Expect(before.Status.ObservedGeneration).To(Equal(before.Generation))
	// The controller may still be writing the published revision's
	// status: retry on conflict, as any writer would.
	g.Eventually(func(g Gomega) {
		cur := get(g, pr)
		cur.Status.Lifecycle = porchv1alpha1.LifecycleProposed
		g.Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		cur = get(g, pr)
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
		g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return ns, bare, pr, before
}

// A withdrawal of an approval that lost the race with the publication
// (the CRD admits it while status.lifecycle still says Proposed) is not
// left waiting on a request no one may carry out: git published the
// revision, so the object says Published again, with git's approval
// record, Ready, and a PublishedFirst event says what happened; a later
// sync keeps it so.
func TestPackageRevision_withdrawnAfterPublish(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, bare, pr, _ := withdrawnAfterPublish(t)
	settled := func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(got.Status.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished), "git's lifecycle")
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		r := ready(got)
		g.Expect(r.Status).To(BeEquivalentTo("True"), r.Message)
		g.Expect(got.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, got.Status.PublishedBy))
	}
	g.Eventually(settled, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range events.Items {
			if e.Reason == porchv1alpha1.PublishedFirstReason && e.Regarding.Name == pr.Name {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ContainElement(ContainSubstring(pr.Name + " was published in git (revision 1")))
		g.Expect(notes).To(ContainElement(ContainSubstring("before the request to make it Draft was carried out: it stays Published; to remove it, propose its deletion")))
	}, timeout, interval).Should(Succeed())
	// Someone else writes a draft of another package to git; the sync
	// that shows it keeps the revision as it is.
	other, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.WriteDraft(ctx, store.DraftWrite{Package: "other", Workspace: "ws", Message: "another writer",
		Contents: pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: other\n")})})
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, ns, "blueprints")
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pkgservice.ObjectName("blueprints", "other", "ws")}, &porchv1alpha1.PackageRevision{})).To(Succeed())
	}, timeout, interval).Should(Succeed(), "a sync ran")
	g.Consistently(settled, 3*time.Second, interval).Should(Succeed())
}

// A verdict written for one generation is not stamped on a newer one: a
// status write that lost a race with a spec change (a person asked for
// something else meanwhile) re-reads the object and does not mark the new
// generation handled; if it did, the request would never be acted on, and
// the next sync would put git's lifecycle back into the spec.
func TestPackageRevision_staleVerdictNotStampedOnNewGeneration(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The spec changes after a writer (the controller, in a reconcile of
	// the old generation) read the object (stale): a request git cannot
	// carry out (a proposal cannot become DeletionProposed; an
	// administrator's write is admitted), which the controller refuses
	// without marking it handled.
	ns := newNamespace(t)
	bare := newRepository(t, ns, "blueprints", false)
	pr := draftInGit(t, ns, "blueprints", "ws")
	stale := setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	g.Eventually(func(g Gomega) {
		cur := get(g, pr)
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.Spec.Lifecycle = porchv1alpha1.LifecycleDeletionProposed
		g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(ready(get(g, pr)).Reason).To(Equal(porchv1alpha1.InvalidReason)) }, timeout, interval).Should(Succeed())
	cur := get(g, pr)
	g.Expect(cur.Generation).To(BeNumerically(">", stale.Generation))

	// The writer shows git with its verdict on the generation it read.
	repoObj := &configv1alpha1.Repository{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blueprints"}, repoObj)).To(Succeed())
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	rev, err := st.Get(ctx, "app", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	svc := &pkgservice.Service{Client: k8sClient, APIReader: k8sClient}
	done := []porchv1alpha1.Condition{{Type: configv1alpha1.ReadyCondition, Status: "True", Reason: porchv1alpha1.SyncedReason, ObservedGeneration: stale.Generation}}
	_, err = svc.Show(ctx, repoObj, st, rev, stale, pkgservice.ShowOptions{Handled: true, Kstatus: done})
	g.Expect(err).NotTo(HaveOccurred())
	got := get(g, pr)
	g.Expect(got.Generation).To(Equal(cur.Generation))
	g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDeletionProposed), "the request stays")
	g.Expect(got.Status.ObservedGeneration).To(BeNumerically("<", got.Generation), "the request is not marked handled by a write that did not handle it")
}

// A revision git published while a request on its object was pending
// (someone published in git, and a withdrawal arrived before the
// controller showed it) shows git's revision number and lifecycle, with
// git's approval record: the withdrawal came too late.
func TestPackageRevision_publishedNumberShownWhilePending(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "blueprints", false)
	pr := draftInGit(t, ns, "blueprints", "ws")
	setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	// Another writer publishes it in git; the withdrawal is admitted (the
	// object still says Proposed).
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.Publish(ctx, "app", "ws", "", "someone", "")
	g.Expect(err).NotTo(HaveOccurred())
	cur := get(g, pr)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
	requestSync(t, ns, "blueprints")
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.Status.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished), "git's lifecycle")
		g.Expect(got.Spec.Revision).To(Equal(1), "git's number")
		g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished), "git's lifecycle, the withdrawal too late")
		g.Expect(got.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "someone"))
		r := ready(got)
		g.Expect(r.Status).To(BeEquivalentTo("True"))
		g.Expect(r.ObservedGeneration).To(Equal(got.Generation))
	}, timeout, interval).Should(Succeed())
}

// A Published revision whose object a cluster administrator deletes from
// the storage directly (Scion's API refuses it to everyone) stays in
// git, and the sync shows it again; the deletion proposed first deletes
// it.
func TestPackageRevision_publishedNotDeletedDirectly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bare := newRepository(t, ns, "kept", false)
	pr := draftInGit(t, ns, "kept", "ws")
	setLifecycle(t, pr, porchv1alpha1.LifecycleProposed)
	pub := approveAs(t, pr, "jane")
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("app/v1"))

	g.Expect(k8sClient.Delete(ctx, pub)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, pr)
		g.Expect(got.UID).NotTo(Equal(pub.UID), "shown again, as a new object")
		g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(got.Spec.Revision).To(Equal(1))
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("app/v1"), "git keeps it")

	setLifecycle(t, pr, porchv1alpha1.LifecycleDeletionProposed)
	g.Expect(k8sClient.Delete(ctx, get(g, pr))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), &porchv1alpha1.PackageRevision{}))).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(BeEmpty())
}
