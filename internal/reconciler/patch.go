package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusBackoff paces the retries of a status write that lost a race
// with another writer of the same object.
var statusBackoff = wait.Backoff{Steps: 12, Duration: 20 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 2 * time.Second}

// ErrStale is returned by an apply function that finds, on the object
// read again after a conflict, that the status it would write is no
// longer right (the spec moved on): PatchStatus then writes nothing and
// returns ErrStale.
var ErrStale = errors.New("the object changed since it was read")

// StatusWriter writes objects' status: the one way Scion does
// (PatchStatus). A manager has one, shared by its controllers, which
// remembers the manager's last status write of each object and, given
// the manager's informers, waits for the cache to show it (see
// PatchStatus). Without informers (a client with no cache: scion rpkg,
// the API server) it does not wait.
type StatusWriter struct {
	client    client.Client
	reader    client.Reader
	informers crcache.Informers

	mu      sync.Mutex
	own     map[types.UID]write           // the last status write of each object
	waiters map[types.UID][]chan struct{} // reconciles waiting for the cache to show it
	hooked  map[reflect.Type]bool         // kinds whose informer tells the writer
}

// NewStatusWriter writes with c; on a conflict the object is read again
// with reader (around any cache). informers, when not nil, are those of
// c's cache.
func NewStatusWriter(c client.Client, reader client.Reader, informers crcache.Informers) *StatusWriter {
	return &StatusWriter{client: c, reader: reader, informers: informers,
		own: map[types.UID]write{}, waiters: map[types.UID][]chan struct{}{}, hooked: map[reflect.Type]bool{}}
}

// PatchStatus is the one way Scion writes an object's status. apply
// edits obj's status from what the writer knows (setting only the
// conditions and fields it owns) and says whether there is anything to
// write; the write is a merge patch checked against the resourceVersion
// read, so nothing another writer did since is overwritten. On a conflict
// obj is read again (around any cache) and apply runs anew on it. obj
// holds what was written; it reports whether anything was.
//
// When obj is older than w's own last status write of it (the cache has
// not shown that write yet: a reconcile requeued by another object's
// event often runs before the object's own event arrives), it first waits
// for the cache's event of that write (catchUpWait at most) and starts
// from the cache's copy, instead of sending a write bound to conflict and
// reading the object again from the API server (at 10,000 variants of a
// set, half the variants' status writes did).
func PatchStatus[T client.Object](ctx context.Context, w *StatusWriter, obj T, apply func(T) (bool, error)) (bool, error) {
	w.catchUp(ctx, obj)
	wrote := false
	err := retry.RetryOnConflict(statusBackoff, func() error {
		before := obj.DeepCopyObject().(T)
		changed, err := apply(obj)
		if err != nil || !changed || apiequality.Semantic.DeepEqual(before, obj) {
			return err
		}
		err = w.client.Status().Patch(ctx, obj, statusPatch(before))
		if apierrors.IsConflict(err) {
			if gerr := w.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
				return gerr
			}
		}
		if err == nil {
			w.record(ctx, obj, before.GetResourceVersion())
		}
		wrote = err == nil
		return err
	})
	return wrote, err
}

// MergeFromParts is a JSON merge patch from before to the object it is
// applied to, computed from what parts returns for each (encoded as JSON:
// the fields the writer changes, as an object of the kind shows them)
// rather than from the whole objects, as client.MergeFrom computes it: a
// variant's spec and labels, say, without its status and metadata, which
// cost more to encode and compare than the change itself. With
// optimistic, the patch carries before's resourceVersion, so that it
// fails with a conflict over someone else's write (as
// client.MergeFromWithOptimisticLock).
func MergeFromParts(before client.Object, parts func(client.Object) any, optimistic bool) client.Patch {
	return partsPatch{before: before, parts: parts, optimistic: optimistic}
}

type partsPatch struct {
	before     client.Object
	parts      func(client.Object) any
	optimistic bool
}

func (partsPatch) Type() types.PatchType { return types.MergePatchType }

func (p partsPatch) Data(obj client.Object) ([]byte, error) {
	oldJSON, err := json.Marshal(p.parts(p.before))
	if err != nil {
		return nil, fmt.Errorf("encoding what was read: %w", err)
	}
	curJSON, err := json.Marshal(p.parts(obj))
	if err != nil {
		return nil, fmt.Errorf("encoding what to write: %w", err)
	}
	diff, err := jsonpatch.CreateMergePatch(oldJSON, curJSON)
	if err != nil || !p.optimistic {
		return diff, err
	}
	var patch map[string]any
	if err := json.Unmarshal(diff, &patch); err != nil {
		return nil, err
	}
	md, _ := patch["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["resourceVersion"] = p.before.GetResourceVersion()
	patch["metadata"] = md
	return json.Marshal(patch)
}

// statusPatch is the merge patch of a status write: obj's status from
// before's, checked against before's resourceVersion (a fifth of a
// variant's status write was the merge patch of its spec and metadata,
// which the status subresource ignores anyway). An object without a
// Status field is diffed whole.
func statusPatch(before client.Object) client.Patch {
	if !statusOf(before).IsValid() {
		return client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	return MergeFromParts(before, func(o client.Object) any {
		return map[string]any{"status": statusOf(o).Interface()}
	}, true)
}

// statusOf is obj's Status field (invalid when it has none).
func statusOf(obj client.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName("Status")
}

// catchUpWait bounds how long a status write waits for the cache to show
// the writer's last write of the object.
const catchUpWait = time.Second

// catchUp replaces obj with the cache's copy once the cache shows w's
// last status write of obj, when obj predates it and the cache's event
// comes within catchUpWait with the same generation (a newer spec is left
// to the write's conflict).
func (w *StatusWriter) catchUp(ctx context.Context, obj client.Object) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if w.informers == nil {
		return
	}
	w.mu.Lock()
	last, ok := w.own[uid]
	if !ok || rv != last.from {
		delete(w.own, uid) // the reader is past it
		w.mu.Unlock()
		return
	}
	seen := make(chan struct{})
	w.waiters[uid] = append(w.waiters[uid], seen)
	w.mu.Unlock()
	defer w.stopWaiting(uid, seen)

	fresh := obj.DeepCopyObject().(client.Object)
	key := client.ObjectKeyFromObject(obj)
	if err := w.client.Get(ctx, key, fresh); err != nil {
		return
	}
	if fresh.GetResourceVersion() == rv { // not yet: wait for its event
		timer := time.NewTimer(catchUpWait)
		defer timer.Stop()
		select {
		case <-seen:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
		if err := w.client.Get(ctx, key, fresh); err != nil || fresh.GetResourceVersion() == rv {
			return
		}
	}
	if fresh.GetUID() == uid && fresh.GetGeneration() == obj.GetGeneration() {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	}
}

func (w *StatusWriter) stopWaiting(uid types.UID, seen chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	left := slices.DeleteFunc(w.waiters[uid], func(c chan struct{}) bool { return c == seen })
	if len(left) == 0 {
		delete(w.waiters, uid)
	} else {
		w.waiters[uid] = left
	}
}

// write is a status write: the resourceVersion it was made from and the
// one it made.
type write struct {
	from, to string
	at       time.Time
}

// maxOwnWrites bounds the writes remembered; past it, those older than
// ownWriteTTL are dropped (a cache shows a write within milliseconds).
const (
	maxOwnWrites = 4096
	ownWriteTTL  = time.Minute
)

// record remembers w's write of obj (made from the resourceVersion from),
// and makes sure the informer of obj's kind tells w of the cache's
// updates.
func (w *StatusWriter) record(ctx context.Context, obj client.Object, from string) {
	uid, to := obj.GetUID(), obj.GetResourceVersion()
	if w.informers == nil || uid == "" || from == "" || from == to {
		return
	}
	w.hook(ctx, obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if len(w.own) >= maxOwnWrites {
		for k, v := range w.own {
			if now.Sub(v.at) > ownWriteTTL {
				delete(w.own, k)
			}
		}
	}
	w.own[uid] = write{from: from, to: to, at: now}
}

// hook adds, once per kind, a handler to the kind's informer that wakes
// the reconciles waiting for an object's update.
func (w *StatusWriter) hook(ctx context.Context, obj client.Object) {
	t := reflect.TypeOf(obj)
	w.mu.Lock()
	done := w.hooked[t]
	w.hooked[t] = true
	w.mu.Unlock()
	if done {
		return
	}
	inf, err := w.informers.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
	if err == nil {
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
			if obj, ok := o.(client.Object); ok {
				w.updated(obj.GetUID())
			}
		}})
	}
	if err != nil {
		w.mu.Lock()
		delete(w.hooked, t) // tried again at the next write
		w.mu.Unlock()
	}
}

// updated wakes the reconciles waiting for the cache's update of uid.
func (w *StatusWriter) updated(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.waiters[uid] {
		close(c)
	}
	delete(w.waiters, uid)
}
