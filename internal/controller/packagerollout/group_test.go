package packagerollout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// groupPackages are the members of the group: an app, its config and its
// policy.
var groupPackages = []string{"app", "app-config", "app-policy"}

// reviewed is the readiness gate of app-policy's blueprint: a person
// reviews each cluster's policy.
const reviewed = "example.com/policy-reviewed"

// groupFleet is a namespace with a blueprints repository publishing the
// group's packages at v1 and v2 (app-policy gated on reviewed), four
// deployment repositories site-01..04,
// and the PackageVariantSet platform fanning the group (at v1) out over
// them, its drafts labelled release=platform; it waits for the twelve
// drafts.
type groupFleet struct {
	ns    string
	bares map[string]string
	set   *configv1alpha2.PackageVariantSet
}

func newGroupFleet(t *testing.T) *groupFleet {
	t.Helper()
	ctx := context.Background()
	f := &groupFleet{ns: env.Namespace(t, "group"), bares: map[string]string{}}
	root := t.TempDir()
	up := gitserver.InitBare(t, root, "blueprints.git")
	st, err := store.Open(ctx, store.Options{URL: "file://" + up, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range groupPackages {
		for _, v := range []string{"v1", "v2"} {
			kf := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + p + "\n"
			if p == "app-policy" {
				kf += "info:\n  readinessGates:\n  - conditionType: " + reviewed + "\n"
			}
			files := map[string][]byte{
				"Kptfile": []byte(kf),
				"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + p + "\ndata:\n  version: " + v + "\n"),
			}
			if p == "app" {
				// The app needs its config in the cluster: a dependency
				// between two members of the group.
				files["dependencies.yaml"] = []byte("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageDependencies\nmetadata:\n  name: dependencies\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  requires:\n  - package: {name: app-config}\n")
			}
			contents := pkg.New(files)
			d, err := st.WriteDraft(ctx, store.DraftWrite{Package: p, Workspace: v, Contents: contents})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Propose(ctx, p, v, d.Commit, store.Proposal{}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Publish(ctx, p, v, "", "platform-team", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	repos := []*configv1alpha1.Repository{{ObjectMeta: metav1.ObjectMeta{Name: "blueprints", Namespace: f.ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + up}}}}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("site-%02d", i)
		f.bares[name] = gitserver.InitBare(t, root, name+".git")
		repos = append(repos, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"fleet": "group"}},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + f.bares[name], CreateBranch: true}}})
	}
	for _, r := range repos {
		if err := k8sClient.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	f.set = &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Targets: []configv1alpha2.Target{{RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "group"}}},
			Template: &configv1alpha2.PackageVariantTemplate{Labels: map[string]string{"release": "platform"}, Dependencies: &configv1alpha1.Dependencies{}}}},
	}}
	for _, p := range groupPackages {
		f.set.Spec.Upstreams = append(f.set.Spec.Upstreams, configv1alpha1.Upstream{Repo: "blueprints", Package: p, Revision: "v1"})
	}
	if err := k8sClient.Create(ctx, f.set); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(f.drafts(g)).To(HaveLen(12))
	}, timeout, interval).Should(Succeed())
	return f
}

// drafts are the group's revisions not published, by name.
func (f *groupFleet) drafts(g Gomega) map[string]*porchv1alpha1.PackageRevision {
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(f.ns), client.MatchingLabels{"release": "platform"})).To(Succeed())
	out := map[string]*porchv1alpha1.PackageRevision{}
	for i := range list.Items {
		if pr := &list.Items[i]; pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
			out[pr.Spec.Repository+"/"+pr.Spec.PackageName] = pr
		}
	}
	return out
}

// propose proposes the group's drafts, as a person would.
func (f *groupFleet) propose(g Gomega) {
	for _, pr := range f.drafts(g) {
		if pr.Spec.Lifecycle != porchv1alpha1.LifecycleDraft {
			continue
		}
		patch := client.MergeFrom(pr.DeepCopy())
		pr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
		pr.RecordProposal("release-manager", time.Now())
		g.Expect(k8sClient.Patch(context.Background(), pr, patch)).To(Succeed())
	}
}

// review sets the reviewed gate of the group's app-policy proposals True,
// but for those of the repositories in skip, as the reviewer would.
func (f *groupFleet) review(g Gomega, skip ...string) {
	for _, pr := range f.drafts(g) {
		if pr.Spec.PackageName != "app-policy" || pr.Spec.Lifecycle != porchv1alpha1.LifecycleProposed || slices.Contains(skip, pr.Spec.Repository) {
			continue
		}
		_, err := (&pkgservice.Service{Client: k8sClient, APIReader: k8sClient}).WriteStatus(context.Background(), pr, func(pr *porchv1alpha1.PackageRevision) bool {
			return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: reviewed, Status: "True", Reason: "Reviewed"})
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// published lists repository/package of the group's published revisions
// made from upstream version v (their content's version), sorted.
func (f *groupFleet) published(g Gomega, v string) []string {
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
	var out []string
	for _, pr := range list.Items {
		if pr.Spec.Repository == "blueprints" || pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || pr.Labels[configv1alpha1.PackageRolloutLabel] == "" {
			continue
		}
		if lock := pr.Status.UpstreamLock; lock != nil && lock.Git != nil && strings.HasSuffix(lock.Git.Ref, "/"+v) {
			out = append(out, pr.Spec.Repository+"/"+pr.Spec.PackageName)
		}
	}
	slices.Sort(out)
	return out
}

// report marks the group's published revisions healthy (or sick ones,
// by repository, unhealthy), as a deployer would.
func (f *groupFleet) report(g Gomega, sick ...string) {
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(f.ns), client.MatchingLabels{"release": "platform"})).To(Succeed())
	for i := range list.Items {
		pr := &list.Items[i]
		if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || pr.Status.PublishTimestamp == nil {
			continue
		}
		want := porchv1alpha1.ConditionStatus("True")
		if slices.Contains(sick, pr.Spec.Repository) {
			want = "False"
		}
		_, err := (&pkgservice.Service{Client: k8sClient, APIReader: k8sClient}).WriteStatus(context.Background(), pr, func(pr *porchv1alpha1.PackageRevision) bool {
			return pkgservice.SetConditions(&pr.Status.Conditions, porchv1alpha1.Condition{Type: synced, Status: want, Reason: "Reported"})
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// reporting reports (report) every 50 ms until stopped.
func (f *groupFleet) reporting(sick ...string) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		quiet := NewGomega(func(string, ...int) {})
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				f.report(quiet, sick...)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func (f *groupFleet) rollout(name string, spec configv1alpha1.PackageRolloutSpec) *configv1alpha1.PackageRollout {
	spec.RevisionSelector = metav1.LabelSelector{MatchLabels: map[string]string{"release": "platform"}}
	spec.Group = &configv1alpha1.RolloutGroup{PackageVariantSet: "platform"}
	return &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: spec}
}

// A group released in waves: each target's three revisions are published
// together; a target one of whose members fails its readiness gate waits,
// naming it, with nothing of its group published, while the others go on;
// once the gate is True the target follows. The app needs its config (a
// PackageDependencies declaration): its pending dependencies gate does not
// hold the group, and it is published after the config. Then the group's next version fails its
// health on one target: the rollout stops and every member it published
// is rolled back to the content before.
func TestRollout_group(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f := newGroupFleet(t)
	g.Eventually(func(g Gomega) {
		f.propose(g)
		proposed := 0
		for _, pr := range f.drafts(g) {
			if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
				proposed++
			}
		}
		g.Expect(proposed).To(Equal(12))
		f.review(g, "site-03")
		// Each app waits for its config: the dependencies gate is not True,
		// only pending (which does not hold the group).
		for key, pr := range f.drafts(g) {
			if pr.Spec.PackageName != "app" {
				continue
			}
			g.Expect(pr.Spec.ReadinessGates).To(ContainElement(HaveField("ConditionType", configv1alpha1.DependenciesReadinessGate)), key)
			g.Expect(pr.Status.Conditions).To(ContainElement(And(HaveField("Type", configv1alpha1.DependenciesReadinessGate), HaveField("Status", porchv1alpha1.ConditionStatus("False")), HaveField("Reason", "DependencyPending"))), key)
		}
	}, timeout, interval).Should(Succeed())

	v1 := f.rollout("platform-v1", configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}}})
	g.Expect(k8sClient.Create(ctx, v1)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, v1)
		g.Expect(cur.Status.Waves).To(HaveLen(2))
		g.Expect(cur.Status.Waves[1].Groups).To(HaveLen(3))
		g.Expect(cur.Status.Waves[1].Targets).To(Equal(int32(3)), "targets are repositories")
		g.Expect(cur.Status.Blocked).To(MatchRegexp(`^wave remainder: 2 of 3 published, 2 healthy: site-03 waits for its group: app-policy \(site-03\.app-policy\.\S+\) has readiness gates not True: example\.com/policy-reviewed$`))
	}, timeout, interval).Should(Succeed())
	all := func(sites ...string) []string {
		var out []string
		for _, s := range sites {
			for _, p := range groupPackages {
				out = append(out, s+"/"+p)
			}
		}
		return out
	}
	g.Consistently(func(g Gomega) {
		g.Expect(f.published(g, "v1")).To(Equal(all("site-01", "site-02", "site-04")), "nothing of site-03's group")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	g.Expect(f.drafts(g)).To(HaveKey("site-03/app-policy"))
	f.review(g)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(get(g, v1), "Ready").Status).To(Equal(metav1.ConditionTrue))
		g.Expect(f.published(g, "v1")).To(Equal(all("site-01", "site-02", "site-03", "site-04")))
	}, timeout, interval).Should(Succeed())

	// app needs app-config (its dependencies gate): published in the same
	// step, after it.
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(f.ns), client.MatchingLabels{"release": "platform"})).To(Succeed())
	publishedAt := map[string]time.Time{}
	for _, pr := range list.Items {
		if pr.Status.PublishTimestamp != nil {
			publishedAt[pr.Spec.Repository+"/"+pr.Spec.PackageName] = pr.Status.PublishTimestamp.Time
		}
	}
	for site := range f.bares {
		g.Expect(publishedAt[site+"/app"]).NotTo(BeTemporally("<", publishedAt[site+"/app-config"]), site)
	}

	// The next version of the whole group: the set's upstreams move to v2
	// (one edit), each variant drafts its update.
	g.Eventually(func() error {
		cur := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(f.set), cur); err != nil {
			return err
		}
		for i := range cur.Spec.Upstreams {
			cur.Spec.Upstreams[i].Revision = "v2"
		}
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ds := f.drafts(g)
		g.Expect(ds).To(HaveLen(12))
		for key, pr := range ds {
			g.Expect(pr.Status.UpstreamLock).NotTo(BeNil(), key)
			g.Expect(pr.Status.UpstreamLock.Git.Ref).To(HaveSuffix("/v2"), key)
		}
		f.propose(g)
		f.review(g)
	}, timeout, interval).Should(Succeed())

	v2 := f.rollout("platform-v2", configv1alpha1.PackageRolloutSpec{
		Waves:             []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](2)}},
		Health:            &configv1alpha1.RolloutHealth{ConditionType: synced},
		ProgressDeadline:  &metav1.Duration{Duration: 10 * time.Second},
		RollbackOnFailure: true,
	})
	// site-02's deployer says its group is unhealthy, from the moment
	// each member is published.
	stop := f.reporting("site-02")
	defer stop()
	g.Expect(k8sClient.Create(ctx, v2)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := get(g, v2)
		c := condition(cur, "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), cur.Status.Blocked)
		g.Expect(c.Reason).To(Equal(configv1alpha1.BudgetExceededReason))
		g.Expect(c.Message).To(MatchRegexp(`site-02 \(app\S* example\.com/synced is False\)`))
		g.Expect(cur.Status.Waves[0].RolledBack).To(Equal(int32(2)), "both targets of the wave, each group whole")
	}, timeout, interval).Should(Succeed())
	// Every member the rollout published is rolled back: a new published
	// revision with v1's content, in git; the remainder was never started.
	for _, site := range []string{"site-01", "site-02"} {
		st, err := store.Open(ctx, store.Options{URL: "file://" + f.bares[site], CacheDir: t.TempDir()})
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range groupPackages {
			rev, err := st.Get(ctx, p, "", 3)
			g.Expect(err).NotTo(HaveOccurred(), site+"/"+p)
			contents, err := st.Read(ctx, rev)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(contents.Files()["cm.yaml"])).To(ContainSubstring("version: v1"), site+"/"+p)
			g.Expect(rev.PublishedBy).To(Equal("scion-rollout/" + f.ns + "/platform-v2"))
		}
	}
	g.Expect(f.published(g, "v2")).To(ConsistOf(all("site-01", "site-02")))
}

// A group rollout whose selector matches revisions of another set, or
// whose set does not exist, is refused before anything is published,
// naming what is wrong.
func TestRollout_groupBadInput(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	f := newFleet(t, 2) // app v2 Proposed, labelled app=demo, of no set
	ro := f.rollout("not-a-group", configv1alpha1.PackageRolloutSpec{Group: &configv1alpha1.RolloutGroup{PackageVariantSet: "platform"}})
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, ro), "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("spec.group.packageVariantSet: PackageVariantSet platform not found in namespace " + f.ns))
	}, timeout, interval).Should(Succeed())

	set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: f.ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "cluster-01", Package: "app", Revision: "1"},
		Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-02", PackageNames: []string{"copy"}}}}},
	}}
	g.Expect(k8sClient.Create(ctx, set)).To(Succeed())
	// The set's variant writes into cluster-02's repository: it is gone,
	// and done writing, before the test's folders are removed.
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, set)
		_ = k8sClient.DeleteAllOf(ctx, &configv1alpha1.PackageVariant{}, client.InNamespace(f.ns))
		NewWithT(t).Eventually(func(g Gomega) {
			pvs := &configv1alpha1.PackageVariantList{}
			g.Expect(k8sClient.List(ctx, pvs, client.InNamespace(f.ns))).To(Succeed())
			g.Expect(pvs.Items).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
	})
	// The set's existence brings the rollout back only with a change of
	// its spec (nothing watches sets for rollouts): resume it.
	g.Eventually(func() error {
		cur := get(g, ro)
		cur.Spec.Retries++
		return k8sClient.Update(ctx, cur)
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, ro), "Stalled")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("spec.revisionSelector matches PackageRevisions that are not of PackageVariantSet platform (spec.group): " +
			pkgservice.ObjectName("cluster-01", "app", "v2") + ", " + pkgservice.ObjectName("cluster-02", "app", "v2") + "; narrow the selector"))
	}, timeout, interval).Should(Succeed())
	g.Expect(published(g, f)).To(BeEmpty())
}
