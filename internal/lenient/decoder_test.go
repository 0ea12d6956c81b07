package lenient

import (
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/scheme"
)

func TestFirstUndecodable(t *testing.T) {
	rollout := reflect.TypeFor[configv1alpha1.PackageRollout]()
	for _, tc := range []struct {
		name, json, path, err string
	}{
		{"decodes", `{"spec":{"progressDeadline":"5m"}}`, "", ""},
		{"duration", `{"metadata":{"name":"x"},"spec":{"progressDeadline":"soon"}}`, "spec.progressDeadline", `time: invalid duration "soon"`},
		{"first in field order", `{"spec":{"soakTime":"x","progressDeadline":"y"}}`, "spec.progressDeadline", `"y"`},
		{"list item", `{"spec":{"waves":[{"name":"a"},{"name":"b","maxTargets":"many"}]}}`, "spec.waves[1].maxTargets", "cannot unmarshal string"},
		{"map entry", `{"spec":{"revisionSelector":{"matchLabels":{"a":"b","c":7}}}}`, "spec.revisionSelector.matchLabels[c]", "cannot unmarshal number"},
		{"status", `{"status":{"observedGeneration":"one"}}`, "status.observedGeneration", "cannot unmarshal string"},
		{"inline metadata", `{"metadata":{"name":7}}`, "metadata.name", "cannot unmarshal number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path, err := FirstUndecodable([]byte(tc.json), rollout)
			g.Expect(path).To(Equal(tc.path))
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

func newDecoder(setAside func(*Undecodable)) *decoder {
	s := scheme.New()
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)}
	gvk := configv1alpha1.GroupVersion.WithKind("PackageRollout")
	inner := codecs.DecoderToVersion(codecs.LegacyCodec(configv1alpha1.GroupVersion), configv1alpha1.GroupVersion)
	return &decoder{inner: inner, gvk: gvk, newObj: func() runtime.Object { return &configv1alpha1.PackageRollout{} }, setAside: setAside}
}

func TestDecoder_list(t *testing.T) {
	g := NewWithT(t)
	var aside []*Undecodable
	d := newDecoder(func(u *Undecodable) { aside = append(aside, u) })
	list := `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageRolloutList","metadata":{"resourceVersion":"42","continue":"c"},"items":[
	 {"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageRollout","metadata":{"name":"a","namespace":"one","resourceVersion":"7"},"spec":{"progressDeadline":"5m"}},
	 {"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageRollout","metadata":{"name":"b","namespace":"two","resourceVersion":"8","labels":{"l":"v"}},"spec":{"progressDeadline":"` + strings.Repeat("soon", 500) + `"}},
	 {"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageRollout","metadata":{"name":"c","namespace":"three"},"spec":{"soakTime":"1h"}}]}`
	into := &configv1alpha1.PackageRolloutList{}
	out, _, err := d.Decode([]byte(list), nil, into)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(BeIdenticalTo(into))
	g.Expect(into.Items).To(HaveLen(2))
	g.Expect(into.Items[0].Name).To(Equal("a"))
	g.Expect(into.Items[0].Spec.ProgressDeadline.Duration.String()).To(Equal("5m0s"))
	g.Expect(into.Items[1].Name).To(Equal("c"))
	g.Expect(into.ResourceVersion).To(Equal("42"), "the list's resourceVersion, which the informer watches from")
	g.Expect(into.Continue).To(Equal("c"))
	g.Expect(aside).To(HaveLen(1))
	g.Expect(aside[0].Name).To(Equal("b"))
	g.Expect(aside[0].Namespace).To(Equal("two"))
	g.Expect(aside[0].ResourceVersion).To(Equal("8"))
	g.Expect(aside[0].Labels).To(HaveKeyWithValue("l", "v"))
	g.Expect(aside[0].Path).To(Equal("spec.progressDeadline"))
	g.Expect(aside[0].Problem()).To(HavePrefix("spec.progressDeadline: time: invalid duration"))
	g.Expect(len(aside[0].Problem())).To(BeNumerically("<", 400), "a user's long value is cut")
}

func TestDecoder_object(t *testing.T) {
	g := NewWithT(t)
	var aside []*Undecodable
	d := newDecoder(func(u *Undecodable) { aside = append(aside, u) })
	obj := `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageRollout","metadata":{"name":"b","namespace":"two","uid":"u1","resourceVersion":"9"},"spec":{"soakTime":"soon"}}`
	out, err := runtime.Decode(d, []byte(obj))
	g.Expect(err).NotTo(HaveOccurred())
	u, ok := out.(*Undecodable)
	g.Expect(ok).To(BeTrue())
	g.Expect(u.Path).To(Equal("spec.soakTime"))
	g.Expect(aside).To(HaveLen(1))

	// In a watch, it becomes the deletion of the object from the cache.
	var rep Reporter
	rep.SetAside(u)
	e := standIn(watch.Event{Type: watch.Modified, Object: u}, d.gvk, d.newObj, &rep)
	g.Expect(e.Type).To(Equal(watch.Deleted))
	ro, ok := e.Object.(*configv1alpha1.PackageRollout)
	g.Expect(ok).To(BeTrue())
	g.Expect(ro.Name).To(Equal("b"))
	g.Expect(string(ro.UID)).To(Equal("u1"))
	g.Expect(rep.Any(d.gvk)).To(BeTrue())

	// Once it decodes again, it is no longer set aside.
	fixed := &configv1alpha1.PackageRollout{}
	fixed.Name, fixed.Namespace = "b", "two"
	e = standIn(watch.Event{Type: watch.Modified, Object: fixed}, d.gvk, d.newObj, &rep)
	g.Expect(e.Object).To(BeIdenticalTo(fixed))
	g.Expect(rep.Any(d.gvk)).To(BeFalse())

	// Not JSON of its kind at all: the error is the decoder's, as before.
	_, _, err = d.Decode([]byte(`{"kind":"Other","metadata":{"name":"x"}}`), nil, nil)
	g.Expect(err).To(HaveOccurred())
}

func TestReporter_completeListForgets(t *testing.T) {
	g := NewWithT(t)
	var rep Reporter
	gvk := configv1alpha1.GroupVersion.WithKind("PackageRollout")
	bad := func(name string) *Undecodable {
		u := &Undecodable{Err: "x"}
		u.Name, u.Namespace = name, "ns"
		u.SetGroupVersionKind(gvk)
		return u
	}
	l := rep.beginList(gvk)
	rep.SetAside(bad("a"))
	rep.SetAside(bad("b"))
	rep.endList(gvk, l)
	g.Expect(rep.bad).To(HaveLen(2))
	// The next complete list finds only b bad: a was fixed or deleted
	// while no watch saw it.
	l = rep.beginList(gvk)
	rep.SetAside(bad("b"))
	rep.endList(gvk, l)
	g.Expect(rep.bad).To(HaveLen(1))
	g.Expect(rep.bad).To(HaveKey(objectKey{gvk: gvk, namespace: "ns", name: "b"}))
}
