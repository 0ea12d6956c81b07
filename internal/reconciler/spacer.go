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
	// Now is the clock (time.Now when nil).
	Now func() time.Time

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
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	if last, ok := s.last[key]; ok && t.Sub(last) < s.Interval {
		return s.Interval - t.Sub(last)
	}
	s.last[key] = t
	return 0
}

// Forget drops what is known of key (the object is gone).
func (s *Spacer) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, key)
}
