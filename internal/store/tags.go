package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// SetFloatingTag points the floating tag of a package (such as stable) at
// a published revision, creating or moving it, and returns the revision
// it pointed at before (0: none). It reads the remote first and moves the
// tag with a compare-and-swap against what it read, so a move by someone
// else in between is an ErrConflict, never overwritten unseen.
func (r *Repository) SetFloatingTag(ctx context.Context, p, tag string, revision int) (_ int, err error) {
	if err := ValidateFloatingTag(tag); err != nil {
		return 0, err
	}
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { unlock(err) }()
	if err := r.fetchLocked(ctx); err != nil {
		return 0, err
	}
	commit, err := r.publishedCommitLocked(p, revision)
	if err != nil {
		return 0, err
	}
	full := joinPath(r.opts.Directory, p)
	ref, legacy := floatingTagRef(full, tag), legacyFloatingTagRef(full, tag)
	current, old := r.ref(ref), r.ref(legacy)
	from := 0
	if h := cmp.Or(current, old); !h.IsZero() {
		rev, _, err := r.taggedRevisionLocked(p, h)
		if err != nil {
			return 0, err
		}
		from = rev.Revision
	}
	if current == commit && old.IsZero() {
		return from, nil
	}
	updates := []refUpdate{{Name: ref, Old: current, New: commit}}
	if current == commit {
		updates = nil
	}
	if !old.IsZero() {
		// Moved out of refs/tags, in the same atomic push.
		updates = append(updates, refUpdate{Name: legacy, Old: old, New: plumbing.ZeroHash})
	}
	return from, r.push(ctx, updates)
}

// taggedRevisionLocked returns the published revision of a package whose
// commit a tag (h) points at; false when it points at none.
func (r *Repository) taggedRevisionLocked(p string, h plumbing.Hash) (Revision, bool, error) {
	meta, err := r.metaFor(h)
	if err != nil {
		return Revision{}, false, err
	}
	revs, err := r.listLocked(p)
	if err != nil {
		return Revision{}, false, err
	}
	for _, rev := range revs {
		if rev.Revision > 0 && rev.Commit == meta.commit.String() {
			return rev, true, nil
		}
	}
	return Revision{Commit: meta.commit.String()}, false, nil
}

// FloatingTags returns the floating tags of a package and the revisions
// they point at (0 for a tag on no published revision), by name.
func (r *Repository) FloatingTags(ctx context.Context, p string) (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := joinPath(r.opts.Directory, p)
	out := map[string]int{}
	for name, h := range r.refs {
		var tag string
		switch s := name.String(); {
		case strings.HasPrefix(s, floatingPrefix+pathEscaper.Replace(full)+"/"):
			tag = strings.TrimPrefix(s, floatingPrefix+pathEscaper.Replace(full)+"/")
		case strings.HasPrefix(s, tagPrefix+full+"/"):
			tag = strings.TrimPrefix(s, tagPrefix+full+"/")
			if strings.Contains(tag, "/") || ValidateFloatingTag(tag) != nil {
				continue // a revision tag, or a subpackage's
			}
			if _, moved := out[tag]; moved {
				continue
			}
		default:
			continue
		}
		rev, _, err := r.taggedRevisionLocked(p, h)
		if err != nil {
			return nil, err
		}
		out[tag] = rev.Revision
	}
	return out, nil
}

// publishedCommitLocked returns the commit of a published revision.
func (r *Repository) publishedCommitLocked(p string, revision int) (plumbing.Hash, error) {
	tag := r.ref(revisionTagRef(joinPath(r.opts.Directory, p), revision))
	if tag.IsZero() {
		return plumbing.ZeroHash, fmt.Errorf("package %s revision v%d is not published: %w", p, revision, ErrNotFound)
	}
	meta, err := r.metaFor(tag)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return meta.commit, nil
}

// ResolveFloatingTag returns the published revision a floating tag points
// at.
func (r *Repository) ResolveFloatingTag(ctx context.Context, p, tag string) (Revision, error) {
	if err := ValidateFloatingTag(tag); err != nil {
		return Revision{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	full := joinPath(r.opts.Directory, p)
	h := cmp.Or(r.ref(floatingTagRef(full, tag)), r.ref(legacyFloatingTagRef(full, tag)))
	if h.IsZero() {
		return Revision{}, fmt.Errorf("package %s has no tag %q: %w", p, tag, ErrNotFound)
	}
	rev, ok, err := r.taggedRevisionLocked(p, h)
	if err != nil {
		return Revision{}, err
	}
	if !ok {
		return Revision{}, fmt.Errorf("tag %q of package %s points at %s, which is no published revision: %w", tag, p, short(rev.Commit), ErrNotFound)
	}
	return rev, nil
}
