package pkgservice

import (
	"context"
	"errors"
	"fmt"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// ErrNothingToRevertTo is matched when a published revision has no
// published revision before it.
var ErrNothingToRevertTo = errors.New("no revision was published before it")

// Revert rolls a published revision back: a new published revision of
// the package whose content is the revision published before it, recorded
// in git (workspace, trailers naming rollout and the reverted revision,
// published by by). It is idempotent: a revision that is no longer the
// latest (its revert, or anything else, was published since) is left
// alone, and a revert draft or proposal left by a crash is finished. It
// returns the revert (zero when nothing was done), and whether this call
// published it (false when it was published before: a caller announces a
// rollback once).
func (s *Service) Revert(ctx context.Context, st store.Store, rev store.Revision, workspace, by string, trailers store.Trailers) (store.Revision, bool, error) {
	revs, err := st.ListPackage(ctx, rev.Package)
	if err != nil {
		return store.Revision{}, false, err
	}
	var prev *store.Revision
	var pending *store.Revision
	for i := range revs {
		r := &revs[i]
		switch {
		case r.Workspace == workspace:
			pending = r
		case r.Lifecycle == porchv1alpha1.LifecyclePublished && r.Revision < rev.Revision && (prev == nil || r.Revision > prev.Revision):
			prev = r
		}
	}
	revertOf := fmt.Sprintf("%s/v%d", rev.Package, rev.Revision)
	if pending != nil && pending.Trailers[store.TrailerRevertOf] != revertOf {
		return store.Revision{}, false, fmt.Errorf("rolling back %s v%d: workspace %s holds v%d, which is not its revert (%s: %q)", rev.Package, rev.Revision, workspace, pending.Revision, store.TrailerRevertOf, pending.Trailers[store.TrailerRevertOf])
	}
	if pending != nil && pending.Lifecycle == porchv1alpha1.LifecyclePublished {
		return *pending, false, nil // done before
	}
	if pending == nil {
		latest := false
		for _, r := range revs {
			latest = latest || (r.Latest && r.Revision == rev.Revision)
		}
		if !latest {
			return store.Revision{}, false, nil // superseded: nothing to roll back
		}
		if prev == nil {
			return store.Revision{}, false, fmt.Errorf("rolling back %s v%d: %w", rev.Package, rev.Revision, ErrNothingToRevertTo)
		}
		contents, err := st.Read(ctx, *prev)
		if err != nil {
			return store.Revision{}, false, err
		}
		t := store.Trailers{store.TrailerRevertOf: revertOf}
		for k, v := range trailers {
			t[k] = v
		}
		d, err := st.WriteDraft(ctx, store.DraftWrite{Package: rev.Package, Workspace: workspace, Contents: contents, Trailers: t, Writer: store.WriterPackageRollout,
			Message: fmt.Sprintf("Roll back %s v%d to the content of v%d", rev.Package, rev.Revision, prev.Revision), CheckRemote: true})
		if err != nil {
			return store.Revision{}, false, err
		}
		pending = &d
	}
	if pending.Lifecycle == porchv1alpha1.LifecycleDraft {
		p, err := st.Propose(ctx, pending.Package, pending.Workspace, pending.Commit, store.Proposal{})
		if err != nil {
			return store.Revision{}, false, err
		}
		pending = &p
	}
	out, err := st.Publish(ctx, pending.Package, pending.Workspace, pending.Commit, by, store.WriterPackageRollout)
	return out, err == nil, err
}
