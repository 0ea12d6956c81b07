package reconciler

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NamespacedIndexer registers field indexes that answer lists in one
// namespace only: client.MatchingFields with client.InNamespace, as every
// lookup of Scion's controllers is. controller-runtime's own field
// indexer stores each value twice, once for its namespace and once for
// lists across all namespaces, and an index keeps a set per value: for
// the indexes with a value of their own per object (a variant's
// downstream package, a revision's owner) that second copy was about a
// tenth of the controllers' live heap at 10,000 variants. A list across
// all namespaces by the index of a namespaced kind finds nothing
// (test/arch keeps every field-selected list in one namespace); a
// cluster-scoped kind's index answers lists without a namespace, as
// controller-runtime's does.
type NamespacedIndexer struct {
	// Informers are the manager's cache's.
	Informers cache.Informers
}

var _ client.FieldIndexer = NamespacedIndexer{}

// allNamespaces is what controller-runtime's cache reader puts before a
// value it looks up for a list without a namespace.
const allNamespaces = "__all_namespaces"

// IndexField registers field as an index of obj's kind: a cached list in
// a namespace with client.MatchingFields{field: v} returns the objects
// of that namespace for which extract returns v.
func (n NamespacedIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	informer, err := n.Informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("indexing %T by %s: %w", obj, field, err)
	}
	// The index's name and its values' form are those
	// controller-runtime's cache reader asks for ("field:" and the field;
	// "<namespace>/<value>", allNamespaces for a cluster-scoped kind):
	// lists go through the manager's client unchanged.
	// TestNamespacedIndexer proves the pair on a real cache.
	return informer.AddIndexers(toolscache.Indexers{"field:" + field: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("indexing by %s: %T is not an object", field, raw)
		}
		// client-go panics on an index function's error, stopping every
		// controller over one object: an object without a namespace (a
		// cluster-scoped kind) is indexed as controller-runtime indexes
		// it, for lists across namespaces.
		ns := o.GetNamespace()
		if ns == "" {
			ns = allNamespaces
		}
		vals := extract(o)
		if len(vals) == 0 {
			return nil, nil
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = ns + "/" + v
		}
		return out, nil
	}})
}
