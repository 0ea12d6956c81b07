package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
)

// DraftWrite is a request to create or update a draft with one commit.
type DraftWrite struct {
	// Package path, relative to the repository directory.
	Package string
	// Workspace of the draft.
	Workspace string
	// Expected is the commit the writer read; empty creates a new draft,
	// which fails if one already exists.
	Expected string
	// Contents are the complete files of the package.
	Contents *pkg.Package
	// Message is the commit subject; Trailers are added to it (an update
	// also keeps the trailers of the draft's head it does not set).
	Message  string
	Trailers Trailers
	// Author overrides the repository's commit author name.
	Author string
	// Writer is who writes the commit (TrailerWriter: one of the Writer
	// values); it is not carried over from the draft's head, nor taken
	// from Trailers.
	Writer string
	// CheckRemote makes a new draft only if the remote has no revision
	// of the package (draft, proposal, published revision or tag) that
	// this mirror has not fetched. The check reads the refs the remote
	// advertises to the push, so it costs no extra round trip. When it
	// fails, nothing is pushed, the mirror is fetched and the write fails
	// with a ConflictError, for the writer to decide again with what git
	// has (a draft to update or adopt instead).
	CheckRemote bool
	// Proposed writes onto the proposal of the workspace instead of its
	// draft (an update only: Expected is required). A proposal's Kptfile
	// takes the conditions set while it is proposed, so that publishing
	// records them.
	Proposed bool
}

// WriteDraft writes a draft as one commit on its branch. A new draft forks
// from the branch head; an update builds on the draft's head, which must
// still be Expected.
func (r *Repository) WriteDraft(ctx context.Context, w DraftWrite) (Revision, error) {
	if err := pkg.ValidatePackagePath(w.Package); err != nil {
		return Revision{}, err
	}
	if err := ValidateWorkspace(w.Workspace); err != nil {
		return Revision{}, err
	}
	if w.Contents == nil {
		return Revision{}, errors.New("draft contents are required")
	}
	if w.Proposed && w.Expected == "" {
		return Revision{}, errors.New("a write onto a proposal needs the commit it expects")
	}
	r.mu.Lock()
	q, trailers, err := r.prepareDraftLocked(w)
	r.mu.Unlock()
	if err != nil {
		return Revision{}, err
	}
	if err := r.pushQueued(ctx, q); err != nil {
		return Revision{}, err
	}
	lifecycle := porchv1alpha1.LifecycleDraft
	if w.Proposed {
		lifecycle = porchv1alpha1.LifecycleProposed
	}
	return Revision{Package: w.Package, Workspace: w.Workspace, Lifecycle: lifecycle, Commit: q.update.New.String(), Trailers: trailers}, nil
}

// prepareDraftLocked writes a draft's objects and commit and returns the
// ref update that publishes it, with its trailers.
func (r *Repository) prepareDraftLocked(w DraftWrite) (*queuedWrite, Trailers, error) {
	full := joinPath(r.opts.Directory, w.Package)
	ref := draftRef(full, w.Workspace)
	if w.Proposed {
		ref = proposedRef(full, w.Workspace)
	}
	current := r.ref(ref)
	var base plumbing.Hash
	if w.Expected == "" {
		if !current.IsZero() {
			return nil, nil, &ConflictError{Ref: ref.String(), Actual: current.String(), Detail: "the draft already exists"}
		}
		if err := r.checkWorkspaceFreeLocked(w.Package, w.Workspace); err != nil {
			return nil, nil, err
		}
		base = r.ref(r.branchRef())
	} else {
		base = plumbing.NewHash(w.Expected)
		if current != base {
			return nil, nil, &ConflictError{Ref: ref.String(), Expected: w.Expected, Actual: hashString(current)}
		}
	}
	sub, err := r.writePackageTree(w.Contents)
	if err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", w.Package, err)
	}
	var baseTree plumbing.Hash
	trailers := Trailers{}
	if !base.IsZero() {
		c, err := object.GetCommit(r.storer, base)
		if err != nil {
			return nil, nil, fmt.Errorf("reading commit %s: %w", short(base.String()), err)
		}
		baseTree = c.TreeHash
		if w.Expected != "" {
			// An update keeps the draft's trailers (the object and the
			// PackageVariant it belongs to) unless the writer sets them:
			// a person's push or a condition written into the Kptfile
			// must not take the draft away from its owner.
			for k, v := range parseTrailers(c.Message) {
				if k != TrailerWriter && (w.Proposed || k != TrailerProposedBy && k != TrailerProposedAt) {
					trailers[k] = v // a draft's edit is proposed again, by someone
				}
			}
		}
	}
	tree, err := r.replaceSubtree(baseTree, full, sub)
	if err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", w.Package, err)
	}
	for k, v := range w.Trailers {
		if k != TrailerWriter { // said by Writer only, of this commit
			trailers[k] = v
		}
	}
	trailers[TrailerPackage] = w.Package
	trailers[TrailerWorkspace] = w.Workspace
	if w.Writer != "" {
		trailers[TrailerWriter] = w.Writer
	}
	subject := w.Message
	if subject == "" {
		subject = fmt.Sprintf("Update draft %s/%s", w.Package, w.Workspace)
	}
	msg, err := formatMessage(subject, trailers)
	if err != nil {
		return nil, nil, err
	}
	commit, err := r.writeCommit(tree, []plumbing.Hash{base}, msg, r.signature(w.Author))
	if err != nil {
		return nil, nil, err
	}
	q := &queuedWrite{update: refUpdate{Name: ref, Old: current, New: commit}}
	if w.CheckRemote && w.Expected == "" {
		q.check = func(remote map[plumbing.ReferenceName]plumbing.Hash) error {
			return r.checkPackageRefsSeen(full, remote)
		}
	}
	return q, trailers, nil
}

// checkPackageRefsSeen fails with a ConflictError when the remote has a
// ref of package full (its path in the repository) that the mirror does
// not have at the same commit.
func (r *Repository) checkPackageRefsSeen(full string, remote map[plumbing.ReferenceName]plumbing.Hash) error {
	for name, h := range remote {
		for _, prefix := range []string{draftPrefix, proposedPrefix, deletionProposedPrefix, tagPrefix} {
			rest, ok := strings.CutPrefix(name.String(), prefix+full+"/")
			if !ok || strings.Contains(rest, "/") {
				continue // another package, or one nested in this one
			}
			if seen := r.ref(name); seen != h {
				return &ConflictError{Ref: name.String(), Expected: hashString(seen), Actual: h.String(),
					Detail: "the remote has a revision of " + full + " this mirror had not fetched"}
			}
		}
	}
	return nil
}

func (r *Repository) checkWorkspaceFreeLocked(p, ws string) error {
	revs, err := r.listLocked(p)
	if err != nil {
		return err
	}
	for _, rev := range revs {
		if rev.Workspace == ws {
			return fmt.Errorf("package %s already has a %s revision in workspace %q: %w", p, rev.Lifecycle, ws, &ConflictError{Ref: draftRef(joinPath(r.opts.Directory, p), ws).String(), Detail: "workspace in use"})
		}
	}
	for n, was := range r.retiredLocked(joinPath(r.opts.Directory, p)) {
		if was == ws {
			return &RetiredError{Package: p, Workspace: ws, Revision: n}
		}
	}
	return nil
}

// WorkspaceRetiredReason is the stall reason of a new draft in the
// workspace of a deleted published revision (RetiredError).
const WorkspaceRetiredReason = "WorkspaceRetired"

// RetiredError refuses a new draft in the workspace of a published
// revision that was deleted: a revision's name (repository.package.
// workspace) is never given to other content.
type RetiredError struct {
	Package, Workspace string
	// Revision is the deleted revision's number.
	Revision int
}

// Error says which revision had the workspace, and what to do.
func (e *RetiredError) Error() string {
	return fmt.Sprintf("package %s: workspace %q was published revision v%d, which was deleted; a revision's name is never used again for other content: choose another workspace", e.Package, e.Workspace, e.Revision)
}

// StallReason is WorkspaceRetiredReason: writing again cannot succeed.
func (e *RetiredError) StallReason() string { return WorkspaceRetiredReason }
