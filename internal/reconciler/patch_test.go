package reconciler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/requests"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var env *testenv.Env

// TestMain starts a control plane for the status writes' test (no
// controllers run: the test is the only writer).
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, func(e *testenv.Env) error {
		env = e
		return nil
	}))
}

// A status write from a copy older than the writer's own last write (the
// cache has not shown it yet) waits for the cache instead of conflicting:
// no 409, no read around the cache, and the second write keeps what the
// first wrote. A copy made stale by someone else's write still conflicts,
// is read again and written right.
func TestPatchStatus_waitsForItsOwnWrite(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "status")
	count := &requests.Counter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = count.Wrap
	s := scheme.New()
	cache, err := crcache.New(cfg, crcache.Options{Scheme: s, DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = cache.Start(ctx) }()
	c, err := client.New(cfg, client.Options{Scheme: s, Cache: &client.CacheOptions{Reader: cache}})
	g.Expect(err).NotTo(HaveOccurred())
	direct, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())

	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "https://git.example.com/r.git"}}}
	g.Expect(env.Storage.Create(ctx, repo)).To(Succeed())
	stale := &configv1alpha1.Repository{}
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(repo), stale) }).WithTimeout(30 * time.Second).Should(Succeed())

	set := func(typ string) func(*configv1alpha1.Repository) (bool, error) {
		return func(r *configv1alpha1.Repository) (bool, error) {
			meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Set"})
			return true, nil
		}
	}
	w := reconciler.NewStatusWriter(c, direct, cache)
	wrote, err := reconciler.PatchStatus(ctx, w, stale.DeepCopy(), set("First"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	gets := count.Method(http.MethodGet)
	// From the same (now stale) copy, at once, as a reconcile requeued by
	// another object's event would.
	wrote, err = reconciler.PatchStatus(ctx, w, stale.DeepCopy(), set("Second"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	g.Expect(count.Conflicts()).To(BeZero(), "no write bound to conflict was sent")
	g.Expect(count.Method(http.MethodGet)).To(Equal(gets), "nothing read around the cache")
	got := &configv1alpha1.Repository{}
	g.Expect(direct.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "First")).To(BeTrue(), "the second write kept the first's")
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Second")).To(BeTrue())

	// Someone else writes: a copy from before is not this process's own
	// lag; the write conflicts, reads again and keeps the other's change.
	before := got.DeepCopy()
	other := got.DeepCopy()
	meta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "Set"})
	g.Expect(env.Storage.Status().Update(ctx, other)).To(Succeed())
	wrote, err = reconciler.PatchStatus(ctx, w, before, set("Third"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	g.Expect(count.Conflicts()).To(Equal(int64(1)))
	g.Expect(direct.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	for _, typ := range []string{"First", "Second", "Other", "Third"} {
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, typ)).To(BeTrue(), typ)
	}
}

// bodies records the bodies of the PATCH requests sent through it.
type bodies struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []string
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		b.mu.Lock()
		b.sent = append(b.sent, string(data))
		b.mu.Unlock()
	}
	return b.next.RoundTrip(r)
}

// A status write sends the change of the status and the resourceVersion
// it was made from, nothing of the rest of the object: a condition
// removed is gone, one changed is changed, and the spec, changed in the
// copy by mistake, is neither sent nor written.
func TestPatchStatus_sendsTheStatusOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "status")
	rec := &bodies{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec }
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())

	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "https://git.example.com/r.git"}}}
	g.Expect(env.Storage.Create(ctx, repo)).To(Succeed())
	meta.SetStatusCondition(&repo.Status.Conditions, metav1.Condition{Type: "Gone", Status: metav1.ConditionTrue, Reason: "Set"})
	meta.SetStatusCondition(&repo.Status.Conditions, metav1.Condition{Type: "Kept", Status: metav1.ConditionFalse, Reason: "Set"})
	g.Expect(env.Storage.Status().Update(ctx, repo)).To(Succeed())
	read := repo.DeepCopy()

	wrote, err := reconciler.PatchStatus(ctx, reconciler.NewStatusWriter(c, c, nil), read, func(r *configv1alpha1.Repository) (bool, error) {
		meta.RemoveStatusCondition(&r.Status.Conditions, "Gone")
		meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: "Kept", Status: metav1.ConditionTrue, Reason: "Changed"})
		r.Spec.Git.Repo = "https://git.example.com/other.git"
		return true, nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wrote).To(BeTrue())
	g.Expect(rec.sent).To(HaveLen(1))
	var sent map[string]any
	g.Expect(json.Unmarshal([]byte(rec.sent[0]), &sent)).To(Succeed())
	g.Expect(sent).To(HaveKey("status"))
	g.Expect(sent).To(HaveLen(2), "metadata and status only: %s", rec.sent[0])
	g.Expect(sent["metadata"]).To(Equal(map[string]any{"resourceVersion": repo.ResourceVersion}), "checked against what was read")

	got := &configv1alpha1.Repository{}
	g.Expect(env.Storage.Get(ctx, client.ObjectKeyFromObject(repo), got)).To(Succeed())
	g.Expect(meta.FindStatusCondition(got.Status.Conditions, "Gone")).To(BeNil())
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Kept")).To(BeTrue())
	g.Expect(got.Spec.Git.Repo).To(Equal("https://git.example.com/r.git"))
	g.Expect(read.ResourceVersion).To(Equal(got.ResourceVersion), "the object holds what was written")
}

// A patch from parts carries the change of those parts only (a label
// removed is null, one added is set, the spec's change), nothing of the
// rest (the status changed too), and before's resourceVersion when it is
// optimistic.
func TestMergeFromParts(t *testing.T) {
	g := NewWithT(t)
	before := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "v", ResourceVersion: "7", Labels: map[string]string{"a": "1", "b": "2"}},
		Spec: configv1alpha1.PackageVariantSpec{Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"}}}
	after := before.DeepCopy()
	after.Labels = map[string]string{"a": "1", "c": "3"}
	after.Spec.Upstream.Revision = "2"
	after.Status.ObservedGeneration = 3
	parts := func(o client.Object) any {
		pv := o.(*configv1alpha1.PackageVariant)
		return map[string]any{"metadata": map[string]any{"labels": pv.Labels}, "spec": pv.Spec}
	}
	p := reconciler.MergeFromParts(before, parts, false)
	g.Expect(p.Type()).To(Equal(types.MergePatchType))
	data, err := p.Data(after)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(MatchJSON(`{"metadata":{"labels":{"b":null,"c":"3"}},"spec":{"upstream":{"revision":"2"}}}`))
	data, err = reconciler.MergeFromParts(before, parts, true).Data(after)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(MatchJSON(`{"metadata":{"resourceVersion":"7","labels":{"b":null,"c":"3"}},"spec":{"upstream":{"revision":"2"}}}`))
}
