package lenient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/store"
)

// UndecodableReason is the reason of the Ready=False and Stalled=True
// conditions (and of the event) on an object a field of which does not
// decode into Scion's Go types: the controllers ignore it until it is
// fixed.
const UndecodableReason = "Undecodable"

// Reporter keeps the objects set aside because they do not decode, and
// says so on each of them: conditions, an event, a log line and the
// scion_undecodable_objects metric. It is a manager Runnable: it writes
// while its replica leads.
type Reporter struct {
	// Client writes the conditions (a status merge patch of the object
	// read as unstructured, checked against its resourceVersion).
	Client client.Client
	// Recorder records the event.
	Recorder recorder.EventRecorder
	// Owns says whether this replica reports on an object, by its labels
	// (its shard's); all when nil.
	Owns func(labels map[string]string) bool
	// Log is where each object set aside is logged, once per problem.
	Log logr.Logger

	mu    sync.Mutex
	bad   map[objectKey]*entry
	lists map[schema.GroupVersionKind]uint64
	kinds map[schema.GroupVersionKind]int
	queue workqueue.TypedRateLimitingInterface[objectKey]
	once  sync.Once
}

type objectKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// entry is one object set aside: what was wrong with which version, and
// the last complete list of its kind that found it so.
type entry struct {
	u    *Undecodable
	list uint64
}

func (r *Reporter) init() {
	r.once.Do(func() {
		r.bad = map[objectKey]*entry{}
		r.lists = map[schema.GroupVersionKind]uint64{}
		r.kinds = map[schema.GroupVersionKind]int{}
		r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectKey](),
			workqueue.TypedRateLimitingQueueConfig[objectKey]{Name: "undecodable"})
	})
}

func keyOf(u *Undecodable) objectKey {
	return objectKey{gvk: u.GroupVersionKind(), namespace: u.Namespace, name: u.Name}
}

// SetAside records an object that does not decode. An object already
// recorded with the same problem is not reported again (its own status
// write, for one, brings it back with a new resourceVersion).
func (r *Reporter) SetAside(u *Undecodable) {
	r.init()
	k := keyOf(u)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.bad[k]; e != nil {
		e.list = r.lists[k.gvk]
		same := e.u.Problem() == u.Problem()
		e.u = u
		if same {
			return
		}
	} else {
		r.bad[k] = &entry{u: u, list: r.lists[k.gvk]}
		r.kinds[k.gvk]++
		metrics.UndecodableObjects.WithLabelValues(k.gvk.Kind).Set(float64(r.kinds[k.gvk]))
	}
	r.Log.Info("ignoring an object that does not decode until it is fixed", "kind", k.gvk.Kind,
		"namespace", k.namespace, "name", k.name, "resourceVersion", u.ResourceVersion, "problem", u.Problem())
	r.queue.Add(k)
}

// Any says whether an object of the kind is set aside (a map lookup:
// what the informers ask of every object they see).
func (r *Reporter) Any(gvk schema.GroupVersionKind) bool {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kinds[gvk] > 0
}

// Decodes records that an object decodes again, or is gone.
func (r *Reporter) Decodes(gvk schema.GroupVersionKind, namespace, name string) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(objectKey{gvk: gvk, namespace: namespace, name: name})
}

func (r *Reporter) forget(k objectKey) {
	if _, ok := r.bad[k]; !ok {
		return
	}
	delete(r.bad, k)
	r.kinds[k.gvk]--
	metrics.UndecodableObjects.WithLabelValues(k.gvk.Kind).Set(float64(r.kinds[k.gvk]))
}

// beginList marks the start of a list of the kind.
func (r *Reporter) beginList(gvk schema.GroupVersionKind) uint64 {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists[gvk]++
	return r.lists[gvk]
}

// endList ends a complete list of the kind: the objects it did not set
// aside again decode now, or are gone.
func (r *Reporter) endList(gvk schema.GroupVersionKind, list uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.bad {
		if k.gvk == gvk && e.list < list {
			r.forget(k)
		}
	}
}

// Start writes what is wrong on each object set aside, until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	r.init()
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for {
		k, shutdown := r.queue.Get()
		if shutdown {
			return nil
		}
		if err := r.report(ctx, k); err != nil {
			r.Log.V(1).Info("could not yet say why an object is ignored", "kind", k.gvk.Kind, "namespace", k.namespace, "name", k.name, "error", err.Error())
			r.queue.AddRateLimited(k)
		} else {
			r.queue.Forget(k)
		}
		r.queue.Done(k)
	}
}

// report sets the conditions and records the event of one object set
// aside, when the version set aside is still the object's.
func (r *Reporter) report(ctx context.Context, k objectKey) error {
	r.mu.Lock()
	e := r.bad[k]
	r.mu.Unlock()
	if e == nil || (r.Owns != nil && !r.Owns(e.u.Labels)) {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.gvk)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: k.name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.Decodes(k.gvk, k.namespace, k.name)
			return nil
		}
		return fmt.Errorf("reading %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	if obj.GetResourceVersion() != e.u.ResourceVersion {
		// Changed since: the informer sees the new version and sets it
		// aside again, or not.
		return nil
	}
	msg := fmt.Sprintf("%s does not decode, and Scion ignores this %s until it is fixed", e.u.Problem(), k.gvk.Kind)
	if e.u.Path != "" {
		msg = fmt.Sprintf("%s does not decode (%s), and Scion ignores this %s until it is fixed", e.u.Path, store.Shorten(e.u.Err, maxValueBytes), k.gvk.Kind)
	}
	before := obj.DeepCopy()
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	now := metav1.Now().UTC().Format(time.RFC3339)
	conditions = setCondition(conditions, configv1alpha1.ReadyCondition, "False", msg, now)
	conditions = setCondition(conditions, configv1alpha1.StalledCondition, "True", msg, now)
	conditions = setCondition(conditions, configv1alpha1.ReconcilingCondition, "False", msg, now)
	if err := unstructured.SetNestedSlice(obj.Object, conditions, "status", "conditions"); err != nil {
		return fmt.Errorf("setting the conditions of %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	if equality.Semantic.DeepEqual(before.Object, obj.Object) {
		return nil // said already
	}
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone or changed: the informer says what next
		}
		return fmt.Errorf("writing the conditions of %s %s/%s: %w", k.gvk.Kind, k.namespace, k.name, err)
	}
	r.Recorder.Eventf(obj, nil, "Warning", UndecodableReason, "Decode", "%s", msg)
	return nil
}

// setCondition sets one condition of an unstructured list, keeping its
// lastTransitionTime when its status does not change.
func setCondition(conditions []any, typ, status, msg, now string) []any {
	c := map[string]any{"type": typ, "status": status, "reason": UndecodableReason, "message": msg, "lastTransitionTime": now}
	for i, existing := range conditions {
		m, ok := existing.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		if m["status"] == status && m["lastTransitionTime"] != nil {
			c["lastTransitionTime"] = m["lastTransitionTime"]
		}
		if g, ok := m["observedGeneration"]; ok {
			c["observedGeneration"] = g
		}
		conditions[i] = c
		return conditions
	}
	return append(conditions, c)
}
