package pkgservice

import (
	"cmp"
	"context"
	"slices"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// HistoryBeyond returns the published revisions of each package beyond
// the newest limit, oldest first, leaving out the latest and those keep
// says are still referenced: what a Repository's revisionHistoryLimit
// deletes.
func HistoryBeyond(revs []store.Revision, limit int, keep func(store.Revision) bool) []store.Revision {
	byPkg := map[string][]store.Revision{}
	for _, r := range revs {
		if r.Lifecycle == porchv1alpha1.LifecyclePublished || r.Lifecycle == porchv1alpha1.LifecycleDeletionProposed {
			byPkg[r.Package] = append(byPkg[r.Package], r)
		}
	}
	var out []store.Revision
	for _, published := range byPkg {
		slices.SortFunc(published, func(a, b store.Revision) int { return cmp.Compare(b.Revision, a.Revision) })
		for i, r := range published {
			if i < limit || r.Latest || keep(r) {
				continue
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Revision) int {
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.Revision, b.Revision))
	})
	return out
}

// PruneHistory deletes from git the published revisions beyond a
// Repository's revisionHistoryLimit (HistoryBeyond), keeping those a
// floating tag points at and those referenced says are referenced. The
// tags are read only for packages with revisions beyond the limit, so a
// sync with nothing to prune costs one list of the revisions. It returns
// what it deleted.
func (s *Service) PruneHistory(ctx context.Context, st store.Store, limit int, referenced func(store.Revision) bool) ([]store.Revision, error) {
	revs, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	tagged := map[string]map[int]bool{}
	var deleted []store.Revision
	for _, r := range HistoryBeyond(revs, limit, referenced) {
		if _, ok := tagged[r.Package]; !ok {
			tags, err := st.FloatingTags(ctx, r.Package)
			if err != nil {
				return deleted, err
			}
			tagged[r.Package] = map[int]bool{}
			for _, n := range tags {
				tagged[r.Package][n] = true
			}
		}
		if tagged[r.Package][r.Revision] {
			continue
		}
		if err := s.Delete(ctx, st, r); err != nil {
			return deleted, err
		}
		deleted = append(deleted, r)
	}
	return deleted, nil
}
