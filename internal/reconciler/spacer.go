package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Spacer spaces out the reconciles of one object that recompute and
// write something derived from many events (a lock from a repository's
// revisions, a summary from a set's variants): the first one goes at once,
// later ones within Interval are put off to its end, so a burst of events
// makes one write per Interval instead of one per event. The work queue
// folds the events that arrive meanwhile into the put-off reconcile.
type Spacer struct {
	// Interval is the least time between two reconciles of one object.
	Interval time.Duration

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// Wait returns how long a reconcile of key must be put off (requeue after
// it, doing nothing); 0 means go on, and the time is recorded.
func (s *Spacer) Wait(key types.NamespacedName) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[types.NamespacedName]time.Time{}
	}
	if since := time.Since(s.last[key]); since < s.Interval {
		return s.Interval - since
	}
	s.last[key] = time.Now()
	return 0
}

// Forget drops what is known of key (the object is gone).
func (s *Spacer) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, key)
}
