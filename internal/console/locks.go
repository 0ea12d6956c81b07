package console

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

type conflictRow struct {
	Repository string
	configv1alpha1.LockConflict
}

type lockRow struct {
	Repository          string
	Packages, Conflicts int
}

type locksData struct {
	Repository    string
	Conflicts     []conflictRow
	MoreConflicts int
	Locks         []lockRow
	// Lock is the lock of ?repository=, shown whole.
	Lock *configv1alpha1.PackageLock
	Paging
}

// locks: the dependency locks of the namespace's deployment repositories,
// every conflict first (what cannot be installed and why), then each
// repository's lock a page at a time; ?repository= shows one lock whole
// (its packages, versions, states, the kinds they provide and their
// dependants).
func (s *Server) locks(r *http.Request) (any, error) {
	d := &locksData{Repository: r.URL.Query().Get("repository")}
	list := &configv1alpha1.PackageLockList{}
	if err := s.opts.Client.List(r.Context(), list, client.InNamespace(s.opts.Namespace)); err != nil {
		return d, fmt.Errorf("listing PackageLocks: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b configv1alpha1.PackageLock) int { return strings.Compare(a.Name, b.Name) })
	for i := range list.Items {
		l := &list.Items[i]
		if l.Name == d.Repository {
			d.Lock = l
		}
		for _, c := range l.Conflicts {
			if len(d.Conflicts) == maxListed {
				d.MoreConflicts++
				continue
			}
			d.Conflicts = append(d.Conflicts, conflictRow{Repository: l.Name, LockConflict: c})
		}
	}
	if d.Repository != "" && d.Lock == nil {
		return d, fmt.Errorf("repository %s has no PackageLock (it is not a deployment repository, or the controller has not read it yet)", d.Repository)
	}
	var from, to int
	d.Paging, from, to = pageOf(r, len(list.Items), s.opts.PageSize)
	for _, l := range list.Items[from:to] {
		d.Locks = append(d.Locks, lockRow{Repository: l.Name, Packages: len(l.Packages), Conflicts: len(l.Conflicts)})
	}
	return d, nil
}
