package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fullHash is a commit named by its full hash.
var fullHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ResolveRef returns the commit a ref names in the mirror, as git
// understands a ref given to a clone: a full ref name (refs/...), a branch,
// a tag (annotated tags peeled to their commit) or a full commit hash the
// mirror holds. It fails with ErrNotFound naming the ref.
func (r *Repository) ResolveRef(_ context.Context, ref string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs == nil {
		if err := r.loadRefsLocked(); err != nil {
			return "", err
		}
	}
	names := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref)}
	if strings.HasPrefix(ref, "refs/") {
		names = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	for _, name := range names {
		if h, ok := r.refs[name]; ok {
			return r.peelLocked(h, ref)
		}
	}
	if fullHash.MatchString(ref) {
		if _, err := object.GetCommit(r.storer, plumbing.NewHash(ref)); err == nil {
			return ref, nil
		}
	}
	return "", fmt.Errorf("%s has no branch, tag or commit %q (a commit must be given in full and be on a branch or tag): %w", Redact(r.opts.URL), ref, ErrNotFound)
}

// peelLocked follows annotated tags from h to the commit they name.
func (r *Repository) peelLocked(h plumbing.Hash, ref string) (string, error) {
	for range 10 {
		t, err := object.GetTag(r.storer, h)
		if err != nil {
			break // not a tag object
		}
		h = t.Target
	}
	if _, err := object.GetCommit(r.storer, h); err != nil {
		return "", fmt.Errorf("%s of %s does not name a commit: %w", ref, Redact(r.opts.URL), ErrNotFound)
	}
	return h.String(), nil
}
