package variantset

import (
	"crypto/sha1" //nolint:gosec // the spec names SHA-1 for a name suffix, not for security
	"encoding/hex"
	"regexp"
	"strings"
)

// maxNameLength is the longest generated PackageVariant name (a DNS label).
const maxNameLength = 63

var (
	validName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	invalidChars = regexp.MustCompile(`[^a-z0-9-]`)
)

// Identity is the stable identity of the PackageVariant a set generates for
// one downstream: <set>-<repository>-<package>.
func Identity(set, repo, pkg string) string {
	return set + "-" + repo + "-" + pkg
}

// Name is the PackageVariant name for an identity: the identity itself when
// it is a valid name of at most 63 characters; otherwise its first 54
// characters, a dash and the first 8 hex digits of the SHA-1 of the whole
// identity. Characters a name cannot hold (a package path's slash, upper
// case) are replaced by dashes before cutting, and also get the hash, so
// two identities never share a name.
func Name(identity string) string {
	if len(identity) <= maxNameLength && validName.MatchString(identity) {
		return identity
	}
	sum := sha1.Sum([]byte(identity)) //nolint:gosec // see import
	prefix := invalidChars.ReplaceAllString(strings.ToLower(identity), "-")
	if len(prefix) > 54 {
		prefix = prefix[:54]
	}
	prefix = strings.TrimLeft(prefix, "-")
	return prefix + "-" + hex.EncodeToString(sum[:])[:8]
}
