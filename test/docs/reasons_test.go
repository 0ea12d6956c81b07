package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	// reasonConst is a reason constant: FooReason = "Foo".
	reasonConst = regexp.MustCompile(`\w+Reason\s*=\s*"([A-Za-z]+)"`)
	// reasonLiteral is a reason written in place: Reason: "Foo".
	reasonLiteral = regexp.MustCompile(`Reason:\s*"([A-Za-z]+)"`)
)

// Every status reason the controllers and the package engine set is
// explained in docs/troubleshooting.md.
func TestTroubleshootingCoversEveryReason(t *testing.T) {
	root := filepath.Join("..", "..")
	reasons := map[string][]string{}
	for _, dir := range []string{"api", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// The demo's conditions are the demo's story, not Scion's.
			if d.IsDir() && (d.Name() == "demo" || d.Name() == "testutil") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, re := range []*regexp.Regexp{reasonConst, reasonLiteral} {
				for _, m := range re.FindAllStringSubmatch(string(data), -1) {
					reasons[m[1]] = append(reasons[m[1]], path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(reasons) < 20 {
		t.Fatalf("found only %d reasons in the code: the scan is broken", len(reasons))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for r, where := range reasons {
		if !strings.Contains(string(doc), "`"+r+"`") {
			missing = append(missing, r+" (set in "+where[0]+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/troubleshooting.md has no entry for:\n  %s", strings.Join(missing, "\n  "))
	}
}
