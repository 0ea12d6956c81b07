package yamlutil

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// SameText tells a tree that reads differently from one that only differs
// in the nodes: a style the encoder writes the same way is the same text.
func TestSameText(t *testing.T) {
	g := NewWithT(t)
	parse := func(s string) *yaml.Node { return yaml.MustParse(s).YNode() }
	before := parse("a: \"3\"\nb: x # why\n")
	g.Expect(SameText(before, before)).To(BeTrue())
	g.Expect(SameText(before, parse("a: \"3\"\nb: x # why\n"))).To(BeTrue())

	plain := parse("a: \"3\"\nb: x # why\n")
	plain.Content[1].Style = 0 // a string "3" is quoted whatever its style says
	g.Expect(Identical(before, plain)).To(BeFalse())
	g.Expect(SameText(before, plain)).To(BeTrue())

	g.Expect(SameText(before, parse("a: \"4\"\nb: x # why\n"))).To(BeFalse())
	g.Expect(SameText(before, parse("a: \"3\"\nb: x\n"))).To(BeFalse(), "a dropped comment is a change")
	g.Expect(SameText(before, parse("b: x # why\na: \"3\"\n"))).To(BeFalse(), "so is a new key order")
}
