package repository

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// A sync is periodic (Resync) only after a Fetch of the same generation
// and sync request, and while no spec.sync.runOnceAt came due since;
// the first sync of a process, a spec change, a requested sync and a
// due one-time sync Fetch.
func TestFetchMarks_periodic(t *testing.T) {
	var f fetchMarks
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "site", Generation: 1}}
	later := start.Add(5 * time.Minute)
	if f.periodic(repo, start) {
		t.Fatal("the first sync of a process is periodic")
	}
	f.done(repo, start)
	if !f.periodic(repo, later) {
		t.Fatal("a sync after a Fetch of the same Repository is not periodic")
	}
	other := repo.DeepCopy()
	other.Name = "other"
	if f.periodic(other, later) {
		t.Fatal("another Repository's first sync is periodic")
	}

	requested := repo.DeepCopy()
	requested.Annotations = map[string]string{configv1alpha1.SyncRequestedAnnotation: "2026-11-30T12:01:00Z"}
	if f.periodic(requested, later) {
		t.Fatal("a requested sync is periodic")
	}
	edited := repo.DeepCopy()
	edited.Generation = 2
	if f.periodic(edited, later) {
		t.Fatal("a sync after a spec change is periodic")
	}

	once := repo.DeepCopy()
	once.Spec.Sync = &configv1alpha1.RepositorySync{RunOnceAt: &metav1.Time{Time: start.Add(time.Minute)}}
	if f.periodic(once, later) {
		t.Fatal("a one-time sync that came due since the last Fetch is periodic")
	}
	if !f.periodic(once, start.Add(30*time.Second)) {
		t.Fatal("a one-time sync not yet due made the sync a Fetch")
	}
	f.done(once, later)
	if !f.periodic(once, later.Add(time.Minute)) {
		t.Fatal("a one-time sync the last Fetch answered made the next sync a Fetch")
	}

	f.forget(repo)
	if f.periodic(repo, later) {
		t.Fatal("a Repository forgotten (deleted) is periodic")
	}
}
