package pkgdeps

import (
	"context"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// NamespaceCatalog reads the catalog of a namespace: every Repository in
// it that is not a deployment repository. A repository that cannot be
// opened leaves its packages out and is named in Catalog.Unavailable:
// a broken catalog is its own packages' problem, not every resolution's.
func (r *Reader) NamespaceCatalog(ctx context.Context, cache *repocache.Cache, c client.Reader, ns string) (*Catalog, error) {
	list := &configv1alpha1.RepositoryList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{UpstreamIndex: "true"}); err != nil {
		return nil, err
	}
	var sources []Source
	var unavailable []string
	for i := range list.Items {
		repo := &list.Items[i]
		if repo.Spec.Deployment || !repo.DeletionTimestamp.IsZero() {
			continue
		}
		st, err := cache.Open(ctx, repo)
		if err != nil {
			unavailable = append(unavailable, fmt.Sprintf("%s (%s)", repo.Name, store.Shorten(err.Error(), 200)))
			continue
		}
		sources = append(sources, Source{Name: repo.Name, Store: st})
	}
	cat, err := r.Catalog(ctx, sources)
	if err != nil || len(unavailable) == 0 {
		return cat, err
	}
	sort.Strings(unavailable)
	out := *cat // the cached catalog is shared: the note is this answer's
	out.Unavailable = unavailable
	return &out, nil
}

// UpstreamIndex indexes Repositories that are not deployment
// repositories ("true"): a namespace's catalog is found without listing
// its deployment repositories, however many there are. IndexRepositories
// registers it.
const UpstreamIndex = "spec.deployment=false"

// IndexRepositories registers UpstreamIndex with a manager's cache.
func IndexRepositories(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &configv1alpha1.Repository{}, UpstreamIndex, func(o client.Object) []string {
		if o.(*configv1alpha1.Repository).Spec.Deployment {
			return nil
		}
		return []string{"true"}
	})
}

// Identify returns the catalog revision a commit is (nil: none).
func (c *Catalog) Identify(commit string) *deps.Revision {
	if c == nil || commit == "" {
		return nil
	}
	return c.byCommit[commit]
}

// Declaration reads the declaration of a package revision (cached by
// commit).
func (r *Reader) Declaration(ctx context.Context, st store.Store, rev store.Revision) (*deps.Declaration, error) {
	d, err := r.declaration(ctx, st, rev)
	if err != nil {
		return nil, err
	}
	return d.decl, d.err
}

// ErrLockConflict is returned when the lock changed since it was read: the
// writer reads it again and decides again.
var ErrLockConflict error = lockRace{}

// lockRace is ErrLockConflict: a lost race, which a retry that reads the
// lock again resolves (reconciler.Expected).
type lockRace struct{}

func (lockRace) Error() string  { return "the PackageLock changed meanwhile" }
func (lockRace) RaceLost() bool { return true }

// ReadLock reads a repository's PackageLock with reader (the API server,
// for a decision on fresh facts); a missing one is returned empty, with
// exists false.
func ReadLock(ctx context.Context, reader client.Reader, repo *configv1alpha1.Repository) (*configv1alpha1.PackageLock, bool, error) {
	lock := &configv1alpha1.PackageLock{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}, lock)
	switch {
	case apierrors.IsNotFound(err):
		return &configv1alpha1.PackageLock{ObjectMeta: metav1.ObjectMeta{Namespace: repo.Namespace, Name: repo.Name}}, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("PackageLock %s: %w", repo.Name, err)
	}
	return lock, true, nil
}

// WriteLock lets change edit a lock read by ReadLock and writes it
// against the version read: created (owned by the Repository) when it did
// not exist, updated when it changed. A write by someone else since the
// read is ErrLockConflict: the caller reads again and decides again.
func WriteLock(ctx context.Context, c client.Client, repo *configv1alpha1.Repository, read *configv1alpha1.PackageLock, exists bool, change func(*configv1alpha1.PackageLock)) error {
	lock := read.DeepCopy()
	change(lock)
	lock.Summary = configv1alpha1.LockSummary{Packages: len(lock.Packages), Conflicts: len(lock.Conflicts)}
	var err error
	switch {
	case exists && equalLocks(read, lock):
		return nil
	case !exists && len(lock.Packages) == 0 && len(lock.Conflicts) == 0:
		// No lock reads as an empty one: a repository gets its lock
		// with its first package, not one write earlier.
		return nil
	case exists:
		err = c.Update(ctx, lock)
	default:
		lock.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(repo, configv1alpha1.GroupVersion.WithKind("Repository"))}
		err = c.Create(ctx, lock)
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("PackageLock %s: %w", repo.Name, ErrLockConflict)
	}
	if err != nil {
		return fmt.Errorf("PackageLock %s: %w", repo.Name, err)
	}
	return nil
}

func equalLocks(a, b *configv1alpha1.PackageLock) bool {
	return a.Summary == b.Summary &&
		slices.EqualFunc(a.Packages, b.Packages, func(x, y configv1alpha1.LockedPackage) bool {
			return x.Name == y.Name && x.Version == y.Version && x.Directory == y.Directory && x.State == y.State &&
				slices.Equal(x.Provides, y.Provides) && slices.Equal(x.Dependants, y.Dependants) && slices.Equal(x.PlannedBy, y.PlannedBy)
		}) &&
		slices.EqualFunc(a.Conflicts, b.Conflicts, func(x, y configv1alpha1.LockConflict) bool {
			return x.Kind == y.Kind && x.Package == y.Package && x.Message == y.Message && slices.Equal(x.Packages, y.Packages) && slices.Equal(x.RequiredBy, y.RequiredBy)
		})
}

// Planned returns a lock's Planned entries.
func Planned(lock *configv1alpha1.PackageLock) []configv1alpha1.LockedPackage {
	var out []configv1alpha1.LockedPackage
	for _, p := range lock.Packages {
		if p.State == configv1alpha1.LockedPlanned {
			out = append(out, p)
		}
	}
	return out
}

// ApplyGate sets the dependencies readiness gate and its condition in a
// package's Kptfile (ready nil: removes both, for a variant without
// spec.dependencies).
func ApplyGate(p *pkg.Package, ready *bool, reason, message string) error {
	if _, ok := p.File(kptfilev1.KptFileName); !ok {
		return nil
	}
	return p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		if ready == nil {
			kptfile.RemoveReadinessGate(kf, configv1alpha1.DependenciesReadinessGate)
			return nil
		}
		status := kptfilev1.ConditionFalse
		if *ready {
			status = kptfilev1.ConditionTrue
		}
		kptfile.AddReadinessGate(kf, configv1alpha1.DependenciesReadinessGate)
		kptfile.SetCondition(kf, kptfilev1.Condition{Type: configv1alpha1.DependenciesReadinessGate, Status: status, Reason: reason, Message: message})
		return nil
	})
}

// DependencyVariantName is the name of the PackageVariant that installs a
// package into a repository: one per package per repository.
func DependencyVariantName(repo, pkgPath string) string {
	return pkgservice.ObjectName(repo, pkgPath, "dependency")
}
