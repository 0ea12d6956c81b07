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

// FuzzValidPath: a file path the rule accepts stays inside the package,
// has no .git segment in any spelling git treats as its own folder, no
// control or direction-changing character, and no segment of only
// spaces; the rule never panics. go test -fuzz FuzzValidPath ./internal/pkg/
func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"Kptfile", "a/b.yaml", ".git/config", ".GIT/config", "a/.git./x", "a\x00b", "a\nb", "x\u202Ey", "   ", "a/ /b", ".github/workflows/x.yaml", ".gitignore", "ü.yaml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidPath(p) != nil {
			return
		}
		if path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
			t.Fatalf("accepted %q, which leaves the package", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if strings.EqualFold(strings.TrimRight(seg, ". "), ".git") || strings.TrimSpace(seg) == "" {
				t.Fatalf("accepted %q with segment %q", p, seg)
			}
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f || r == 0x202E {
				t.Fatalf("accepted %q with %U", p, r)
			}
		}
	})
}
