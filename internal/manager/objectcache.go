package manager

import (
	"context"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/memlimit"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/store"
)

// The git object cache's bound when none is given grows with the fleet:
// ObjectCacheBase plus ObjectCachePerVariant for each PackageVariant the
// replica's shard owns. An upstream bump reads every variant's draft once,
// in no order the cache can exploit: below the size of the drafts read
// since the last sweep, the least recently used are the ones read next,
// and most reads go to the mirrors on disk (in the scale scenario at
// 10,000 variants, a fixed 32 MiB served 48 % of lookups on the bump, 128
// MiB 83 %, as 32 MiB does at 1,000).
const (
	ObjectCacheBase       = store.DefaultObjectCacheSize
	ObjectCachePerVariant = 12 << 10
)

// variantSizedCache keeps an ObjectCache's bound at ObjectCacheBase plus
// ObjectCachePerVariant per PackageVariant of the shard, from the events
// of the manager's PackageVariant informer.
type variantSizedCache struct {
	objects interface{ SetMax(int64) }
	shard   reconciler.Shard

	mu       sync.Mutex
	variants int
}

// sizeByVariants makes objects' bound follow the shard's PackageVariants.
func sizeByVariants(mgr ctrl.Manager, objects *store.ObjectCache, shard reconciler.Shard) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &configv1alpha1.PackageVariant{})
	if err != nil {
		return fmt.Errorf("watching PackageVariants to size the git object cache: %w", err)
	}
	s := &variantSizedCache{objects: objects, shard: shard}
	s.resize(0)
	if _, err := inf.AddEventHandler(s.handler()); err != nil {
		return fmt.Errorf("watching PackageVariants to size the git object cache: %w", err)
	}
	return nil
}

// handler counts the shard's variants. An update changes the count only
// when the variant moves between shards: lowering the bound and raising
// it again would evict objects on every status write.
func (s *variantSizedCache) handler() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.resize(s.owned(o)) },
		UpdateFunc: func(old, o any) { s.resize(s.owned(o) - s.owned(old)) },
		DeleteFunc: func(o any) { s.resize(-s.owned(o)) },
	}
}

// owned is 1 when o is one of the shard's variants, else 0.
func (s *variantSizedCache) owned(o any) int {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if obj, ok := o.(client.Object); ok && s.shard.Owns(obj) {
		return 1
	}
	return 0
}

// resize counts delta more variants and sets the bound (delta 0 on an
// update within the shard: the bound is set again, unchanged).
func (s *variantSizedCache) resize(delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.variants += delta
	bound := ObjectCacheBase + int64(s.variants)*ObjectCachePerVariant
	s.objects.SetMax(bound)
	memlimit.OffHeap(bound) // the cache's segments are outside the Go heap
}
