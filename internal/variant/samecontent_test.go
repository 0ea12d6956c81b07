package variant

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
)

func TestSameContent(t *testing.T) {
	kf := func(extra string) []byte {
		return []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n" + extra)
	}
	rendered := "status:\n  renderStatus:\n    mutationSteps:\n    - image: set-namespace\n      exitCode: 0\n"
	p := func(kptfile []byte, files ...string) *pkg.Package {
		m := map[string][]byte{"Kptfile": kptfile, "cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}
		for i := 0; i+1 < len(files); i += 2 {
			m[files[i]] = []byte(files[i+1])
		}
		return pkg.New(m)
	}
	for _, tc := range []struct {
		name string
		a, b *pkg.Package
		same bool
	}{
		{"identical", p(kf("")), p(kf("")), true},
		{"only the render status differs", p(kf(rendered)), p(kf("")), true},
		{"another Kptfile field differs", p(kf("info:\n  description: x\n")), p(kf("")), false},
		{"a resource differs", p(kf(""), "b.yaml", "x: 1\n"), p(kf(""), "b.yaml", "x: 2\n"), false},
		{"a file more", p(kf(""), "b.yaml", "x: 1\n"), p(kf("")), false},
		{"a file of another name", p(kf(""), "b.yaml", "x: 1\n"), p(kf(""), "c.yaml", "x: 1\n"), false},
		{"nil and nil", nil, nil, true},
		{"nil and a package", nil, p(kf("")), false},
	} {
		NewWithT(t).Expect(SameContent(tc.a, tc.b)).To(Equal(tc.same), tc.name)
	}
}
