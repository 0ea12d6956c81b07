package pkg

import (
	"path"
	"strings"
	"testing"
)

// FuzzValidatePackagePath: a path the rule accepts never leaves the
// repository, never is absolute, and is usable in a git ref name; the rule
// never panics. go test -fuzz FuzzValidatePackagePath ./internal/pkg/
func FuzzValidatePackagePath(f *testing.F) {
	for _, s := range []string{"app", "team/app", "../../escape", "/etc", "a/./b", "a//b", ".hidden", "x.lock", "a@{b", "a b", "ü/ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidatePackagePath(p) != nil {
			return
		}
		if path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") {
			t.Fatalf("accepted %q, which leaves the repository", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || strings.HasPrefix(seg, ".") {
				t.Fatalf("accepted %q with segment %q", p, seg)
			}
		}
		if strings.ContainsAny(p, " \t\n~^:?*[\\") || strings.Contains(p, "@{") || strings.HasSuffix(p, ".lock") {
			t.Fatalf("accepted %q, which git refs refuse", p)
		}
	})
}
