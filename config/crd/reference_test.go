package crd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/reference")

// docs/reference/<kind>.md are the pages WriteReference generates, with
// the examples of docs/reference/examples, for the kinds as people use
// them (PackageRevision in porch.kpt.dev).
func TestReference(t *testing.T) {
	crds, err := Served()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "reference")
	for _, crd := range crds {
		kind := strings.ToLower(crd.Spec.Names.Kind)
		example, err := os.ReadFile(filepath.Join(dir, "examples", kind+".yaml"))
		if err != nil {
			t.Fatalf("%s: every CRD has an example: %v", kind, err)
		}
		var b bytes.Buffer
		if err := WriteReference(&b, crd, string(example)); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, kind+".md")
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil || string(want) != b.String() {
			t.Errorf("%s is stale: run make docs", path)
		}
	}
}
