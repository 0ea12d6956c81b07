package reconciler

import (
	"context"
	"errors"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
func PatchStatus[T client.Object](ctx context.Context, c client.Client, reader client.Reader, obj T, apply func(T) (bool, error)) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(statusBackoff, func() error {
		before := obj.DeepCopyObject().(T)
		changed, err := apply(obj)
		if err != nil || !changed || apiequality.Semantic.DeepEqual(before, obj) {
			return err
		}
		err = c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			if gerr := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
				return gerr
			}
		}
		wrote = err == nil
		return err
	})
	return wrote, err
}
