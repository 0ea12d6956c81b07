package compact

import (
	"strings"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type object struct {
	metav1.ObjectMeta
	Spec   *spec
	Status struct{ Conditions []metav1.Condition }
	Raw    []byte
}

type spec struct {
	Data  map[string]string
	Lists [][]string
	Any   any
}

// fresh builds an object whose strings are all copies of their own, as
// decoding makes them.
func fresh(name string) *object {
	c := func(s string) string { return strings.Clone(s) }
	o := &object{ObjectMeta: metav1.ObjectMeta{Name: c(name), Namespace: c("bench"), UID: "uid-" + types.UID(c(name)), ResourceVersion: c("12"),
		Labels:          map[string]string{c("porch.kpt.dev/repository"): c("cluster-01")},
		OwnerReferences: []metav1.OwnerReference{{Kind: c("PackageVariantSet"), Name: c("fleet"), UID: types.UID(c("set-uid"))}}},
		Spec: &spec{Data: map[string]string{c("tenant"): c("a")}, Lists: [][]string{{c("x"), c("y")}}, Any: &metav1.Condition{Reason: c("Done")}},
		Raw:  []byte("raw")}
	o.Status.Conditions = make([]metav1.Condition, 0, 4) // as decoding grows it
	o.Status.Conditions = append(o.Status.Conditions, metav1.Condition{Type: c("Ready"), Status: metav1.ConditionStatus(c("True")), Reason: c("Done"), Message: c("the downstream draft reflects the variant")})
	return o
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Equal strings of two objects share their bytes afterwards, wherever they
// are (fields, pointers, slices, maps' keys and values, interfaces); the
// objects read as before, their slices without spare room; an object's own name, UID and resource version
// are left alone (and an owner's UID, shared by siblings, is not).
func TestObject(t *testing.T) {
	g := NewWithT(t)
	a, b := fresh("a"), fresh("b")
	a2 := fresh("a")
	Object(a)
	Object(b)
	g.Expect(a).To(Equal(a2), "reads as before")
	g.Expect(cap(a.Status.Conditions)).To(Equal(1), "no spare room")

	g.Expect(same(a.Namespace, b.Namespace)).To(BeTrue())
	g.Expect(same(a.OwnerReferences[0].Name, b.OwnerReferences[0].Name)).To(BeTrue())
	g.Expect(same(string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID))).To(BeTrue(), "an owner's UID is shared by its children")
	g.Expect(same(a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)).To(BeTrue())
	g.Expect(same(string(a.Status.Conditions[0].Status), string(b.Status.Conditions[0].Status))).To(BeTrue())
	g.Expect(same(a.Spec.Lists[0][1], b.Spec.Lists[0][1])).To(BeTrue())
	g.Expect(same(a.Spec.Any.(*metav1.Condition).Reason, b.Spec.Any.(*metav1.Condition).Reason)).To(BeTrue())
	g.Expect(same(a.Spec.Data["tenant"], b.Spec.Data["tenant"])).To(BeTrue())
	for _, m := range []map[string]string{a.Labels, b.Labels} {
		for k, v := range m {
			g.Expect(same(k, canonical("porch.kpt.dev/repository"))).To(BeTrue(), "map keys too")
			g.Expect(same(v, canonical("cluster-01"))).To(BeTrue())
		}
	}

	c := fresh("a")
	Object(c)
	g.Expect(same(a.Name, c.Name)).To(BeFalse(), "an object's own name is its own")
	g.Expect(same(a.ResourceVersion, c.ResourceVersion)).To(BeFalse())
	g.Expect(same(string(a.UID), string(c.UID))).To(BeFalse())

	Object(nil)
	Object(object{}) // not a pointer: left alone
}

// canonical is the canonical copy of s.
func canonical(s string) string {
	o := &struct{ S string }{strings.Clone(s)}
	Object(o)
	return o.S
}
