package store

import (
	"context"
	"errors"
	"runtime"

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
// way pushes batches until the queue is empty, and the others wait for
// their result. Many variants of one repository are written at once, and
// one receive-pack session per batch instead of one per write saves the
// remote (and, for local remotes, this machine) most of its work. Each
// update still succeeds or fails on its own, by compare-and-swap. When a
// check fails, the mirror is fetched before the writer hears of it. The
// caller must not hold r.mu.
func (r *Repository) pushQueued(ctx context.Context, q *queuedWrite) error {
	q.done = make(chan error, 1)
	r.mu.Lock()
	r.queue = append(r.queue, q)
	if r.pushing {
		r.mu.Unlock()
		return <-q.done
	}
	r.pushing = true
	for {
		for len(r.queue) > 0 {
			var batch []*queuedWrite
			batch, r.queue = distinctRefs(r.queue)
			r.pushBatchLocked(ctx, batch)
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
	return <-q.done
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

// pushBatchLocked pushes a batch and tells each writer its result.
func (r *Repository) pushBatchLocked(ctx context.Context, batch []*queuedWrite) {
	updates := make([]refUpdate, len(batch))
	checks := make([]func(map[plumbing.ReferenceName]plumbing.Hash) error, len(batch))
	for i, q := range batch {
		updates[i], checks[i] = q.update, q.check
	}
	errs := r.pushEach(ctx, updates, checks)
	for i, q := range batch {
		if q.check != nil && errors.Is(errs[i], ErrConflict) {
			// Whatever changed, the writer decides again with it.
			if err := r.fetchLocked(ctx); err != nil {
				errs[i] = errors.Join(errs[i], err)
			}
			break
		}
	}
	for i, q := range batch {
		q.done <- errs[i]
	}
}
