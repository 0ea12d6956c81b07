package reconciler

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// Shard is the share of the objects one controller replica reconciles:
// those labelled configv1alpha1.ShardLabel with its name, or (the default
// shard, Name "") those without the label. Every reconciler checks it
// after reading its object, so no object is reconciled by two replicas,
// whatever event brought it.
type Shard struct {
	Name string
}

// Owns says whether the object is this shard's.
func (s Shard) Owns(o client.Object) bool {
	return o.GetLabels()[configv1alpha1.ShardLabel] == s.Name
}

// Predicate passes the events of this shard's objects that every one of
// ps passes, and every update that moves an object into this shard (its
// label changed to this shard's), whatever ps say: a replica has not
// reconciled an object that was another shard's, and a move changes no
// generation (an object moved in the middle of its deletion would keep
// its finalizer for good).
func (s Shard) Predicate(ps ...predicate.Predicate) predicate.Predicate {
	inner := predicate.And(ps...)
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return s.Owns(e.Object) && inner.Create(e) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return s.Owns(e.Object) && inner.Delete(e) },
		GenericFunc: func(e event.GenericEvent) bool { return s.Owns(e.Object) && inner.Generic(e) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !s.Owns(e.ObjectNew) {
				return false
			}
			return !s.Owns(e.ObjectOld) || inner.Update(e)
		},
	}
}
