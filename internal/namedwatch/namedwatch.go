// Package namedwatch reads single named objects through one watch each,
// narrowed by a field selector to that object's name: what a controller
// needs when it reads a few objects of a kind it must not cache whole
// (Secrets: only those Repositories name are ever held, and only the keys
// Scion uses) or whose objects are large (CustomResourceDefinitions: only
// those injection points name).
//
// A Reader is a manager Runnable. Before it starts (or when a watch
// cannot sync, e.g. RBAC refuses it), Get reads from the API server.
package namedwatch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// DefaultMaxWatches bounds the watches one Reader opens; reads beyond go
// to the API server.
const DefaultMaxWatches = 2000

// syncTimeout is how long a first read waits for its watch to sync before
// reading from the API server instead.
const syncTimeout = 10 * time.Second

// Reader is a client.Reader (Get only) that serves each object from a
// watch of that one object, opened on its first read.
type Reader struct {
	// Client lists and watches; it also serves reads the watches cannot.
	Client client.WithWatch
	// Transform, when set, trims objects before they are kept (drop what
	// is never read).
	Transform toolscache.TransformFunc
	// MaxWatches bounds the watches (DefaultMaxWatches when 0).
	MaxWatches int

	mu      sync.Mutex
	ctx     context.Context
	watches map[string]toolscache.SharedIndexInformer
}

// Start runs the watches until ctx ends (manager.Runnable).
func (r *Reader) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the
// watches serve the reconcilers, which run on the leader.
func (r *Reader) NeedLeaderElection() bool { return true }

// Watches reports how many watches are open.
func (r *Reader) Watches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watches)
}

// Get reads the object named key into obj from its watch.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	inf, err := r.watch(key, obj)
	if err != nil || inf == nil {
		return r.Client.Get(ctx, key, obj, opts...)
	}
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.Client.Get(ctx, key, obj, opts...) // the watch keeps trying
	}
	item, exists, err := inf.GetStore().GetByKey(storeKey(key))
	if err != nil {
		return err
	}
	if !exists {
		gvk, _ := apiutil.GVKForObject(obj, r.Client.Scheme())
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	got, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("namedwatch: unexpected %T in the watch of %s", item, key)
	}
	out := reflect.ValueOf(obj)
	in := reflect.ValueOf(got.DeepCopyObject())
	if out.Type() != in.Type() {
		return fmt.Errorf("namedwatch: %s is a %T, not a %T", key, got, obj)
	}
	out.Elem().Set(in.Elem())
	return nil
}

// List is not supported: a Reader serves named objects.
func (r *Reader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("namedwatch: List is not supported")
}

// watch returns the watch of the named object, opening it on first use;
// nil when the Reader is not running or has opened MaxWatches.
func (r *Reader) watch(key client.ObjectKey, obj client.Object) (toolscache.SharedIndexInformer, error) {
	gvk, err := apiutil.GVKForObject(obj, r.Client.Scheme())
	if err != nil {
		return nil, err
	}
	id := gvk.String() + "/" + key.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if inf, ok := r.watches[id]; ok {
		return inf, nil
	}
	maxWatches := r.MaxWatches
	if maxWatches <= 0 {
		maxWatches = DefaultMaxWatches
	}
	if r.ctx == nil || len(r.watches) >= maxWatches {
		return nil, nil
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	newList := func() (client.ObjectList, error) {
		o, err := r.Client.Scheme().New(listGVK)
		if err != nil {
			return nil, err
		}
		return o.(client.ObjectList), nil
	}
	if _, err := newList(); err != nil {
		return nil, err
	}
	ctx := r.ctx
	narrow := func(o metav1.ListOptions) *client.ListOptions {
		return &client.ListOptions{Namespace: key.Namespace, FieldSelector: fields.OneTermEqualSelector("metadata.name", key.Name), Raw: &o}
	}
	lw := &toolscache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			list, err := newList()
			if err != nil {
				return nil, err
			}
			return list, r.Client.List(ctx, list, narrow(o))
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			list, err := newList()
			if err != nil {
				return nil, err
			}
			return r.Client.Watch(ctx, list, narrow(o))
		},
	}
	example := obj.DeepCopyObject()
	inf := toolscache.NewSharedIndexInformer(lw, example, 0, toolscache.Indexers{})
	if r.Transform != nil {
		if err := inf.SetTransform(r.Transform); err != nil {
			return nil, err
		}
	}
	if r.watches == nil {
		r.watches = map[string]toolscache.SharedIndexInformer{}
	}
	r.watches[id] = inf
	go inf.Run(ctx.Done())
	return inf, nil
}

func storeKey(key client.ObjectKey) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}
