package packagerevision

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// A lifecycle move, an approval or a condition someone sets comes before
// the drafts variants write; a person's new revision before both.
func TestRevisionPriority(t *testing.T) {
	draft := func(mutate func(*porchv1alpha1.PackageRevision)) *porchv1alpha1.PackageRevision {
		pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{Kind: "PackageVariant", Name: "v", Controller: new(true)}}},
			Spec: porchv1alpha1.PackageRevisionSpec{Lifecycle: porchv1alpha1.LifecycleDraft}}
		if mutate != nil {
			mutate(pr)
		}
		return pr
	}
	for _, tc := range []struct {
		name     string
		old, obj *porchv1alpha1.PackageRevision
		want     int
	}{
		{"a variant's new draft", nil, draft(nil), reconciler.PriorityFanOut},
		{"a variant rewrites its draft", draft(nil), draft(func(pr *porchv1alpha1.PackageRevision) { pr.Generation = 2 }), reconciler.PriorityFanOut},
		{"a person's new draft", nil, draft(func(pr *porchv1alpha1.PackageRevision) { pr.OwnerReferences = nil }), reconciler.PriorityPerson},
		{"a revision a Repository's sync shows", nil, draft(func(pr *porchv1alpha1.PackageRevision) {
			pr.OwnerReferences = []metav1.OwnerReference{{Kind: "Repository", Name: "deploy"}}
		}), reconciler.PriorityFanOut},
		{"proposed", draft(nil), draft(func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed }), reconciler.PriorityPerson},
		{"approved", draft(nil), draft(func(pr *porchv1alpha1.PackageRevision) {
			pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
			pr.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "alice"}
		}), reconciler.PriorityPerson},
		{"a gate's condition set", draft(nil), draft(func(pr *porchv1alpha1.PackageRevision) {
			pr.Status.Conditions = []porchv1alpha1.Condition{{Type: "security-review", Status: "True"}}
		}), reconciler.PriorityPerson},
		{"deleted", draft(nil), draft(func(pr *porchv1alpha1.PackageRevision) { now := metav1.Now(); pr.DeletionTimestamp = &now }), reconciler.PriorityPerson},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := revisionPriority(nil, tc.obj)
			if tc.old != nil { // a nil *PackageRevision is not a nil client.Object
				got = revisionPriority(tc.old, tc.obj)
			}
			if got != tc.want {
				t.Errorf("priority %d, want %d", got, tc.want)
			}
		})
	}
}
