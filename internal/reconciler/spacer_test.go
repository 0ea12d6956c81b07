package reconciler

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestSpacer(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Spacer{Interval: 10 * time.Second, Now: func() time.Time { return now }}
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	g.Expect(s.Wait(a)).To(BeZero(), "the first goes at once")
	now = now.Add(3 * time.Second)
	g.Expect(s.Wait(a)).To(Equal(7*time.Second), "the next is put off to the end of the interval")
	g.Expect(s.Wait(b)).To(BeZero(), "objects are spaced independently")
	now = now.Add(7 * time.Second)
	g.Expect(s.Wait(a)).To(BeZero(), "at the end of the interval it goes again")
	g.Expect(s.Wait(a)).To(Equal(10*time.Second), "and starts a new interval")
	s.Forget(a)
	g.Expect(s.Wait(a)).To(BeZero(), "a forgotten object starts over")
}

func TestSpacerSettle(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Spacer{Interval: 10 * time.Second, Settle: 2 * time.Second, Now: func() time.Time { return now }}
	a := types.NamespacedName{Name: "a"}
	g.Expect(s.Wait(a)).To(Equal(2*time.Second), "the first of a burst waits for the burst to settle")
	now = now.Add(time.Second)
	g.Expect(s.Wait(a)).To(Equal(time.Second), "an event of the burst is folded into the same reconcile")
	now = now.Add(time.Second)
	g.Expect(s.Wait(a)).To(BeZero(), "once settled it goes")
	now = now.Add(4 * time.Second)
	g.Expect(s.Wait(a)).To(Equal(6*time.Second), "then the interval spaces the next")
	now = now.Add(6 * time.Second)
	g.Expect(s.Wait(a)).To(BeZero(), "an event at the end of the interval goes at once")
	now = now.Add(30 * time.Second)
	g.Expect(s.Wait(a)).To(Equal(2*time.Second), "after a quiet interval the next burst settles again")
}
