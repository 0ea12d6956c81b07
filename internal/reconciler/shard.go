package reconciler

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// Predicate passes the events of this shard's objects.
func (s Shard) Predicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(s.Owns)
}
