package packagerollout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rolloutctl"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/tree"
)

const (
	timeout  = 60 * time.Second
	interval = 100 * time.Millisecond
	synced   = "example.com/synced"
)

// fleet is a namespace of n deployment repositories, cluster-01.., each
// with app v1 published and app v2 Proposed (its object labelled
// app=demo), regions alternating eu/us.
type fleet struct {
	ns    string
	bares map[string]string
}

func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	ctx := context.Background()
	f := &fleet{ns: env.Namespace(t, "rollout"), bares: map[string]string{}}
	root := t.TempDir()
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("cluster-%02d", i)
		bare := gitserver.InitBare(t, root, name+".git")
		f.bares[name] = bare
		st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"v1", "v2"} {
			d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: v, Contents: appPackage(v)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Propose(ctx, "app", v, d.Commit, store.Proposal{}); err != nil {
				t.Fatal(err)
			}
			if v == "v1" {
				if _, err := st.Publish(ctx, "app", v, "", "platform-team", ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		region := "us"
		if i%2 == 1 {
			region = "eu"
		}
		if err := k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"region": region}},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Label the proposals, as a set's template would.
	NewWithT(t).Eventually(func(g Gomega) {
		for name := range f.bares {
			pr := f.revision(g, name, "v2")
			g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
			if pr.Labels["app"] != "demo" {
				patch := client.MergeFrom(pr.DeepCopy())
				pr.Labels["app"] = "demo"
				g.Expect(k8sClient.Patch(ctx, pr, patch)).To(Succeed())
			}
		}
	}, timeout, interval).Should(Succeed())
	return f
}

func appPackage(v string) *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: " + v + "\n"),
	})
}

func (f *fleet) revision(g Gomega, repo, ws string) *porchv1alpha1.PackageRevision {
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: pkgservice.ObjectName(repo, "app", ws)}, pr)).To(Succeed())
	return pr
}

func (f *fleet) rollout(name string, spec configv1alpha1.PackageRolloutSpec) *configv1alpha1.PackageRollout {
	spec.RevisionSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}}
	return &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: spec}
}

func get(g Gomega, ro *configv1alpha1.PackageRollout) *configv1alpha1.PackageRollout {
	cur := &configv1alpha1.PackageRollout{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ro), cur)).To(Succeed())
	return cur
}

func condition(ro *configv1alpha1.PackageRollout, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(ro.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// setHealth sets the health condition on a revision's object, as a
// deployer reporting on the cluster would.
func (f *fleet) setHealth(g Gomega, repo, ws string, status porchv1alpha1.ConditionStatus) {
	pr := f.revision(g, repo, ws)
	_, err := (&pkgservice.Service{Client: k8sClient, APIReader: k8sClient}).WriteStatus(context.Background(), pr, func(pr *porchv1alpha1.PackageRevision) bool {
		return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: synced, Status: status, Reason: "Reported", Message: "simulated deployer"})
	})
	g.Expect(err).NotTo(HaveOccurred())
}

// reporter marks every published v2 healthy a moment after it is
// published, except the repositories in sick (False), until stopped.
func (f *fleet) reporter(t *testing.T, sick ...string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for repo := range f.bares {
				pr := &porchv1alpha1.PackageRevision{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: pkgservice.ObjectName(repo, "app", "v2")}, pr); err != nil {
					continue
				}
				if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || pr.Status.PublishTimestamp == nil {
					continue
				}
				want := porchv1alpha1.ConditionStatus("True")
				if slices.Contains(sick, repo) {
					want = "False"
				}
				has := false
				for _, c := range pr.Status.Conditions {
					has = has || (c.Type == synced && c.Status == want)
				}
				if !has {
					_, _ = (&pkgservice.Service{Client: k8sClient, APIReader: k8sClient}).WriteStatus(ctx, pr, func(pr *porchv1alpha1.PackageRevision) bool {
						return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: synced, Status: want, Reason: "Reported"})
					})
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// watcher records, through the whole rollout, every time a published v2
// is seen outside the waves the rollout's status says started, or in a
// wave started before the one ahead of it was healthy.
type watcher struct {
	mu         sync.Mutex
	violations []string
}

func (f *fleet) watch(t *testing.T, ro *configv1alpha1.PackageRollout) (*watcher, func()) {
	w := &watcher{}
	key := client.ObjectKeyFromObject(ro) // ro itself may be written by a Create meanwhile
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// The rollout first, then the revisions: a revision published
			// after the read may belong to a wave started after it, so a
			// suspect is checked against the status read again.
			cur := &configv1alpha1.PackageRollout{}
			list := &porchv1alpha1.PackageRevisionList{}
			if k8sClient.Get(ctx, key, cur) != nil || k8sClient.List(ctx, list, client.InNamespace(f.ns)) != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for _, pr := range list.Items {
				if pr.Spec.WorkspaceName != "v2" || pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || mayPublish(cur, pr.Name) {
					continue
				}
				again := &configv1alpha1.PackageRollout{}
				if err := k8sClient.Get(ctx, key, again); err == nil && !mayPublish(again, pr.Name) {
					w.mu.Lock()
					w.violations = append(w.violations, pr.Name)
					w.mu.Unlock()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w, func() { cancel(); <-done }
}

// mayPublish says whether the rollout's status lets the revision be
// published: its wave started, and the wave before it was healthy.
func mayPublish(ro *configv1alpha1.PackageRollout, name string) bool {
	for i, w := range ro.Status.Waves {
		if slices.Contains(w.Revisions, name) {
			return w.StartedAt != nil && (i == 0 || ro.Status.Waves[i-1].HealthyAt != nil)
		}
	}
	return false
}

func published(g Gomega, f *fleet) []string {
	var out []string
	for repo := range f.bares {
		if pr := f.revision(g, repo, "v2"); pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished {
			out = append(out, repo)
		}
	}
	slices.Sort(out)
	return out
}

// Three waves over 12 repositories, gated by health and a soak time: each
// wave is published only after the one before is healthy, the plan is the
// one the spec describes, and nothing is ever published outside a started
// wave.
func TestRollout_threeWaves(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 12)
	stop := f.reporter(t)
	defer stop()
	ro := f.rollout("v2", configv1alpha1.PackageRolloutSpec{
		Waves: []configv1alpha1.RolloutWave{
			{Name: "canary", MaxTargets: ptr.To[int32](1)},
			{Name: "quarter", Percent: ptr.To[int32](25)},
		},
		Health:   &configv1alpha1.RolloutHealth{ConditionType: synced},
		SoakTime: &metav1.Duration{Duration: time.Second},
	})
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	w, stopWatch := f.watch(t, ro)
	defer stopWatch()

	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(cur.Status.Waves).To(HaveLen(3))
		g.Expect(cur.Status.Waves[0].Revisions).To(Equal([]string{pkgservice.ObjectName("cluster-01", "app", "v2")}))
		g.Expect(cur.Status.Waves[1].Targets).To(Equal(int32(3)))
		g.Expect(cur.Status.Waves[2].Name).To(Equal(configv1alpha1.RemainderWave))
		g.Expect(cur.Status.Waves[2].Targets).To(Equal(int32(8)))
	}, timeout, interval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(condition(cur, "Ready").Status).To(Equal(metav1.ConditionTrue), cur.Status.Blocked)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		for _, wave := range cur.Status.Waves {
			g.Expect(wave.State).To(Equal(configv1alpha1.WaveComplete))
			g.Expect(wave.Healthy).To(Equal(wave.Targets))
		}
	}, 2*timeout, interval).Should(Succeed())
	stopWatch()
	g.Expect(w.violations).To(BeEmpty(), "published only within started waves, each after the one before was healthy")
	g.Expect(published(g, f)).To(HaveLen(12))

	// Approved as the rollout, recorded on each revision.
	cur := get(g, ro)
	for _, wave := range cur.Status.Waves {
		for _, name := range wave.Revisions {
			pr := f.revision(g, strings.SplitN(name, ".", 2)[0], "v2")
			g.Expect(pr.Annotations[porchv1alpha1.ApprovedByAnnotation]).To(Equal("scion-rollout/" + f.ns + "/v2"))
		}
	}
	g.Expect(condition(cur, "Reconciling").Status).To(Equal(metav1.ConditionFalse))
	g.Expect(condition(cur, "Stalled").Status).To(Equal(metav1.ConditionFalse))
}

// A target that stays unhealthy past the deadline stops the rollout
// within its wave: nothing later is published, and what it published is
// rolled back to the previous content, recorded in git.
func TestRollout_failureRollsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 4)
	stop := f.reporter(t, "cluster-01")
	defer stop()
	ro := f.rollout("broken", configv1alpha1.PackageRolloutSpec{
		Waves:             []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Health:            &configv1alpha1.RolloutHealth{ConditionType: synced},
		ProgressDeadline:  &metav1.Duration{Duration: 2 * time.Second},
		RollbackOnFailure: true,
	})
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		c := condition(cur, "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), cur.Status.Blocked)
		g.Expect(c.Reason).To(Equal(configv1alpha1.BudgetExceededReason))
		g.Expect(c.Message).To(ContainSubstring("cluster-01 (example.com/synced is False)"))
		g.Expect(cur.Status.Waves[0].State).To(Equal(configv1alpha1.WaveFailed))
		g.Expect(cur.Status.Waves[0].RolledBack).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())
	g.Expect(published(g, f)).To(Equal([]string{"cluster-01"}), "the wave after never starts")
	// scion rollout status shows the wave's target: published, not
	// healthy by the rollout's condition, and why, whole.
	node, err := tree.RolloutTree(ctx, k8sClient, get(g, ro))
	g.Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	g.Expect(tree.Print(&out, node, false)).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`└─PackageRevision/cluster-01\.app\.\S+  Published  Ready=False  repository cluster-01, revision 2, published, health example\.com/synced`), out.String())
	g.Expect(out.String()).To(MatchRegexp(`PackageRevision/cluster-02\.app\.\S+  Proposed  Ready=Unknown  repository cluster-02, not published, health example\.com/synced\n.*\(NotSet: example\.com/synced is not set\)`), "the next wave's targets, whole reasons on the line below")

	// The rollback is a new published revision with v1's content, in git.
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: pkgservice.ObjectName("cluster-01", "app", "rollback-v2-broken")}, pr)).To(Succeed())
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(pr.Spec.Revision).To(Equal(3))
		g.Expect(pr.Labels[porchv1alpha1.LatestRevisionLabel]).To(Equal("true"))
		// Shown like what the rollout published: its label, its approval
		// record (as git's tag has it).
		g.Expect(pr.Labels).To(HaveKeyWithValue(configv1alpha1.PackageRolloutLabel, "broken"))
		g.Expect(pr.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "scion-rollout/"+f.ns+"/broken"))
		g.Expect(pr.Status.PublishedBy).To(Equal("scion-rollout/" + f.ns + "/broken"))
	}, timeout, interval).Should(Succeed())
	log := gitserver.Git(t, f.bares["cluster-01"], "log", "--format=%B", "-n", "20", "--all")
	g.Expect(log).To(ContainSubstring(store.TrailerRollout + ": " + f.ns + "/broken"))
	g.Expect(log).To(ContainSubstring(store.TrailerRevertOf + ": app/v2"))
	st, err := store.Open(ctx, store.Options{URL: "file://" + f.bares["cluster-01"], CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	rev, err := st.Get(ctx, "app", "", 3)
	g.Expect(err).NotTo(HaveOccurred())
	p, err := st.Read(ctx, rev)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(p.Files()["cm.yaml"])).To(ContainSubstring("version: v1"))
	g.Expect(rev.PublishedBy).To(Equal("scion-rollout/" + f.ns + "/broken"))

	// Stalled: nothing more happens, even when the target recovers.
	f.setHealth(g, "cluster-01", "v2", "True")
	g.Consistently(func(g Gomega) { g.Expect(published(g, f)).To(HaveLen(1)) }, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// The rollback was announced once, though later reconciles found it
	// done.
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(f.ns))).To(Succeed())
	n := 0
	for _, e := range events.Items {
		if e.Regarding.Name == ro.Name && e.Reason == "RolledBack" {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	g.Expect(n).To(Equal(1), "one RolledBack event")
}

// A rollback of a package's first revision cannot be: nothing was
// published before it. The failed rollout says so in its Stalled message
// (not only in events), and the revision stays published.
func TestRollout_rollbackOfAFirstRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 1)
	bare := gitserver.InitBare(t, t.TempDir(), "fresh.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "v1", Contents: appPackage("v1")})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.Propose(ctx, "app", "v1", d.Commit, store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: f.ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		pr := f.revision(g, "fresh", "v1")
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
		patch := client.MergeFrom(pr.DeepCopy())
		pr.Labels["first"] = "yes"
		g.Expect(k8sClient.Patch(ctx, pr, patch)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: f.ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector:  metav1.LabelSelector{MatchLabels: map[string]string{"first": "yes"}},
		Waves:             []configv1alpha1.RolloutWave{{Name: "canary"}},
		Health:            &configv1alpha1.RolloutHealth{ConditionType: synced},
		ProgressDeadline:  &metav1.Duration{Duration: 2 * time.Second},
		RollbackOnFailure: true,
	}}
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, ro), "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(HaveSuffix("; not rolled back, nothing was published before them: fresh.app.v1 stay published (propose their deletion to take them back)"))
	}, timeout, interval).Should(Succeed())
	g.Expect(get(g, ro).Status.Waves[0].RolledBack).To(BeZero())
	g.Expect(f.revision(g, "fresh", "v1").Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
}

// Manual approval, pause, resume and abort: a wave waits for a person; a
// paused rollout publishes nothing more; an aborted one stops for good.
func TestRollout_manualPauseAbort(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 3)
	ro := f.rollout("manual", configv1alpha1.PackageRolloutSpec{
		Waves:    []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}, {Name: "second", MaxTargets: ptr.To[int32](1)}},
		Approval: configv1alpha1.RolloutApprovalManual,
	})
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(condition(cur, "Ready").Reason).To(Equal(configv1alpha1.AwaitingApprovalReason))
		g.Expect(cur.Status.Blocked).To(Equal("wave canary awaits approval (spec.approvedWaves; scion rollout approve ROLLOUT canary)"))
	}, timeout, interval).Should(Succeed())
	g.Expect(published(g, f)).To(BeEmpty())

	// What scion rollout approve|pause|resume|abort do.
	ctl := &rolloutctl.Client{Client: k8sClient, Namespace: f.ns}
	approve := func(wave string) { g.Expect(ctl.Approve(ctx, ro.Name, wave)).To(Succeed()) }
	// Approving as someone else is refused by the API server.
	cur := get(g, ro)
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.ApprovedWaves = []string{"canary"}
	cur.Annotations = map[string]string{configv1alpha1.WaveApprovedByAnnotation: "mallory"}
	g.Expect(k8sClient.Patch(ctx, cur, patch)).To(MatchError(ContainSubstring("the approver recorded must be the user approving the wave")))

	beforeApproval := metav1.Now().Rfc3339Copy()
	approve("canary")
	var canaryAt *metav1.Time
	g.Eventually(func(g Gomega) {
		g.Expect(published(g, f)).To(Equal([]string{"cluster-01"}))
		cur := get(g, ro)
		g.Expect(cur.Status.Blocked).To(ContainSubstring("wave second awaits approval"))
		// When each wave was approved is kept, not only by whom.
		canaryAt = cur.Status.Waves[0].ApprovedAt
		g.Expect(canaryAt).NotTo(BeNil())
		g.Expect(canaryAt.Before(&beforeApproval)).To(BeFalse(), "approved at %s, before the approval at %s", canaryAt, beforeApproval)
		g.Expect(cur.Status.Waves[1].ApprovedAt).To(BeNil(), "second is not approved yet")
	}, timeout, interval).Should(Succeed())

	g.Expect(ctl.Pause(ctx, ro.Name)).To(Succeed())
	approve("second")
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		g.Expect(condition(cur, "Ready").Reason).To(Equal(configv1alpha1.PausedReason))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(published(g, f)).To(HaveLen(1)) }, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	g.Expect(ctl.Resume(ctx, ro.Name)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(published(g, f)).To(Equal([]string{"cluster-01", "cluster-02"}))
		cur := get(g, ro)
		g.Expect(cur.Status.Blocked).To(ContainSubstring("wave remainder awaits approval"))
		// Each approved wave shows its own approver (the test's user).
		for _, w := range cur.Status.Waves[:2] {
			g.Expect(w.ApprovedBy).NotTo(BeEmpty(), w.Name)
			g.Expect(w.ApprovedBy).To(Equal(configv1alpha1.WaveApprover(cur, w.Name)))
		}
		g.Expect(cur.Status.Waves[2].ApprovedBy).To(BeEmpty(), "remainder is not approved yet")
		g.Expect(cur.Status.Waves[1].ApprovedAt).NotTo(BeNil())
		g.Expect(cur.Status.Waves[0].ApprovedAt.Equal(canaryAt)).To(BeTrue(), "the canary's approval time is kept through later reconciles")
	}, timeout, interval).Should(Succeed())

	g.Expect(ctl.Abort(ctx, ro.Name)).To(Succeed())
	approve("remainder")
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		g.Expect(condition(cur, "Stalled").Reason).To(Equal(configv1alpha1.AbortedReason))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(published(g, f)).To(HaveLen(2)) }, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "aborted: nothing more")
}

// The controller dies (its connection to the API server is cut) again and
// again during a rollout: the rollout still completes, nothing is ever
// published outside a started wave, and no target is published twice
// (each repository has exactly v1 and v2 published, as revisions 1 and 2).
func TestRollout_crashes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 8)
	stopReporter := f.reporter(t)
	defer stopReporter()
	ro := f.rollout("crashy", configv1alpha1.PackageRolloutSpec{
		Waves:  []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}, {Name: "half", Percent: ptr.To[int32](50)}},
		Health: &configv1alpha1.RolloutHealth{ConditionType: synced},
	})
	w, stopWatch := f.watch(t, ro)
	defer stopWatch()
	crashes := make(chan struct{})
	go func() {
		defer close(crashes)
		for i := 0; i < 12; i++ {
			time.Sleep(time.Duration(150+97*i%400) * time.Millisecond)
			cut.Store(true)
			time.Sleep(300 * time.Millisecond)
			cut.Store(false)
		}
	}()
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	<-crashes
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(condition(cur, "Ready").Status).To(Equal(metav1.ConditionTrue), cur.Status.Blocked)
	}, 2*timeout, interval).Should(Succeed())
	stopWatch()
	g.Expect(w.violations).To(BeEmpty(), "published only within started waves")
	for repo, bare := range f.bares {
		st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
		g.Expect(err).NotTo(HaveOccurred())
		revs, err := st.ListPackage(ctx, "app")
		g.Expect(err).NotTo(HaveOccurred())
		var numbers []string
		for _, r := range revs {
			numbers = append(numbers, fmt.Sprintf("%s=v%d", r.Workspace, r.Revision))
		}
		g.Expect(numbers).To(ConsistOf("v1=v1", "v2=v2"), repo)
	}
}

// Health from an in-cluster object per target, through a CEL expression
// that compares it with the published commit: a ConfigMap per cluster
// standing for a Flux Kustomization. An object describing the older
// revision never counts.
// A rollout whose selector matches no Proposed revision is Ready with
// nothing to do, and carries a NoTargets condition saying so.
func TestRollout_noTargets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 1)
	ro := f.rollout("nothing", configv1alpha1.PackageRolloutSpec{})
	ro.Spec.RevisionSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "no-such-app"}}
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		g.Expect(condition(cur, configv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		nt := condition(cur, configv1alpha1.NoTargetsCondition)
		g.Expect(nt.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(nt.Reason).To(Equal(configv1alpha1.NoTargetsReason))
		g.Expect(nt.Message).To(Equal("nothing to roll out: no Proposed revision matched spec.revisionSelector when the rollout started"))
	}, timeout, interval).Should(Succeed())
}

// A health object of a kind the controller may not read (--readable-kinds)
// stalls the rollout before it publishes anything: its health could never
// be judged.
func TestRollout_healthKindNotReadable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 2)
	ro := f.rollout("unreadable", configv1alpha1.PackageRolloutSpec{
		Health: &configv1alpha1.RolloutHealth{
			Object: &configv1alpha1.HealthObject{APIVersion: "apps/v1", Kind: "Deployment", NameExpr: "repository.name"},
			Expr:   "object.status.readyReplicas > 0",
		},
	})
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		c := condition(cur, "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(configv1alpha1.ValidationErrorReason))
		g.Expect(c.Message).To(ContainSubstring("spec.health.object: this controller does not read Deployment.apps objects"))
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(published(g, f)).To(BeEmpty()) }, time.Second, 200*time.Millisecond).Should(Succeed())
}

func TestRollout_healthExpr(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFleet(t, 3)
	ro := f.rollout("expr", configv1alpha1.PackageRolloutSpec{
		Waves: []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Health: &configv1alpha1.RolloutHealth{
			Object: &configv1alpha1.HealthObject{APIVersion: "v1", Kind: "ConfigMap", NameExpr: "repository.name + '-sync'"},
			Expr:   "object.data.commit == revision.commit",
		},
		ProgressDeadline: &metav1.Duration{Duration: 4 * time.Second},
	})
	// The deployer: applies what is published, except in cluster-03, whose
	// object keeps saying the old commit.
	stale := map[string]string{}
	for repo := range f.bares {
		stale[repo] = f.revision(g, repo, "v1").Status.Commit
	}
	deployCtx, stopDeployer := context.WithCancel(ctx)
	defer stopDeployer()
	go func() {
		for deployCtx.Err() == nil {
			for repo := range f.bares {
				pr := &porchv1alpha1.PackageRevision{}
				if err := k8sClient.Get(deployCtx, client.ObjectKey{Namespace: f.ns, Name: pkgservice.ObjectName(repo, "app", "v2")}, pr); err != nil {
					continue
				}
				commit := stale[repo]
				if pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && pr.Status.PublishTimestamp != nil && repo != "cluster-03" {
					commit = pr.Status.Commit
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: repo + "-sync"}}
				_, _ = controllerutil.CreateOrUpdate(deployCtx, k8sClient, cm, func() error {
					cm.Data = map[string]string{"commit": commit}
					return nil
				})
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, ro)
		c := condition(cur, "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), cur.Status.Blocked)
		g.Expect(c.Reason).To(Equal(configv1alpha1.BudgetExceededReason))
		g.Expect(c.Message).To(ContainSubstring("cluster-03 (spec.health.expr is False: ConfigMap cluster-03-sync does not say the revision runs)"))
		g.Expect(cur.Status.Waves[0].Healthy).To(Equal(int32(1)), "the canary was healthy")
		g.Expect(cur.Status.Waves[1].Healthy).To(Equal(int32(1)))
	}, timeout, interval).Should(Succeed())
	g.Expect(published(g, f)).To(Equal([]string{"cluster-01", "cluster-02", "cluster-03"}))
}
