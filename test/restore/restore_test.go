// Package restore tests that losing the cluster's state loses nothing git
// holds: a fleet of variants with published, proposed, drafted and edited
// revisions, its control plane replaced by a fresh one, its Repositories
// and PackageVariants applied again from a backup (new UIDs), reads back
// as it was.
package restore

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

const (
	timeout  = 2 * time.Minute
	interval = 200 * time.Millisecond
	ns       = "fleet"
	// variants: the first published are Published, the next proposed
	// Proposed, the rest Drafts, of which the first edited are edited by
	// a person.
	variants  = 12
	published = 4
	proposed  = 4
	edited    = 2
)

func TestMain(m *testing.M) {
	var out io.Writer = io.Discard // SCION_TEST_LOGS=1 shows the controllers' logs
	if os.Getenv("SCION_TEST_LOGS") != "" {
		out = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(out)))
	os.Exit(m.Run())
}

// controlPlane is a control plane with Scion's controllers and API server.
type controlPlane struct {
	env    *testenv.Env
	cancel context.CancelFunc // nil until its manager runs
	done   chan error
	once   sync.Once
}

// start starts a fresh control plane (its own etcd, its own controller
// cache), with the user roles installed and the namespace made. Its
// manager may be one more in this process (go test -count runs the test
// again in it). It is stopped when the test ends, failed or not.
func start(t *testing.T) *controlPlane {
	t.Helper()
	env, err := testenv.StartWith(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &controlPlane{env: env, done: make(chan error, 1)}
	t.Cleanup(func() { c.stop(t) })
	if err := rbac.Install(context.Background(), env.Storage, rbac.UserRoles); err != nil {
		t.Fatal(err)
	}
	opts := manager.Options{MetricsAddr: "0", ProbeAddr: "0", CacheDir: t.TempDir(), AllowFileRepositories: true, AnotherInProcess: true,
		RepositoryWorkers: 2, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: time.Minute, TagPollPeriod: time.Minute}
	var ctx context.Context
	ctx, c.cancel = context.WithCancel(context.Background())
	go func() { c.done <- manager.Run(ctx, rest.CopyConfig(env.Config), opts) }()
	if err := env.Storage.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// stop stops the controllers and the control plane, once: the cluster's
// state is gone.
func (c *controlPlane) stop(t *testing.T) {
	t.Helper()
	c.once.Do(func() {
		if c.cancel != nil {
			c.cancel()
			if err := <-c.done; err != nil {
				t.Errorf("manager: %v", err)
			}
		}
		if err := c.env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
}

// as is a porch.kpt.dev client acting as user, bound to role in ns.
func (c *controlPlane) as(t *testing.T, user, role string) client.Client {
	t.Helper()
	cl, err := client.New(c.env.As(t, ns, user, role), client.Options{Scheme: c.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// revision is what a person relies on of one PackageRevision.
type revision struct {
	Lifecycle                        porchv1alpha1.Lifecycle
	Revision                         int
	Owner                            string // the variant owning it, by name
	ProposedBy, ProposedAt, Approved string
	Files                            []string // of drafts and proposals
	Edit                             string   // edit.yaml, where a person wrote it
}

// snapshot reads every PackageRevision of the fleet repository.
func snapshot(g Gomega, c client.Client) map[string]revision {
	ctx := context.Background()
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]revision{}
	for _, pr := range list.Items {
		if pr.Spec.Repository != "fleet" {
			continue
		}
		r := revision{Lifecycle: pr.Spec.Lifecycle, Revision: pr.Spec.Revision,
			ProposedBy: pr.Annotations[porchv1alpha1.ProposedByAnnotation], ProposedAt: pr.Annotations[porchv1alpha1.ProposedAtAnnotation],
			Approved: pr.Annotations[porchv1alpha1.ApprovedByAnnotation]}
		if ref := metav1.GetControllerOf(&pr); ref != nil {
			r.Owner = ref.Name
		}
		if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
			prr := &content.PackageRevisionResources{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pr.Name}, prr)).To(Succeed())
			r.Files = slices.Sorted(maps.Keys(prr.Spec.Resources))
			r.Edit = prr.Spec.Resources["edit.yaml"]
		}
		out[pr.Name] = r
	}
	return out
}

// The experiment of a lost cluster: build a fleet, back its objects up
// as a GitOps tool or kubectl get -o json would, lose the control plane,
// apply the backup to a fresh one, and compare. Then the same for one
// variant deleted with deletionPolicy orphan and created again.
func TestRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	root := gitserver.Root(t)
	catalog := gitserver.InitBare(t, root, "catalog.git")
	fleet := gitserver.InitBare(t, root, "fleet.git")
	publishBlueprint(t, catalog)

	a := start(t)
	for _, r := range repositories(catalog, fleet) {
		g.Expect(a.env.Storage.Create(ctx, r)).To(Succeed())
	}
	for i := range variants {
		g.Expect(a.env.Storage.Create(ctx, variant(i))).To(Succeed())
	}
	editor, approver := a.as(t, "alice", "scion-editor"), a.as(t, "bob", "scion-approver")
	drafts := waitForDrafts(t, a.env.Client)

	// People at work: alice proposes 8, bob approves 4, someone edits 2
	// drafts.
	for i := range published + proposed {
		move(g, editor, drafts[i], porchv1alpha1.LifecycleProposed, "")
	}
	for i := range published {
		move(g, approver, drafts[i], porchv1alpha1.LifecyclePublished, "approval")
	}
	for i := published + proposed; i < published+proposed+edited; i++ {
		prr := &content.PackageRevisionResources{}
		g.Expect(editor.Get(ctx, client.ObjectKey{Namespace: ns, Name: drafts[i]}, prr)).To(Succeed())
		prr.Spec.Resources["edit.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edit\ndata:\n  by: person-%d\n", i)
		g.Expect(editor.Update(ctx, prr)).To(Succeed())
	}
	var before map[string]revision
	g.Eventually(func(g Gomega) {
		before = snapshot(g, a.env.Client)
		count := map[porchv1alpha1.Lifecycle]int{}
		for _, r := range before {
			count[r.Lifecycle]++
		}
		g.Expect(count).To(Equal(map[porchv1alpha1.Lifecycle]int{porchv1alpha1.LifecyclePublished: published,
			porchv1alpha1.LifecycleProposed: proposed, porchv1alpha1.LifecycleDraft: variants - published - proposed}))
		for _, r := range before {
			g.Expect(r.Owner).NotTo(BeEmpty(), "%+v", r)
			if r.Lifecycle != porchv1alpha1.LifecycleDraft {
				g.Expect(r.ProposedBy).To(Equal("alice"))
			}
			if r.Lifecycle == porchv1alpha1.LifecyclePublished {
				g.Expect(r.Approved).To(Equal("bob"))
				g.Expect(r.Revision).To(Equal(1), "published in git")
			}
		}
	}, timeout, interval).Should(Succeed())
	allReady(t, a.env.Storage)

	// The backup: what a person re-applies, without UIDs or status.
	backup := backupOf(t, a.env.Storage)
	a.stop(t)

	b := start(t)
	for _, o := range backup {
		g.Expect(b.env.Storage.Create(ctx, o)).To(Succeed(), "%s", o.GetName())
	}
	allReady(t, b.env.Storage)
	g.Eventually(func(g Gomega) {
		g.Expect(diff(before, snapshot(g, b.env.Client))).To(BeEmpty(), "git holds what the cluster lost")
	}, timeout, interval).Should(Succeed())
	// Settled: still the same a while later (no variant writes a second
	// draft meanwhile).
	g.Consistently(func(g Gomega) {
		g.Expect(diff(before, snapshot(g, b.env.Client))).To(BeEmpty())
	}, 5*time.Second, time.Second).Should(Succeed())

	// One variant deleted with deletionPolicy orphan and created again:
	// its draft, edited by a person, is its own again.
	name := fmt.Sprintf("pv-%02d", published+proposed)
	pv := &configv1alpha1.PackageVariant{}
	g.Expect(b.env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pv)).To(Succeed())
	pv.Spec.DeletionPolicy = configv1alpha1.DeletionPolicyOrphan
	g.Expect(b.env.Storage.Update(ctx, pv)).To(Succeed())
	g.Expect(b.env.Storage.Delete(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := b.env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &configv1alpha1.PackageVariant{})
		g.Expect(err).To(HaveOccurred())
		orphaned := snapshot(g, b.env.Client)[drafts[published+proposed]]
		g.Expect(orphaned.Owner).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
	again := variant(published + proposed)
	again.Spec.DeletionPolicy = configv1alpha1.DeletionPolicyOrphan
	g.Expect(b.env.Storage.Create(ctx, again)).To(Succeed())
	allReady(t, b.env.Storage)
	g.Eventually(func(g Gomega) {
		g.Expect(diff(before, snapshot(g, b.env.Client))).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

// diff lists the revisions that differ between two snapshots.
func diff(before, after map[string]revision) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if a, ok := after[name]; !ok {
			out = append(out, fmt.Sprintf("%s is gone (was %+v)", name, before[name]))
		} else if !reflect.DeepEqual(a, before[name]) {
			out = append(out, fmt.Sprintf("%s was %+v, is %+v", name, before[name], a))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[name]; !ok {
			out = append(out, fmt.Sprintf("%s is new: %+v", name, after[name]))
		}
	}
	return out
}

// publishBlueprint publishes the upstream package, app v1.
func publishBlueprint(t *testing.T, bare string) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: \"1\"\n"),
	}
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "v1", Contents: pkg.New(files)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Propose(ctx, "app", "v1", d.Commit, store.Proposal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, "app", "v1", "", "author", store.WriterRelease); err != nil {
		t.Fatal(err)
	}
}

func repositories(catalog, fleet string) []client.Object {
	return []client.Object{
		&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + catalog}}},
		&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + fleet, CreateBranch: true}}},
	}
}

// variant i puts app into folder pv-NN of the fleet.
func variant(i int) *configv1alpha1.PackageVariant {
	name := fmt.Sprintf("pv-%02d", i)
	return &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
			Downstream: &configv1alpha1.Downstream{Repo: "fleet", Package: name},
		}}
}

// waitForDrafts waits until every variant shows its draft, and returns
// their names by variant.
func waitForDrafts(t *testing.T, c client.Client) []string {
	g := NewWithT(t)
	out := make([]string, variants)
	g.Eventually(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(c.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		for _, pr := range list.Items {
			if ref := metav1.GetControllerOf(&pr); ref != nil && pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
				var i int
				if _, err := fmt.Sscanf(ref.Name, "pv-%02d", &i); err == nil {
					out[i] = pr.Name
				}
			}
		}
		g.Expect(out).NotTo(ContainElement(""))
	}, timeout, interval).Should(Succeed())
	return out
}

// move asks for a lifecycle as the client's user (through the approval
// subresource when sub says so).
func move(g Gomega, c client.Client, name string, to porchv1alpha1.Lifecycle, sub string) {
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		if pr.Spec.Lifecycle == to {
			return
		}
		pr.Spec.Lifecycle = to
		if sub != "" {
			g.Expect(c.SubResource(sub).Update(context.Background(), pr)).To(Succeed())
		} else {
			g.Expect(c.Update(context.Background(), pr)).To(Succeed())
		}
	}, timeout, interval).Should(Succeed())
}

// allReady waits until every variant is Ready for its generation.
func allReady(t *testing.T, c client.Client) {
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		list := &configv1alpha1.PackageVariantList{}
		g.Expect(c.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(variants))
		for _, pv := range list.Items {
			r := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
			g.Expect(r).NotTo(BeNil(), pv.Name)
			g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s %s", pv.Name, r.Reason, r.Message)
			g.Expect(r.ObservedGeneration).To(Equal(pv.Generation))
		}
	}, timeout, interval).Should(Succeed())
}

// backupOf reads the Repositories and PackageVariants as a backup keeps
// them: name, labels, annotations and spec; no UID, version or status.
func backupOf(t *testing.T, c client.Client) []client.Object {
	ctx := context.Background()
	repos := &configv1alpha1.RepositoryList{}
	pvs := &configv1alpha1.PackageVariantList{}
	if err := c.List(ctx, repos, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, pvs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []client.Object
	for _, r := range repos.Items {
		out = append(out, &configv1alpha1.Repository{ObjectMeta: kept(r.ObjectMeta), Spec: r.Spec})
	}
	for _, pv := range pvs.Items {
		out = append(out, &configv1alpha1.PackageVariant{ObjectMeta: kept(pv.ObjectMeta), Spec: pv.Spec})
	}
	return out
}

func kept(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations}
}
