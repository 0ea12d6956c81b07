package manager

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// bounds records every bound set.
type bounds []int64

func (b *bounds) SetMax(n int64) { *b = append(*b, n) }

// TestVariantSizedCache_events: adds, moves between shards and deletes
// (also as tombstones) change the bound by a variant's share; updates
// within the shard never lower it, not even for a moment (a lower bound
// evicts objects, which raising it again does not bring back).
func TestVariantSizedCache_events(t *testing.T) {
	g := NewWithT(t)
	var set bounds
	s := &variantSizedCache{objects: &set, shard: reconciler.Shard{}}
	h := s.handler()
	variant := func(shard string) *configv1alpha1.PackageVariant {
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "ns"}}
		if shard != "" {
			pv.Labels = map[string]string{configv1alpha1.ShardLabel: shard}
		}
		return pv
	}
	last := func() int64 { return set[len(set)-1] }
	mine, other := variant(""), variant("b")

	h.OnAdd(mine, true)
	h.OnAdd(other, true)
	g.Expect(last()).To(Equal(int64(ObjectCacheBase + ObjectCachePerVariant)))
	before := len(set)
	h.OnUpdate(mine, mine)
	h.OnUpdate(other, other)
	for _, n := range set[before:] {
		g.Expect(n).To(Equal(int64(ObjectCacheBase+ObjectCachePerVariant)), "an update within a shard keeps the bound")
	}
	h.OnUpdate(other, mine) // moved into the shard
	g.Expect(last()).To(Equal(int64(ObjectCacheBase + 2*ObjectCachePerVariant)))
	h.OnUpdate(mine, other) // moved out
	g.Expect(last()).To(Equal(int64(ObjectCacheBase + ObjectCachePerVariant)))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/v", Obj: mine})
	g.Expect(last()).To(Equal(int64(ObjectCacheBase)))
}
