package console

import (
	"fmt"
	"net/http"
	"time"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/changes"
)

// coalesce is the least time between two change events a page gets: a
// fleet-wide change is many object events, one page refresh.
const coalesce = time.Second

// events streams, as server-sent events, that something the pages show
// changed: it watches the namespace's PackageRevisions, PackageVariants,
// PackageRollouts and PackageLocks as the person (what they may not watch, they are
// not told about), and the pages fetch themselves again.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	changed := changes.Watch(r.Context(), s.opts.Client, s.opts.Namespace, coalesce,
		&porchv1alpha1.PackageRevisionList{}, &configv1alpha1.PackageVariantList{}, &configv1alpha1.PackageRolloutList{}, &configv1alpha1.PackageLockList{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, ": watching\n\n")
	flusher.Flush()
	for range changed {
		fmt.Fprint(w, "event: changed\ndata: {}\n\n")
		flusher.Flush()
	}
}
