package store

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// queuedWrite is a draft write waiting for its push.
type queuedWrite struct {
	update refUpdate
	// check, when set, vets the remote's refs before the update is sent.
	check func(remote map[plumbing.ReferenceName]plumbing.Hash) error
	done  chan error
}

// pushQueued pushes q together with the writes other writers queued
// meanwhile (group commit): the writer that queues when no push is under
// way leads: it enters the gate and pushes batches until the queue is
// empty, and the others wait for their result. Many variants of one
// repository are written at once, and one receive-pack session per batch
// instead of one per write saves the remote (and, for local remotes, this
// machine) most of its work. Each update still succeeds or fails on its
// own, by compare-and-swap. When a check fails, the mirror is fetched
// before the writer hears of it. A writer whose write has not been sent
// yet gives up with ErrBusy when the push under way turns slow (see
// Gate). The caller must not hold r.mu.
func (r *Repository) pushQueued(ctx context.Context, q *queuedWrite) error {
	q.done = make(chan error, 1)
	r.mu.Lock()
	r.queue = append(r.queue, q)
	if r.pushing {
		r.mu.Unlock()
		return r.awaitQueued(ctx, q)
	}
	r.pushing = true
	r.mu.Unlock()
	exit, err := r.gate.enter(ctx, r.URL())
	r.mu.Lock()
	if err != nil {
		// Nobody pushes: every write queued behind this one hears why.
		for _, w := range r.queue {
			w.done <- err
		}
		r.queue, r.pushing = nil, false
		r.mu.Unlock()
		return <-q.done
	}
	var netErr error
	for {
		for len(r.queue) > 0 {
			var batch []*queuedWrite
			batch, r.queue = distinctRefs(r.queue)
			if err := r.pushBatchLocked(ctx, batch); err != nil && netErr == nil {
				netErr = err
			}
		}
		// Writers waiting for the lock may have a write ready: let them
		// queue it before giving up the lead.
		r.mu.Unlock()
		runtime.Gosched()
		r.mu.Lock()
		if len(r.queue) == 0 {
			break
		}
	}
	r.pushing = false
	r.mu.Unlock()
	exit(netErr)
	return <-q.done
}

// awaitQueued waits for the result of a write another writer pushes. A
// write still in the queue (not sent) is taken back when the push under
// way turns slow, or when ctx ends; a write that was sent waits for the
// remote's answer, which the timeout bounds.
func (r *Repository) awaitQueued(ctx context.Context, q *queuedWrite) error {
	tick := time.NewTicker(r.gate.busyAfter() / 4)
	defer tick.Stop()
	for {
		select {
		case err := <-q.done:
			return err
		case <-ctx.Done():
			if r.unqueue(q) {
				return ctx.Err()
			}
			return <-q.done
		case <-tick.C:
			if r.gate.slow() && r.unqueue(q) {
				return fmt.Errorf("%s: a push has been running for over %s; the write was not sent: %w", r.URL(), r.gate.busyAfter(), ErrBusy)
			}
		}
	}
}

// unqueue removes a write that has not been sent from the queue.
func (r *Repository) unqueue(q *queuedWrite) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.queue {
		if w == q {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			return true
		}
	}
	return false
}

// distinctRefs splits a queue into the writes that can go in one push (the
// first write of each ref) and the rest, in order.
func distinctRefs(queue []*queuedWrite) (batch, rest []*queuedWrite) {
	seen := map[plumbing.ReferenceName]bool{}
	for _, q := range queue {
		if seen[q.update.Name] {
			rest = append(rest, q)
			continue
		}
		seen[q.update.Name] = true
		batch = append(batch, q)
	}
	return batch, rest
}

// pushBatchLocked pushes a batch and tells each writer its result. It
// returns the error of a remote that did not answer, for the gate.
func (r *Repository) pushBatchLocked(ctx context.Context, batch []*queuedWrite) error {
	updates := make([]refUpdate, len(batch))
	checks := make([]func(map[plumbing.ReferenceName]plumbing.Hash) error, len(batch))
	for i, q := range batch {
		updates[i], checks[i] = q.update, q.check
	}
	errs := r.pushEach(ctx, updates, checks) // a conflict has fetched
	var netErr error
	for i, q := range batch {
		if unreachable(errs[i]) && netErr == nil {
			netErr = errs[i]
		}
		q.done <- errs[i]
	}
	return netErr
}
