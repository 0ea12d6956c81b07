package pkg

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// packagePathBad matches what a package path cannot hold: empty or
// dot-leading segments, a leading or trailing slash, and what git ref
// names refuse.
var packagePathBad = regexp.MustCompile(`(^|/)\.|//|^/|/$|[\s~^:?*\[\\]|@\{`)

// ValidatePackagePath checks a package path: slash-separated, relative, no
// empty or dot-leading segments, and usable inside git ref names.
func ValidatePackagePath(p string) error {
	if p == "" || packagePathBad.MatchString(p) || strings.HasSuffix(p, ".lock") || path.Clean(p) != p {
		return fmt.Errorf("invalid package path %q: use a relative slash-separated path of simple names", p)
	}
	return nil
}
