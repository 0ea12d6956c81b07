package reconciler

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Each event is queued at the priority its function decides, except an
// informer's initial list and a resync, which stay at PriorityResync;
// the queue hands out the highest first and keeps the higher of two adds.
func TestWithPriority(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	obj := func(name, rv string, owned bool) client.Object {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
		if owned {
			cm.OwnerReferences = []metav1.OwnerReference{{Kind: "PackageVariantSet", Name: "fleet", Controller: new(true)}}
		}
		return cm
	}
	direct := EnqueueAt(PersonUnlessOwned)
	// A mapped handler, as the fan-outs are: one event, two requests.
	fanOut := WithPriority(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: o.GetName() + "-a"}}, {NamespacedName: client.ObjectKey{Namespace: "ns", Name: o.GetName() + "-b"}}}
	}), Fixed(PriorityFanOut))

	direct.Create(ctx, event.CreateEvent{Object: obj("listed", "1", false), IsInInitialList: true}, q)
	direct.Update(ctx, event.UpdateEvent{ObjectOld: obj("resynced", "2", false), ObjectNew: obj("resynced", "2", false)}, q)
	fanOut.Update(ctx, event.UpdateEvent{ObjectOld: obj("upstream", "3", false), ObjectNew: obj("upstream", "4", false)}, q)
	direct.Update(ctx, event.UpdateEvent{ObjectOld: obj("set-variant", "5", true), ObjectNew: obj("set-variant", "6", true)}, q)
	direct.Update(ctx, event.UpdateEvent{ObjectOld: obj("edited", "7", false), ObjectNew: obj("edited", "8", false)}, q)
	// Queued low, then raised by a person's edit.
	fanOut.Create(ctx, event.CreateEvent{Object: obj("raised", "9", false)}, q)
	direct.Create(ctx, event.CreateEvent{Object: obj("raised-a", "10", false)}, q)

	type got struct {
		name     string
		priority int
	}
	want := []got{
		{"edited", PriorityPerson}, {"raised-a", PriorityPerson},
		{"upstream-a", PriorityFanOut}, {"upstream-b", PriorityFanOut}, {"set-variant", PriorityFanOut}, {"raised-b", PriorityFanOut},
		{"listed", PriorityResync}, {"resynced", PriorityResync},
	}
	g.Eventually(q.Len).Should(Equal(len(want)))
	var order []got
	for range want {
		item, p, _ := q.GetWithPriority()
		order = append(order, got{item.Name, p})
		q.Done(item)
	}
	g.Expect(order).To(Equal(want))
}

// A periodic look is queued at PriorityResync; a requeue that continues
// the work (a soak, a race retry, a wait for another object) keeps the
// priority of the event that brought it (nil: controller-runtime keeps
// the request's).
func TestReturn_priorities(t *testing.T) {
	g := NewWithT(t)
	res, err := Classify(ctrl.Result{}, Stall("BadSpec", "spec.x: bad")).Return(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	res, _ = Classify(ctrl.Result{}, &StalledError{Reason: "Unreachable", Message: "x", Retry: time.Minute}).Return(nil)
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
	g.Expect(res.Priority).To(HaveValue(Equal(PriorityResync)))
	res, _ = Run(context.Background(), &facts{}, step("poll", Periodic(time.Second), nil), step("soak", ctrl.Result{RequeueAfter: time.Minute}, nil)).Return(nil)
	g.Expect(res.RequeueAfter).To(Equal(time.Second))
	g.Expect(res.Priority).To(HaveValue(Equal(PriorityResync)))
	res, _ = Run(context.Background(), &facts{}, step("poll", Periodic(time.Minute), nil), step("soak", ctrl.Result{RequeueAfter: time.Second}, nil)).Return(nil)
	g.Expect(res.RequeueAfter).To(Equal(time.Second))
	g.Expect(res.Priority).To(BeNil())
	res, _ = Classify(ctrl.Result{}, Wait(time.Second, "UpstreamNotReady", "x")).Return(nil)
	g.Expect(res.Priority).To(BeNil())
}
