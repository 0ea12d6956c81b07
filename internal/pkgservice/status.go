package pkgservice

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// statusBackoff paces the retries of a status write that lost a race
// with another writer of the same object.
var statusBackoff = wait.Backoff{Steps: 12, Duration: 20 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 2 * time.Second}

// WriteStatus is the one way a PackageRevision's status is written, by
// every writer (the sync, the controllers, scion rpkg): change edits pr's
// status (returning false when there is nothing to write), and the write
// is checked against the resourceVersion read. When another writer got in
// between, pr is read again with reader and change applied to it anew, so
// no writer's condition is ever dropped. pr holds what was written. It
// reports whether anything was.
func WriteStatus(ctx context.Context, c client.Client, reader client.Reader, pr *porchv1alpha1.PackageRevision, change func(*porchv1alpha1.PackageRevision) bool) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(statusBackoff, func() error {
		before := pr.DeepCopy()
		if !change(pr) {
			return nil
		}
		err := c.Status().Patch(ctx, pr, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			if gerr := reader.Get(ctx, client.ObjectKeyFromObject(pr), pr); gerr != nil {
				return gerr
			}
		}
		wrote = err == nil
		return err
	})
	return wrote, err
}
