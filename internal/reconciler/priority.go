package reconciler

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The priorities of work in the controllers' queues (controller-runtime's
// priority queue, on by default): a queue hands out its highest priority
// first, first in first out within a priority, and an object queued twice
// keeps the higher of the two. docs/scaling.md describes them for users.
const (
	// PriorityPerson is a change a person makes to the object itself (a
	// PackageVariant's spec, a PackageRevision's lifecycle, one of its
	// conditions or its approval, a rollout's approval or pause, a set's
	// or a Repository's spec): acted on before the bulk work queued ahead
	// of it. Controllers' lifecycle moves (a rollout publishing a wave,
	// auto-propose) share it: they are what a person waits for too.
	PriorityPerson = 10
	// PriorityDefault is an event about the object that no one in
	// particular made (its own revision moving, an object it reads).
	PriorityDefault = 0
	// PriorityFanOut is one change that reaches many objects: an
	// upstream's new revision to the variants following it, a set's
	// rewrite of its variants, an injected object to the variants reading
	// it, a Repository's labels to the sets selecting it, a lock to its
	// variants.
	PriorityFanOut = -50
	// PriorityResync is work no event announced: the initial list of an
	// informer, a resync with nothing changed (controller-runtime's
	// handler.LowPriority), and a reconcile's own periodic look (a
	// floating tag's poll, a stalled object's retry; Outcome.Return).
	PriorityResync = handler.LowPriority
)

// PriorityFunc decides the priority of an event about obj; old is the
// object before an update, nil for a creation, deletion or generic event.
type PriorityFunc func(old, obj client.Object) int

// Fixed is the PriorityFunc of every event at p.
func Fixed(p int) PriorityFunc {
	return func(client.Object, client.Object) int { return p }
}

// PersonUnlessOwned is the priority of a change to an object a person
// writes unless a controller does: PriorityFanOut for an object with an
// owner (a set's variant, a dependency a variant installed, a variant's
// draft, a revision a Repository's sync shows), which that owner's
// controller writes, else PriorityPerson.
func PersonUnlessOwned(_, obj client.Object) int {
	if len(obj.GetOwnerReferences()) > 0 {
		return PriorityFanOut
	}
	return PriorityPerson
}

// WithPriority returns h queueing what it queues at prio's priority for
// each event; events of an informer's initial list and resyncs (an update
// that changed nothing) stay at PriorityResync. On a queue that is not a
// priority queue it is h.
func WithPriority(h handler.EventHandler, prio PriorityFunc) handler.EventHandler {
	return &prioritized{h: h, prio: prio}
}

// EnqueueAt is the handler of a controller's own kind (the request of
// the object itself) at prio's priority.
func EnqueueAt(prio PriorityFunc) handler.EventHandler {
	return WithPriority(&handler.EnqueueRequestForObject{}, prio)
}

type prioritized struct {
	h    handler.EventHandler
	prio PriorityFunc
}

// Create implements handler.EventHandler.
func (p *prioritized) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	at := PriorityResync
	if !e.IsInInitialList && e.Object != nil {
		at = p.prio(nil, e.Object)
	}
	p.h.Create(ctx, e, atPriority(q, at))
}

// Update implements handler.EventHandler.
func (p *prioritized) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	at := PriorityResync
	if e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
		at = p.prio(e.ObjectOld, e.ObjectNew)
	}
	p.h.Update(ctx, e, atPriority(q, at))
}

// Delete implements handler.EventHandler.
func (p *prioritized) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	at := PriorityDefault
	if e.Object != nil {
		at = p.prio(nil, e.Object)
	}
	p.h.Delete(ctx, e, atPriority(q, at))
}

// Generic implements handler.EventHandler.
func (p *prioritized) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	at := PriorityDefault
	if e.Object != nil {
		at = p.prio(nil, e.Object)
	}
	p.h.Generic(ctx, e, atPriority(q, at))
}

// atPriority is q adding at priority p what is added without one.
func atPriority(q workqueue.TypedRateLimitingInterface[reconcile.Request], p int) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return priorityQueueAt{PriorityQueue: pq, priority: p}
}

// priorityQueueAt is a priority queue adding at priority what is added
// without one; a handler that sets one (controller-runtime's, at
// handler.LowPriority for a resync) keeps it.
type priorityQueueAt struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (q priorityQueueAt) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q priorityQueueAt) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q priorityQueueAt) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q priorityQueueAt) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		p := q.priority
		o.Priority = &p
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}
