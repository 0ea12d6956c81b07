package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/compact"
)

// Lists of package revisions are served from the server's own copy of
// the storage, kept by a watch (listCache), instead of asking the
// cluster's API server for every revision whole and converting each: at
// 10,000 revisions that is the difference between seconds and a tenth of
// one. What a list shows:
//
//   - a list with resourceVersion "" (kubectl get, client-go's List: the
//     newest) shows every write this server has made or shown (a get, a
//     create, an update, an approval, a deletion, a watch event through
//     it) before the list: it waits, up to listWait, for the watch to bring
//     them; writes made straight to the storage by others (Scion's
//     controllers) are shown once the watch brings them, milliseconds
//     later;
//   - "0" shows what the copy holds; "N" with resourceVersionMatch
//     NotOlderThan waits for the copy to reach N;
//   - resourceVersionMatch Exact, the legacy exact reads (N with a limit),
//     a continue token of the storage's, a field selector the storage does
//     not support, and any list while the copy is not filled or does not
//     catch up in time, are the storage's (as before, and as slow).
//
// Pages (limit, continue) are cut from a snapshot of the copy taken at the
// first page, so that all pages show one state; snapshots are kept for
// snapshotTTL after their last use (at most maxSnapshots), and a continue
// token whose snapshot is gone is refused as expired (410), which
// client-go's pager answers by listing again whole.

// listWait bounds how long a list waits for the copy to catch up before
// it asks the storage instead.
const listWait = 3 * time.Second

// snapshotTTL is how long a snapshot of the copy is kept after a page was
// cut from it.
const snapshotTTL = 5 * time.Minute

// maxSnapshots bounds the snapshots kept; past it, the oldest is dropped.
const maxSnapshots = 16

// continueVersion marks the continue tokens the copy hands out (the
// storage's say meta.k8s.io/v1).
const continueVersion = "scion.dev/list/v1"

// listCache is the server's copy of every stored revision, in the shape
// porch.kpt.dev lists them (porchShape) without managed fields. It is the
// store of a client-go Reflector: the reflector applies each event and
// then the event's resourceVersion (UpdateResourceVersion), so that the
// copy at rv holds exactly the storage's revisions at rv.
type listCache struct {
	mu     sync.RWMutex
	objs   map[string]*porchv1alpha1.PackageRevision
	rv     uint64
	filled bool
	// moved is closed, and replaced, whenever rv moves.
	moved chan struct{}

	// seen is the newest resourceVersion of a revision this server wrote
	// or showed.
	seen atomic.Uint64

	snapMu sync.Mutex
	snaps  map[uint64]*snapshot

	// wait bounds how long a list waits for the copy to catch up
	// (listWait).
	wait time.Duration
}

// snapshot is the copy's revisions at rv, sorted by namespace and name.
type snapshot struct {
	rv       uint64
	keys     []string
	objs     []*porchv1alpha1.PackageRevision
	lastUsed time.Time
}

func newListCache() *listCache {
	return &listCache{objs: map[string]*porchv1alpha1.PackageRevision{}, moved: make(chan struct{}), snaps: map[uint64]*snapshot{}, wait: listWait}
}

var (
	_ cache.ReflectorStore         = &listCache{}
	_ cache.ResourceVersionUpdater = &listCache{}
)

// run keeps the copy from a watch of the storage until ctx ends.
func (c *listCache) run(ctx context.Context, lw cache.ListerWatcher) {
	r := cache.NewReflectorWithOptions(lw, &porchv1alpha1.PackageRevision{}, c, cache.ReflectorOptions{Name: "porch-api-list-cache"})
	r.RunWithContext(ctx)
}

// Add applies an added revision (the Reflector's store).
func (c *listCache) Add(obj any) error { return c.put(obj) }

// Update applies a changed revision.
func (c *listCache) Update(obj any) error { return c.put(obj) }

// Delete applies a deleted revision.
func (c *listCache) Delete(obj any) error {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.objs, key)
	c.mu.Unlock()
	return nil
}

// Replace applies a whole list (the watch started, or started again).
func (c *listCache) Replace(items []any, rv string) error {
	objs := make(map[string]*porchv1alpha1.PackageRevision, len(items))
	for _, item := range items {
		pr, ok := item.(*porchv1alpha1.PackageRevision)
		if !ok {
			return fmt.Errorf("list cache: not a PackageRevision: %T", item)
		}
		objs[pr.Namespace+"/"+pr.Name] = listShape(pr)
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("list cache: the list's resourceVersion %q: %w", rv, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs = objs
	c.filled = true
	// A list may be older than the last event seen (the watch started
	// again from an older state): it is what the copy holds now.
	c.setRV(n)
	return nil
}

// Resync does nothing: the copy is not a queue.
func (c *listCache) Resync() error { return nil }

// UpdateResourceVersion records that the copy holds the storage's
// revisions at rv (called after each event and bookmark).
func (c *listCache) UpdateResourceVersion(rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > c.rv {
		c.setRV(n)
	}
}

// setRV moves the copy's resourceVersion, waking those waiting for it;
// c.mu is held.
func (c *listCache) setRV(n uint64) {
	if n == c.rv {
		return
	}
	c.rv = n
	close(c.moved)
	c.moved = make(chan struct{})
}

func (c *listCache) put(obj any) error {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return fmt.Errorf("list cache: not a PackageRevision: %T", obj)
	}
	pr = listShape(pr)
	c.mu.Lock()
	c.objs[pr.Namespace+"/"+pr.Name] = pr
	c.mu.Unlock()
	return nil
}

// listShape is pr as lists show it: porch.kpt.dev's shape (porchShape),
// without managed fields (lists do not show them; get does), compacted
// (the copy holds every revision: the strings they repeat share their
// bytes).
func listShape(pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	pr.ManagedFields = nil
	porchShape(pr)
	compact.Object(pr)
	return pr
}

// saw records the resourceVersion of a revision this server wrote or
// showed, for the lists that follow to show it too.
func (c *listCache) saw(obj runtime.Object) {
	if c == nil || obj == nil {
		return
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	n, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	for {
		cur := c.seen.Load()
		if n <= cur || c.seen.CompareAndSwap(cur, n) {
			return
		}
	}
}

// waitFor waits until the copy is filled and at least at rv, up to
// c.wait; false when it did not get there.
func (c *listCache) waitFor(ctx context.Context, rv uint64) bool {
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	for {
		c.mu.RLock()
		ok, moved := c.filled && c.rv >= rv, c.moved
		c.mu.RUnlock()
		if ok {
			return true
		}
		select {
		case <-moved:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// listToken is a continue token of the copy's.
type listToken struct {
	Version string `json:"v"`
	RV      uint64 `json:"rv"`
	// Start is the key (namespace/name) the next page starts after.
	Start string `json:"start"`
}

// fieldValues values the fields a list may select revisions by: the
// storage's (the +kubebuilder:selectablefield markers of PackageRevision,
// valued as the cluster's API server values them: "" when absent) and
// metadata's.
var fieldValues = map[string]func(pr *porchv1alpha1.PackageRevision) string{
	"metadata.name":      func(pr *porchv1alpha1.PackageRevision) string { return pr.Name },
	"metadata.namespace": func(pr *porchv1alpha1.PackageRevision) string { return pr.Namespace },
	"spec.repository":    func(pr *porchv1alpha1.PackageRevision) string { return pr.Spec.Repository },
	"spec.packageName":   func(pr *porchv1alpha1.PackageRevision) string { return pr.Spec.PackageName },
	"spec.workspaceName": func(pr *porchv1alpha1.PackageRevision) string { return pr.Spec.WorkspaceName },
	"spec.revision": func(pr *porchv1alpha1.PackageRevision) string {
		if pr.Spec.Revision == 0 {
			return ""
		}
		return strconv.Itoa(pr.Spec.Revision)
	},
	"spec.lifecycle": func(pr *porchv1alpha1.PackageRevision) string { return string(pr.Spec.Lifecycle) },
}

// matcher selects revisions by a list's selectors.
type matcher struct {
	ns     string
	labels labels.Selector
	fields []fields.Requirement
}

func (m *matcher) matches(pr *porchv1alpha1.PackageRevision) bool {
	if m.ns != "" && pr.Namespace != m.ns {
		return false
	}
	if m.labels != nil && !m.labels.Matches(labels.Set(pr.Labels)) {
		return false
	}
	for _, r := range m.fields {
		v := fieldValues[r.Field](pr)
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals:
			if v != r.Value {
				return false
			}
		case selection.NotEquals:
			if v == r.Value {
				return false
			}
		}
	}
	return true
}

// selectsAll says whether the matcher selects every revision of its
// namespace (only then does a page say how many remain, as the storage
// does).
func (m *matcher) selectsAll() bool {
	return (m.labels == nil || m.labels.Empty()) && len(m.fields) == 0
}

// newMatcher returns the matcher of opts, false when the copy cannot
// answer them (a field the storage would refuse, so that the storage
// says so).
func newMatcher(ns string, opts *metainternalversion.ListOptions) (*matcher, bool) {
	m := &matcher{ns: ns, labels: opts.LabelSelector}
	if opts.FieldSelector != nil {
		for _, r := range opts.FieldSelector.Requirements() {
			if _, ok := fieldValues[r.Field]; !ok {
				return nil, false
			}
			switch r.Operator {
			case selection.Equals, selection.DoubleEquals, selection.NotEquals:
			default:
				return nil, false
			}
			m.fields = append(m.fields, r)
		}
	}
	return m, true
}

// list answers a list from the copy; false when the storage must (see the
// comment at the top).
func (c *listCache) list(ctx context.Context, ns string, opts *metainternalversion.ListOptions) (*porchv1alpha1.PackageRevisionList, bool, error) {
	if c == nil {
		return nil, false, nil
	}
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	m, ok := newMatcher(ns, opts)
	if !ok {
		return nil, false, nil
	}
	if opts.Continue != "" {
		tok, ok := decodeToken(opts.Continue)
		if !ok {
			return nil, false, nil
		}
		if opts.ResourceVersion != "" {
			return nil, true, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if ns != "" && !strings.HasPrefix(tok.Start, ns+"/") {
			return nil, true, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: it continues a list of another namespace than %s", ns))
		}
		snap, err := c.snapshotAt(tok.RV)
		if err != nil {
			return nil, true, err
		}
		return snap.page(m, tok.Start, opts.Limit), true, nil
	}
	c.mu.RLock()
	filled := c.filled
	c.mu.RUnlock()
	if !filled {
		// Not waited for: the first list of the storage can take long.
		return nil, false, nil
	}
	need, ok := c.needs(opts)
	if !ok || !c.waitFor(ctx, need) {
		return nil, false, nil
	}
	if opts.Limit <= 0 {
		// Unpaged: a snapshot of its own, not kept.
		return c.snapshot().page(m, "", 0), true, nil
	}
	return c.takeSnapshot().page(m, "", opts.Limit), true, nil
}

// needs is the resourceVersion the copy must be at to answer opts; false
// when it cannot answer them.
func (c *listCache) needs(opts *metainternalversion.ListOptions) (uint64, bool) {
	switch {
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		return 0, false
	case opts.ResourceVersion == "":
		return c.seen.Load(), true
	case opts.ResourceVersion == "0":
		return 0, true
	}
	if opts.ResourceVersionMatch == "" && opts.Limit > 0 {
		// A legacy exact read of a page at N.
		return 0, false
	}
	n, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

func compareRevisions(a, b *porchv1alpha1.PackageRevision) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// snapshot returns the copy as it is now, sorted.
func (c *listCache) snapshot() *snapshot {
	c.mu.RLock()
	s := &snapshot{rv: c.rv, objs: make([]*porchv1alpha1.PackageRevision, 0, len(c.objs))}
	for _, pr := range c.objs {
		s.objs = append(s.objs, pr)
	}
	c.mu.RUnlock()
	slices.SortFunc(s.objs, compareRevisions)
	s.keys = make([]string, len(s.objs))
	for i, pr := range s.objs {
		s.keys[i] = pr.Namespace + "/" + pr.Name
	}
	s.lastUsed = time.Now()
	return s
}

// takeSnapshot returns the snapshot of the copy as it is now, keeping it
// for the pages that follow.
func (c *listCache) takeSnapshot() *snapshot {
	c.mu.RLock()
	rv := c.rv
	c.mu.RUnlock()
	c.snapMu.Lock()
	if s, ok := c.snaps[rv]; ok {
		s.lastUsed = time.Now()
		c.snapMu.Unlock()
		return s
	}
	c.snapMu.Unlock()

	s := c.snapshot()
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	now := time.Now()
	for rv, old := range c.snaps {
		if now.Sub(old.lastUsed) > snapshotTTL {
			delete(c.snaps, rv)
		}
	}
	for len(c.snaps) >= maxSnapshots {
		var oldest *snapshot
		for _, old := range c.snaps {
			if oldest == nil || old.lastUsed.Before(oldest.lastUsed) {
				oldest = old
			}
		}
		delete(c.snaps, oldest.rv)
	}
	c.snaps[s.rv] = s
	return s
}

// snapshotAt returns the snapshot a continue token was cut from: kept, or
// taken again when the copy has not moved since; else the token has
// expired.
func (c *listCache) snapshotAt(rv uint64) (*snapshot, error) {
	c.snapMu.Lock()
	s, ok := c.snaps[rv]
	if ok {
		s.lastUsed = time.Now()
	}
	c.snapMu.Unlock()
	if ok {
		return s, nil
	}
	c.mu.RLock()
	same := c.filled && c.rv == rv
	c.mu.RUnlock()
	if same {
		if s := c.takeSnapshot(); s.rv == rv {
			return s, nil
		}
	}
	return nil, apierrors.NewResourceExpired("the list this continue token belongs to is no longer held by the server: list again")
}

// page cuts a page of at most limit matching revisions (all when limit
// is 0) starting after the key start.
func (s *snapshot) page(m *matcher, start string, limit int64) *porchv1alpha1.PackageRevisionList {
	i := 0
	if start != "" {
		i, _ = slices.BinarySearch(s.keys, start)
		if i < len(s.keys) && s.keys[i] == start {
			i++
		}
	} else if m.ns != "" {
		i, _ = slices.BinarySearch(s.keys, m.ns+"/")
	}
	list := &porchv1alpha1.PackageRevisionList{}
	list.ResourceVersion = strconv.FormatUint(s.rv, 10)
	inRange := func(i int) bool { return i < len(s.objs) && (m.ns == "" || s.objs[i].Namespace == m.ns) }
	for ; inRange(i); i++ {
		if limit > 0 && int64(len(list.Items)) == limit {
			break
		}
		if pr := s.objs[i]; m.matches(pr) {
			list.Items = append(list.Items, *pr)
		}
	}
	if !inRange(i) {
		return list
	}
	// More to come: the next page starts after the last one looked at.
	list.Continue = encodeToken(listToken{Version: continueVersion, RV: s.rv, Start: s.keys[i-1]})
	if m.selectsAll() {
		remaining := int64(0)
		for j := i; inRange(j); j++ {
			remaining++
		}
		list.RemainingItemCount = &remaining
	}
	return list
}

func encodeToken(t listToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads a continue token of the copy's; false for any other
// (the storage's).
func decodeToken(s string) (listToken, bool) {
	var t listToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Version != continueVersion {
		return listToken{}, false
	}
	return t, true
}
