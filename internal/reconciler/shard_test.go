package reconciler_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// A shard's predicate passes its own objects' events that the inner
// predicates pass, none of another shard's, and every update that moves
// an object into the shard, even one the inner predicates drop (a label
// change moves no generation).
func TestShardPredicate(t *testing.T) {
	g := NewWithT(t)
	in := func(shard string, gen int64) *configv1alpha1.PackageVariant {
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "v", Generation: gen}}
		if shard != "" {
			pv.Labels = map[string]string{configv1alpha1.ShardLabel: shard}
		}
		return pv
	}
	update := func(from, to *configv1alpha1.PackageVariant) event.UpdateEvent {
		return event.UpdateEvent{ObjectOld: from, ObjectNew: to}
	}
	p := reconciler.Shard{}.Predicate(predicate.GenerationChangedPredicate{})

	g.Expect(p.Create(event.CreateEvent{Object: in("", 1)})).To(BeTrue())
	g.Expect(p.Create(event.CreateEvent{Object: in("b", 1)})).To(BeFalse(), "another shard's")
	g.Expect(p.Delete(event.DeleteEvent{Object: in("b", 1)})).To(BeFalse())
	g.Expect(p.Update(update(in("", 1), in("", 2)))).To(BeTrue(), "a new generation")
	g.Expect(p.Update(update(in("", 1), in("", 1)))).To(BeFalse(), "the inner predicate drops it")
	g.Expect(p.Update(update(in("b", 1), in("", 1)))).To(BeTrue(), "moved in: not reconciled here yet")
	g.Expect(p.Update(update(in("", 1), in("b", 1)))).To(BeFalse(), "moved out: the other shard's now")
	g.Expect(p.Update(update(in("b", 1), in("b", 2)))).To(BeFalse(), "another shard's")

	b := reconciler.Shard{Name: "b"}.Predicate()
	g.Expect(b.Update(update(in("", 1), in("b", 1)))).To(BeTrue())
	g.Expect(b.Update(update(in("b", 1), in("b", 1)))).To(BeTrue(), "no inner predicate: every event of its own")
	g.Expect(b.Generic(event.GenericEvent{Object: in("", 1)})).To(BeFalse())
}
