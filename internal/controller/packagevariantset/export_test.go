package packagevariantset

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/variantset"
)

// NewClusterSource is the set controller's view of the cluster, for tests:
// reading through c (a cache) and, around it, r.
func NewClusterSource(c client.Client, r client.Reader) variantset.Source {
	return &clusterSource{client: c, apiReader: r}
}

// ErrReadingCluster is errReadingCluster, for tests.
var ErrReadingCluster = errReadingCluster
