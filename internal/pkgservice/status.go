package pkgservice

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// WriteStatus is the one way a PackageRevision's status is written, by
// every writer (the sync, the controllers, scion rpkg): change edits pr's
// status (returning false when there is nothing to write), and the write
// is checked against the resourceVersion read. When another writer got in
// between, pr is read again with reader and change applied to it anew, so
// no writer's condition is ever dropped. pr holds what was written. It
// reports whether anything was. It is reconciler.PatchStatus for
// PackageRevisions.
func (s *Service) WriteStatus(ctx context.Context, pr *porchv1alpha1.PackageRevision, change func(*porchv1alpha1.PackageRevision) bool) (bool, error) {
	w := s.Status
	if w == nil {
		reader := s.APIReader
		if reader == nil {
			reader = s.Client
		}
		w = reconciler.NewStatusWriter(s.Client, reader, nil)
	}
	return reconciler.PatchStatus(ctx, w, pr, func(pr *porchv1alpha1.PackageRevision) (bool, error) { return change(pr), nil })
}

// PorchConditions converts conditions to a PackageRevision's condition
// type.
func PorchConditions(cs []metav1.Condition) []porchv1alpha1.Condition {
	out := make([]porchv1alpha1.Condition, 0, len(cs))
	for _, c := range cs {
		out = append(out, porchv1alpha1.Condition{Type: c.Type, Status: porchv1alpha1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration})
	}
	return out
}

// SetConditions sets each condition on a PackageRevision's conditions by
// type, keeping the transition time of one whose status did not change.
// It reports whether anything changed.
func SetConditions(conds *[]porchv1alpha1.Condition, cs ...porchv1alpha1.Condition) bool {
	changed := false
	for _, c := range cs {
		i := slices.IndexFunc(*conds, func(have porchv1alpha1.Condition) bool { return have.Type == c.Type })
		if i < 0 {
			if c.LastTransitionTime == nil {
				c.LastTransitionTime = ptr.To(metav1.Now())
			}
			*conds = append(*conds, c)
			changed = true
			continue
		}
		have := (*conds)[i]
		c.LastTransitionTime = have.LastTransitionTime
		if have.Status != c.Status || c.LastTransitionTime == nil {
			c.LastTransitionTime = ptr.To(metav1.Now())
		}
		if have.Status != c.Status || have.Reason != c.Reason || have.Message != c.Message || have.ObservedGeneration != c.ObservedGeneration {
			(*conds)[i] = c
			changed = true
		}
	}
	return changed
}
