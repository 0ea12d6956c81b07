package console

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// coalesce is the least time between two change events a page gets: a
// fleet-wide change is many object events, one page refresh.
const coalesce = time.Second

// events streams, as server-sent events, that something the pages show
// changed: it watches the namespace's PackageRevisions, PackageVariants
// and PackageRollouts as the person (what they may not watch, they are
// not told about), and the pages fetch themselves again.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	changed := make(chan struct{}, 1)
	var watches []watch.Interface
	defer func() {
		for _, wi := range watches {
			wi.Stop()
		}
	}()
	for _, list := range []client.ObjectList{&porchv1alpha1.PackageRevisionList{}, &configv1alpha1.PackageVariantList{}, &configv1alpha1.PackageRolloutList{}} {
		wi, err := s.opts.Client.Watch(ctx, list, client.InNamespace(s.opts.Namespace))
		if err != nil {
			continue // not allowed to watch it: nothing to tell
		}
		watches = append(watches, wi)
		go func() {
			for range wi.ResultChan() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, ": watching\n\n")
	flusher.Flush()
	// Ignore the initial events of each watch (the objects that exist).
	settle := time.NewTimer(coalesce)
	defer settle.Stop()
	settled := false
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-settle.C:
			settled = true
			for len(changed) > 0 {
				<-changed
			}
		case <-changed:
			if !settled {
				continue
			}
			if wait := coalesce - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			last = time.Now()
			fmt.Fprint(w, "event: changed\ndata: {}\n\n")
			flusher.Flush()
		}
	}
}
