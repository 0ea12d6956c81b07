package pkgservice

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObjectName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ObjectName("cluster-01", "team/app", "v1")).To(Equal("cluster-01.team.app.v1"))
	for _, tc := range [][3]string{
		{"repo", "Team/App_1", "ws"},
		{"repo", "a..b", "ws"},
		{"repo", strings.Repeat("very-long-segment/", 20) + "app", "ws"},
	} {
		n := ObjectName(tc[0], tc[1], tc[2])
		g.Expect(validation.IsDNS1123Subdomain(n)).To(BeEmpty(), n)
		g.Expect(n).NotTo(Equal(ObjectName(tc[0], tc[1], tc[2]+"x")), "distinct identities get distinct names")
	}
	g.Expect(ObjectName("repo", "Team/App", "ws")).NotTo(Equal(ObjectName("repo", "team/app", "ws")), "names changed by sanitizing carry a hash")
}

func TestLabelValue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(LabelValue("team/app")).To(Equal("team.app"))
	for _, s := range []string{"a b/c", strings.Repeat("x/", 50), "-lead/trail-"} {
		v := LabelValue(s)
		g.Expect(validation.IsValidLabelValue(v)).To(BeEmpty(), v)
	}
}
