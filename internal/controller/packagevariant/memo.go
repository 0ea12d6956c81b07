package packagevariant

import (
	"encoding/json"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/variant"
)

// producedKey names everything a variant's production reads: the spec,
// the upstream revision and its Repository, the downstream Repository
// and the variant's revisions in git, and the objects its injectors name
// (by their epochs: any event of such an object moves them). Two
// reconciles with equal keys produce the same package.
type producedKey struct {
	uid        types.UID
	generation int64
	upRepo     repoVersion
	// upstream is the upstream revision: its package, workspace, number
	// and commit (the Kptfile's upstream records them).
	upstream [4]string
	downRepo repoVersion
	// draft and published are the commits of the variant's draft and of
	// the latest published revision ("": none).
	draft, published string
	injection        uint64
}

// repoVersion is a Repository's identity and spec version.
type repoVersion struct {
	uid        types.UID
	generation int64
}

// producedResult is what a production showed, without the package: the
// conditions and injection points, and the render status of the draft.
type producedResult struct {
	key        producedKey
	conditions []metav1.Condition
	points     []variant.Point
	render     *kptfilev1.RenderStatus
}

// producedMemo remembers, per variant, the last package the controller
// made and the inputs it made it from, once it is in git: the reconcile
// the variant's own write brings back (its PackageRevision changed), or
// any event that changes none of the inputs (a label, someone's
// condition on the draft), shows the draft without reading and producing
// it again. Any change of an input (a person's commit on the draft, an
// upstream revision, the spec, an injected object) misses, and the
// variant is produced anew. The memo is per process: a new leader starts
// empty.
type producedMemo struct {
	mu sync.Mutex
	m  map[types.NamespacedName]memoEntry
	// epochs count the events of the objects injectors name, by
	// namespace and name (the injectors' index maps an event to its
	// variants the same way).
	epochs map[types.NamespacedName]uint64
}

// memoEntry is a producedResult as the memo keeps it: the render status
// encoded, one block of bytes. A memo entry lives as long as its variant
// (ten thousand of them in a large fleet), and the render status as a Go
// value (every step's name, image and results) was a few dozen small
// objects per variant for the garbage collector to mark on every cycle.
type memoEntry struct {
	key        producedKey
	conditions []metav1.Condition
	points     []variant.Point
	render     []byte
}

// epoch is the injection epoch of a variant: the sum of its injected
// objects' epochs, which any event of one of them moves.
func (m *producedMemo) epoch(pv *configv1alpha1.PackageVariant) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum uint64
	for _, inj := range pv.Spec.Injectors {
		sum += m.epochs[types.NamespacedName{Namespace: pv.Namespace, Name: inj.Name}]
	}
	return sum
}

// injected records an event of an object some injector names: every memo
// of a variant injecting it taken before is stale.
func (m *producedMemo) injected(obj types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.epochs == nil {
		m.epochs = map[types.NamespacedName]uint64{}
	}
	m.epochs[obj]++
}

// get returns the variant's memo if it was taken with key.
func (m *producedMemo) get(name types.NamespacedName, key producedKey) (producedResult, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[name]
	if !ok || e.key != key {
		return producedResult{}, false
	}
	r := producedResult{key: e.key, conditions: e.conditions, points: e.points}
	if e.render != nil {
		r.render = &kptfilev1.RenderStatus{}
		if err := json.Unmarshal(e.render, r.render); err != nil {
			return producedResult{}, false // cannot happen: the memo wrote it
		}
	}
	return r, true
}

// put remembers a production.
func (m *producedMemo) put(name types.NamespacedName, r producedResult) {
	e := memoEntry{key: r.key, conditions: r.conditions, points: r.points}
	if r.render != nil {
		b, err := json.Marshal(r.render)
		if err != nil {
			return // not remembered: produced anew next time
		}
		e.render = b
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[types.NamespacedName]memoEntry{}
	}
	m.m[name] = e
}

// forget drops the variant's memo.
func (m *producedMemo) forget(name types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, name)
}

// memoKey is the key of the variant's production from what the reconcile
// has read so far, and whether the variant may be memoized at all:
// variants with dependencies (their gate follows other packages), a
// Manual update policy over a version range (held on a revision read
// from the draft) and a proposal (frozen) are produced every time.
func memoKey(s *scope) (producedKey, bool) {
	pv, d := s.pv, s.down.revs
	if pv.Spec.Dependencies != nil || d.Proposal != nil ||
		pv.Spec.Upstream.VersionRange != "" && pv.Spec.Upstream.UpdatePolicy == configv1alpha1.UpdatePolicyManual ||
		pv.Annotations[configv1alpha1.HoldUpstreamAnnotation] != "" {
		return producedKey{}, false
	}
	k := producedKey{
		uid: pv.UID, generation: pv.Generation,
		upRepo:    repoVersion{s.up.obj.UID, s.up.obj.Generation},
		upstream:  [4]string{s.take.rev.Package, s.take.rev.Workspace, strconv.Itoa(s.take.rev.Revision), s.take.rev.Commit},
		downRepo:  repoVersion{s.down.obj.UID, s.down.obj.Generation},
		injection: s.injection,
	}
	if d.Draft != nil {
		k.draft = d.Draft.Commit
	}
	if d.Published != nil {
		k.published = d.Published.Commit
	}
	return k, true
}

// memoizable reports whether a production may be remembered: it made the
// package the variant asks for (a failure or an incomplete injection is
// tried again on every reconcile, as it may depend on what changes
// without an event) and wrote nothing else meanwhile (a draft brought
// onto a newer published revision is produced once more from there).
func memoizable(out variant.Output, rebased bool) bool {
	if rebased || out.Package == nil || !out.Outcome.Injection.OK() {
		return false
	}
	for _, c := range out.Conditions {
		if c.Type == configv1alpha1.DownstreamEnsuredCondition && c.Reason != variant.DownstreamReadyReason {
			return false
		}
	}
	return true
}
