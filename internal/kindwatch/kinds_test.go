package kindwatch

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseKinds(t *testing.T) {
	g := NewWithT(t)
	kinds, err := ParseKinds([]string{"ConfigMap", " Team.krm-platform.bigco.com", "*.example.com", "", "Secret"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds.String()).To(Equal("ConfigMap,Team.krm-platform.bigco.com,*.example.com,Secret"))
	for in, want := range map[string]string{
		"*":              `readable kind "*": a wildcard needs a group (*.example.com); the core group's kinds are named one by one`,
		"Config_Map":     `readable kind "Config_Map": "Config_Map" is not a kind name`,
		"Team.Bad_Group": `readable kind "Team.Bad_Group": "Bad_Group" is not an API group`,
	} {
		_, err := ParseKinds([]string{in})
		g.Expect(err).To(MatchError(want), in)
	}
}

func TestKindsAllows(t *testing.T) {
	kinds := Kinds{{Kind: "ConfigMap"}, {Group: "example.com", Kind: "*"}, {Group: "", Kind: "*"}}
	for _, tc := range []struct {
		gk   schema.GroupKind
		want bool
	}{
		{schema.GroupKind{Kind: "ConfigMap"}, true},
		{schema.GroupKind{Group: "example.com", Kind: "Team"}, true},
		{schema.GroupKind{Group: "other.com", Kind: "Team"}, false},
		{schema.GroupKind{Group: "apps", Kind: "ConfigMap"}, false},
		// A wildcard never covers Secrets, even one over the core group
		// (which ParseKinds refuses, but a caller may build).
		{schema.GroupKind{Kind: "Secret"}, false},
	} {
		if got := kinds.Allows(tc.gk); got != tc.want {
			t.Errorf("Allows(%s) = %t, want %t", tc.gk, got, tc.want)
		}
	}
	if !(Kinds{{Kind: "Secret"}}).Allows(schema.GroupKind{Kind: "Secret"}) {
		t.Error("a named Secret is allowed")
	}
	if err := (Kinds{}).Check(schema.GroupKind{Kind: "ConfigMap"}); err == nil || err.Error() != "this controller does not read ConfigMap objects (it reads no kind); an administrator can add the kind to --readable-kinds and to the controller's ClusterRole" {
		t.Errorf("Check with no kinds: %v", err)
	}
}
