package reconciler

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestSpacer(t *testing.T) {
	g := NewWithT(t)
	s := &Spacer{Interval: time.Hour}
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	g.Expect(s.Wait(a)).To(BeZero(), "the first goes at once")
	g.Expect(s.Wait(a)).To(BeNumerically(">", 59*time.Minute), "the next is put off to the end of the interval")
	g.Expect(s.Wait(b)).To(BeZero(), "objects are spaced independently")
	s.Forget(a)
	g.Expect(s.Wait(a)).To(BeZero(), "a forgotten object starts over")

	short := &Spacer{Interval: time.Millisecond}
	g.Expect(short.Wait(a)).To(BeZero())
	time.Sleep(2 * time.Millisecond)
	g.Expect(short.Wait(a)).To(BeZero(), "after the interval it goes at once again")
}
