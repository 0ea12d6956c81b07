package store

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// Ref name prefixes of the lifecycle stages.
const (
	draftPrefix            = "refs/heads/drafts/"
	proposedPrefix         = "refs/heads/proposed/"
	deletionProposedPrefix = "refs/heads/deletionProposed/"
	tagPrefix              = "refs/tags/"
)

// Commit trailers Scion writes: the one list of them.
const (
	// TrailerPackage and TrailerWorkspace identify the revision a commit
	// belongs to; TrailerRevision its number once published.
	TrailerPackage   = "Scion-Package"
	TrailerWorkspace = "Scion-Workspace"
	TrailerRevision  = "Scion-Revision"
	// TrailerObject (namespace/name) and TrailerObjectUID tie a draft to
	// the PackageRevision that asked for it, so a draft written before a
	// crash, or whose answer was lost, is found again instead of written
	// twice.
	TrailerObject    = "Scion-Object"
	TrailerObjectUID = "Scion-Object-UID"
	// TrailerPackageVariant (namespace/name) and TrailerPackageVariantUID
	// record the PackageVariant a draft belongs to; the name is what
	// identifies it (it outlives the object: a restore, an orphaning
	// delete and a create), the UID says which object wrote.
	TrailerPackageVariant    = "Scion-PackageVariant"
	TrailerPackageVariantUID = "Scion-PackageVariant-UID"
	// TrailerRollout (namespace/name) records the PackageRollout that
	// rolled a revision back; TrailerRevertOf the revision it reverts
	// (package/vN).
	TrailerRollout  = "Scion-Rollout"
	TrailerRevertOf = "Scion-Revert-Of"
	// TrailerProposedBy and TrailerProposedAt (RFC 3339) record who
	// proposed a revision and when, on the commit that proposes it; a
	// publication keeps them (so git, not the cluster, holds the record),
	// a draft's next write drops them.
	TrailerProposedBy = "Scion-Proposed-By"
	TrailerProposedAt = "Scion-Proposed-At"
	// TrailerApprovedBy records, on the commit that publishes a revision,
	// who approved it (its tag's tagger too).
	TrailerApprovedBy = "Scion-Approved-By"
	// TrailerWriter says who wrote a commit (one of the Writer values).
	// Unlike the other trailers, an update of a draft does not carry it
	// over from the commit before: it is the one trailer that speaks of
	// the commit itself, and ownership is read from it, never from a
	// commit's subject.
	TrailerWriter = "Scion-Writer"
)

// The writers of Scion's commits (TrailerWriter).
const (
	// WriterPackageVariant: a PackageVariant's draft (its UID in
	// TrailerPackageVariantUID).
	WriterPackageVariant = "PackageVariant"
	// WriterPackageRevision: the PackageRevision controller (a draft a
	// PackageRevision asked for, conditions mirrored into the Kptfile, a
	// publication or deletion a lifecycle change asked for).
	WriterPackageRevision = "PackageRevision"
	// WriterPackageRollout: a rollout's rollback (TrailerRollout names it).
	WriterPackageRollout = "PackageRollout"
	// WriterPerson: a person's edit through the CLI (scion rpkg push).
	WriterPerson = "person"
	// WriterRelease: a revision published outside any PackageRevision's
	// lifecycle (release tooling, the demo's catalog).
	WriterRelease = "release"
	// WriterRepository: the store itself (a branch initialized).
	WriterRepository = "Repository"
)

var (
	revisionTagRE = regexp.MustCompile(`^v([0-9]+)$`)
	workspaceRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	floatingTagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	trailerKeyRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)
)

// ValidateWorkspace checks a workspace name.
func ValidateWorkspace(ws string) error {
	if len(ws) > 63 || !workspaceRE.MatchString(ws) {
		return fmt.Errorf("invalid workspace name %q: lowercase letters, digits, '.', '_' and '-', at most 63", ws)
	}
	return nil
}

// ValidateFloatingTag checks a floating tag name; names of the form v<N>
// are revisions and cannot be floating tags.
func ValidateFloatingTag(tag string) error {
	if !floatingTagRE.MatchString(tag) || revisionTagRE.MatchString(tag) || strings.HasSuffix(tag, ".lock") {
		return fmt.Errorf("invalid floating tag %q: letters, digits, '.', '_' and '-', not of the form v<N>", tag)
	}
	return nil
}

// RefName is the short name (without refs/heads/ or refs/tags/) of the ref
// that holds rev in the repository's layout, the repository's directory
// included: what a Kptfile's upstream records as its ref.
func (r *Repository) RefName(rev Revision) string {
	full := joinPath(r.opts.Directory, rev.Package)
	switch rev.Lifecycle {
	case porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDeletionProposed:
		return revisionTagRef(full, rev.Revision).Short()
	case porchv1alpha1.LifecycleProposed:
		return proposedRef(full, rev.Workspace).Short()
	}
	return draftRef(full, rev.Workspace).Short()
}

func draftRef(p, ws string) plumbing.ReferenceName {
	return plumbing.ReferenceName(draftPrefix + p + "/" + ws)
}

func proposedRef(p, ws string) plumbing.ReferenceName {
	return plumbing.ReferenceName(proposedPrefix + p + "/" + ws)
}

func deletionProposedRef(p string, rev int) plumbing.ReferenceName {
	return plumbing.ReferenceName(deletionProposedPrefix + p + "/v" + strconv.Itoa(rev))
}

func revisionTagRef(p string, rev int) plumbing.ReferenceName {
	return plumbing.ReferenceName(tagPrefix + p + "/v" + strconv.Itoa(rev))
}

// floatingPrefix holds the floating tags, one level per package with the
// package path escaped (a/b is a%2Fb), so a tag never shares a ref path
// with a package's revision tags: the tag stable of app and the package
// app/stable can coexist, which refs/tags/app/stable and
// refs/tags/app/stable/v1 cannot.
const floatingPrefix = "refs/scion/floating/"

func floatingTagRef(p, tag string) plumbing.ReferenceName {
	return plumbing.ReferenceName(floatingPrefix + pathEscaper.Replace(p) + "/" + tag)
}

var pathEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// retiredPrefix holds a ref per deleted published revision, so that its
// number and its workspace (the revision's name) are never given to
// other content: refs/scion/retired/<package escaped>/v<N>/<workspace>,
// at a commit of an empty tree recording the deletion (none of the
// deleted content stays reachable).
const retiredPrefix = "refs/scion/retired/"

// noWorkspace stands for the workspace of a revision that had none (a
// tag made by hand): '%' is in no workspace name.
const noWorkspace = "%none"

func retiredRef(p string, rev int, ws string) plumbing.ReferenceName {
	if ws == "" {
		ws = noWorkspace
	}
	return plumbing.ReferenceName(retiredPrefix + pathEscaper.Replace(p) + "/v" + strconv.Itoa(rev) + "/" + ws)
}

// retired are the revision numbers and workspaces of a package's deleted
// published revisions, from their refs.
func (r *Repository) retiredLocked(full string) map[int]string {
	prefix := retiredPrefix + pathEscaper.Replace(full) + "/"
	out := map[int]string{}
	for name := range r.refs {
		rest, ok := strings.CutPrefix(name.String(), prefix)
		if !ok {
			continue
		}
		num, ws, ok := strings.Cut(rest, "/")
		if n, okN := parseRevisionSuffix(num); ok && okN {
			out[n] = ws
		}
	}
	return out
}

// legacyFloatingTagRef is where floating tags were before (and where a
// tag made with git tag is): still read, moved to floatingTagRef when the
// tag is next set.
func legacyFloatingTagRef(p, tag string) plumbing.ReferenceName {
	return plumbing.ReferenceName(tagPrefix + p + "/" + tag)
}

// splitLast splits "a/b/c" into "a/b" and "c".
func splitLast(s string) (string, string, bool) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 || i == len(s)-1 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

func parseRevisionSuffix(s string) (int, bool) {
	m := revisionTagRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// Trailers are "Key: value" lines at the end of a commit message.
type Trailers map[string]string

// formatMessage renders a commit message with trailers, sorted by key.
func formatMessage(subject string, t Trailers) (string, error) {
	keys := make([]string, 0, len(t))
	for k, v := range t {
		if !trailerKeyRE.MatchString(k) {
			return "", fmt.Errorf("invalid commit trailer key %q", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return "", fmt.Errorf("commit trailer %s: value must be one line", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(strings.TrimSpace(subject))
	b.WriteString("\n")
	if len(keys) > 0 {
		b.WriteString("\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, t[k])
		}
	}
	return b.String(), nil
}

// parseTrailers reads the trailers of the last paragraph of a message.
func parseTrailers(msg string) Trailers {
	msg = strings.TrimRight(msg, "\n")
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return nil
	}
	t := Trailers{}
	for _, line := range strings.Split(msg[i+2:], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !trailerKeyRE.MatchString(k) {
			return nil
		}
		t[k] = v
	}
	return t
}
