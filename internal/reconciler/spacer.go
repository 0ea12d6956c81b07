package reconciler

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Spacer spaces out the reconciles of one object that recompute and
// write something derived from many events (a lock from a repository's
// revisions, a summary from a set's variants): the first one goes after
// Settle (at once when 0), later ones within Interval are put off to its
// end, so a burst of events makes one write per Interval instead of one per
// event. The work queue folds the events that arrive meanwhile into the
// put-off reconcile.
type Spacer struct {
	// Interval is the least time between two reconciles of one object.
	Interval time.Duration
	// Settle puts off the first reconcile after a quiet Interval, so that
	// the events of a burst that follow its first one are folded into it
	// (a burst shorter than Settle makes one write, not two). At most
	// Interval.
	Settle time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	state map[types.NamespacedName]spacing
}

// spacing is what a Spacer knows of one object: when its last reconcile
// went, and when the put-off one may go (zero when none is put off).
type spacing struct {
	last, due time.Time
}

// Wait returns how long a reconcile of key must be put off (requeue after
// it, doing nothing); 0 means go on, and the time is recorded.
func (s *Spacer) Wait(key types.NamespacedName) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[types.NamespacedName]spacing{}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	st, seen := s.state[key]
	switch {
	case !st.due.IsZero():
		if t.Before(st.due) {
			return st.due.Sub(t)
		}
	case seen && t.Sub(st.last) < s.Interval:
		st.due = st.last.Add(s.Interval)
		s.state[key] = st
		return st.due.Sub(t)
	case s.Settle > 0:
		st.due = t.Add(min(s.Settle, s.Interval))
		s.state[key] = st
		return st.due.Sub(t)
	}
	s.state[key] = spacing{last: t}
	return 0
}

// Forget drops what is known of key (the object is gone).
func (s *Spacer) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.state, key)
}
