package demo

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
)

// The draft diff shows each change with two lines of context, and "@@"
// where unchanged lines are left out.
func TestDiff(t *testing.T) {
	a := pkg.New(map[string][]byte{
		"Kptfile":   []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-namespace\n"),
		"same.yaml": []byte("a: 1\n"),
	})
	b := pkg.New(map[string][]byte{
		"Kptfile":   []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: cluster-01-web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-namespace\n  - image: set-labels\n"),
		"same.yaml": []byte("a: 1\n"),
		"new.yaml":  []byte("b: 2\n"),
	})
	NewWithT(t).Expect(Diff(a, b)).To(Equal(`--- upstream/Kptfile
+++ downstream/Kptfile
 kind: Kptfile
 metadata:
-  name: web
+  name: cluster-01-web
 info:
   description: web
@@
   mutators:
   - image: set-namespace
+  - image: set-labels
--- upstream/new.yaml
+++ downstream/new.yaml
+b: 2
`))
}
