package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
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

// PatchStatus is the one way Scion writes an object's status. apply
// edits obj's status from what the writer knows (setting only the
// conditions and fields it owns) and says whether there is anything to
// write; the write is a merge patch checked against the resourceVersion
// read, so nothing another writer did since is overwritten. On a conflict
// obj is read again with reader (around any cache) and apply runs anew on
// it. obj holds what was written; it reports whether anything was.
//
// When obj is older than this process's own last status write of it (the
// cache has not seen that write yet: a reconcile requeued by another
// object's event often runs before the object's own event arrives), it
// first waits a little for the cache to catch up and starts from the
// cache's copy, instead of sending a write bound to conflict and reading
// the object again from the API server (at 10,000 variants of a set, half
// the variants' status writes did).
func PatchStatus[T client.Object](ctx context.Context, c client.Client, reader client.Reader, obj T, apply func(T) (bool, error)) (bool, error) {
	catchUp(ctx, c, obj)
	wrote := false
	err := retry.RetryOnConflict(statusBackoff, func() error {
		before := obj.DeepCopyObject().(T)
		changed, err := apply(obj)
		if err != nil || !changed || apiequality.Semantic.DeepEqual(before, obj) {
			return err
		}
		err = c.Status().Patch(ctx, obj, statusPatch(before))
		if apierrors.IsConflict(err) {
			if gerr := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
				return gerr
			}
		}
		if err == nil {
			ownWrites.record(obj.GetUID(), before.GetResourceVersion(), obj.GetResourceVersion())
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
// this process's last write of the object.
const catchUpWait = time.Second

// catchUp replaces obj with the cache's copy once the cache has moved
// past this process's last status write of obj, when obj predates it and
// the cache gets there within catchUpWait with the same generation (a
// newer spec is left to the write's conflict, as before).
func catchUp(ctx context.Context, c client.Reader, obj client.Object) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if !ownWrites.behind(uid, rv) {
		return
	}
	fresh := obj.DeepCopyObject().(client.Object)
	deadline := time.Now().Add(catchUpWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			return
		}
		if fresh.GetResourceVersion() != rv {
			if fresh.GetUID() == uid && fresh.GetGeneration() == obj.GetGeneration() {
				reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownWrites are this process's last status write of each object: the
// resourceVersion it was made from and the one it made.
var ownWrites = &writes{m: map[types.UID]write{}}

type writes struct {
	mu sync.Mutex
	m  map[types.UID]write
}

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

func (w *writes) record(uid types.UID, from, to string) {
	if uid == "" || from == "" || from == to {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if len(w.m) >= maxOwnWrites {
		for k, v := range w.m {
			if now.Sub(v.at) > ownWriteTTL {
				delete(w.m, k)
			}
		}
	}
	w.m[uid] = write{from: from, to: to, at: now}
}

// behind says whether rv is the resourceVersion this process's last
// status write of uid was made from (the reader has not seen the write);
// a reader past it ends the record.
func (w *writes) behind(uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.m[uid]
	if !ok {
		return false
	}
	if rv == last.from {
		return true
	}
	delete(w.m, uid)
	return false
}
