package repository

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// fetchMarks remembers, per Repository, what its last Fetch in this
// process answered: the generation, the sync-requested annotation, and
// when it started. A sync that finds them unchanged, and no
// spec.sync.runOnceAt come due since, is periodic (store.Store.Resync,
// which may skip what the process wrote itself); any other, the first
// of a process, after a spec change, a failure or a requested sync
// (pkgservice.RequestSync, which follows every write of another process),
// is a Fetch. It is safe for concurrent use; the zero value is ready.
type fetchMarks struct {
	mu   sync.Mutex
	last map[types.NamespacedName]fetchMark
}

// fetchMark is what a Fetch of a Repository answered.
type fetchMark struct {
	generation int64
	requested  string
	at         time.Time
}

// periodic says whether a sync of repo starting now is periodic.
func (f *fetchMarks) periodic(repo *configv1alpha1.Repository, now time.Time) bool {
	f.mu.Lock()
	last, ok := f.last[types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}]
	f.mu.Unlock()
	if !ok || last.generation != repo.Generation || last.requested != repo.Annotations[configv1alpha1.SyncRequestedAnnotation] {
		return false
	}
	if sync := repo.Spec.Sync; sync != nil && sync.RunOnceAt != nil && sync.RunOnceAt.After(last.at) && !sync.RunOnceAt.After(now) {
		return false // porchctl repo sync: a one-time sync came due
	}
	return true
}

// done records a Fetch of repo that started at start and succeeded.
func (f *fetchMarks) done(repo *configv1alpha1.Repository, start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[types.NamespacedName]fetchMark{}
	}
	f.last[types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}] = fetchMark{
		generation: repo.Generation,
		requested:  repo.Annotations[configv1alpha1.SyncRequestedAnnotation],
		at:         start,
	}
}

// forget drops the mark of a Repository being deleted.
func (f *fetchMarks) forget(repo *configv1alpha1.Repository) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name})
}
