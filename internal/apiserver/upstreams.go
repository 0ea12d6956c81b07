package apiserver

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// upstreamNames shows the revisions Scion writes without a task (a
// PackageVariant's drafts, revisions the sync finds in git) as Porch
// shows a cloned revision: with a clone task naming the published
// revision their upstreamLock records. Porch's clients find a revision's
// upstream in spec.tasks[0] (porchctl rpkg upgrade reads it there, and
// fails on a revision without a task). Names are kept for upstreamTTL:
// a published revision's name does not change, and a list of thousands of
// variants of one upstream costs one lookup.
type upstreamNames struct {
	// reader lists Repositories and the storage's PackageRevisions.
	reader client.Reader

	mu    sync.Mutex
	names map[upstreamKey]upstreamName
}

type upstreamKey struct {
	ns, source, directory, ref, commit string
}

type upstreamName struct {
	name string
	// until is when the name (or the failure to find it) is looked up
	// again.
	until time.Time
}

// upstreamTTL is how long a looked-up name (or its absence) is kept.
const upstreamTTL = time.Minute

// upstreamErrorTTL is how long a lookup that failed (the cluster's API
// server did not answer) is not tried again: a list of thousands of
// revisions of one upstream makes one lookup, not one per revision.
const upstreamErrorTTL = 5 * time.Second

// maxUpstreamNames bounds the names kept; past it, they are dropped.
const maxUpstreamNames = 10000

// show gives pr, if it has no task and is in git, the task Porch would
// show: a clone task naming the published revision of its namespace its
// upstreamLock records, or an init task when it records no upstream (it
// was made, not cloned). One whose upstream is not found is left without
// a task, and so is one not in git (no commit: a request nothing has
// carried out, whose Stalled condition may say its tasks are missing). It
// only assigns pr.Spec.Tasks, never writes into what pr shares with other
// copies, so that a list may show a shallow copy of a cached revision.
func (u *upstreamNames) show(ctx context.Context, pr *porchv1alpha1.PackageRevision) {
	if u == nil || len(pr.Spec.Tasks) > 0 || pr.Status.Commit == "" {
		return
	}
	lock := pr.Status.UpstreamLock
	if lock.Source() == "" {
		pr.Spec.Tasks = []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit}}
		return
	}
	if name := u.lookup(ctx, pr.Namespace, lock); name != "" {
		pr.Spec.Tasks = []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeClone,
			Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{
				Name: name, UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: name}}}}}
	}
}

func (u *upstreamNames) lookup(ctx context.Context, ns string, lock *kptfilev1.UpstreamLock) string {
	key := upstreamKey{ns: ns, source: lock.Source(), ref: lock.Ref(), commit: lock.Commit()}
	if lock.Git != nil {
		key.directory = lock.Git.Directory
	}
	u.mu.Lock()
	got, ok := u.names[key]
	u.mu.Unlock()
	if ok && time.Now().Before(got.until) {
		return got.name
	}
	name, err := pkgservice.LockedRevision(ctx, u.reader, ns, lock)
	ttl := upstreamTTL
	if err != nil {
		// Shown without the task, as stored, for upstreamErrorTTL.
		log.FromContext(ctx).V(1).Info("finding the upstream revision of a lock", "namespace", ns, "error", err)
		name, ttl = "", upstreamErrorTTL
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.names == nil || len(u.names) >= maxUpstreamNames {
		u.names = map[upstreamKey]upstreamName{}
	}
	u.names[key] = upstreamName{name: name, until: time.Now().Add(ttl)}
	return name
}
