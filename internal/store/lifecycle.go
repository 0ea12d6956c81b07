package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// Propose moves a draft to Proposed. expected is the draft commit the
// caller read ("" accepts the current one).
func (r *Repository) Propose(ctx context.Context, p, ws, expected string, record Proposal) (Revision, error) {
	return r.moveBranch(ctx, p, ws, expected, porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed, record)
}

// RejectProposal moves a proposed revision back to Draft.
func (r *Repository) RejectProposal(ctx context.Context, p, ws, expected string) (Revision, error) {
	return r.moveBranch(ctx, p, ws, expected, porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecycleDraft, Proposal{})
}

// moveBranch moves a workspace's head from one lifecycle's branch to the
// other's in one push. A proposal with a record (who, when) is a commit
// of its own on the draft's head, the same files, that says so.
func (r *Repository) moveBranch(ctx context.Context, p, ws, expected string, from, to porchv1alpha1.Lifecycle, record Proposal) (_ Revision, err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return Revision{}, err
	}
	defer func() { unlock(err) }()
	full := joinPath(r.opts.Directory, p)
	refs := map[porchv1alpha1.Lifecycle]plumbing.ReferenceName{
		porchv1alpha1.LifecycleDraft:    draftRef(full, ws),
		porchv1alpha1.LifecycleProposed: proposedRef(full, ws),
	}
	src, dst := refs[from], refs[to]
	head := r.ref(src)
	if head.IsZero() {
		return Revision{}, fmt.Errorf("package %s workspace %s is not %s: %w", p, ws, from, ErrNotFound)
	}
	if expected != "" && head.String() != expected {
		return Revision{}, &ConflictError{Ref: src.String(), Expected: expected, Actual: head.String()}
	}
	meta, err := r.draftMetaFor(head, p, ws)
	if err != nil {
		return Revision{}, err
	}
	moved := head
	if record.By != "" {
		if moved, meta, err = r.proposalCommit(head, p, ws, meta, record); err != nil {
			return Revision{}, err
		}
	}
	if err := r.push(ctx, []refUpdate{{Name: dst, New: moved}, {Name: src, Old: head}}); err != nil {
		return Revision{}, err
	}
	return Revision{Package: p, Workspace: ws, Lifecycle: to, Commit: moved.String(), Trailers: meta.trailers}, nil
}

// proposalCommit writes the commit that proposes head: its files, the
// draft's trailers and the record, authored by the proposer at the time
// of the proposal.
func (r *Repository) proposalCommit(head plumbing.Hash, p, ws string, meta revisionMeta, record Proposal) (plumbing.Hash, revisionMeta, error) {
	c, err := object.GetCommit(r.storer, head)
	if err != nil {
		return plumbing.ZeroHash, meta, fmt.Errorf("reading commit %s: %w", short(head.String()), err)
	}
	trailers := Trailers{}
	for k, v := range meta.trailers {
		trailers[k] = v
	}
	trailers[TrailerPackage], trailers[TrailerWorkspace] = p, ws
	trailers[TrailerProposedBy] = record.By
	trailers[TrailerProposedAt] = record.At.UTC().Format(time.RFC3339)
	trailers[TrailerWriter] = WriterPackageRevision
	msg, err := formatMessage(fmt.Sprintf("Propose %s/%s", p, ws), trailers)
	if err != nil {
		return plumbing.ZeroHash, meta, err
	}
	author := r.signature(record.By)
	if !record.At.IsZero() {
		author.When = record.At.UTC().Truncate(time.Second)
	}
	commit, err := r.writeCommit(c.TreeHash, []plumbing.Hash{head}, msg, author)
	if err != nil {
		return plumbing.ZeroHash, meta, err
	}
	return commit, revisionMeta{commit: commit, trailers: trailers}, nil
}

// publishAttempts bounds the retries of a publish that lost a race with
// another publish on the same branch.
const publishAttempts = 8

// Publish publishes a proposed revision: a commit on the branch that
// merges the proposal (so the branch history keeps the draft's commits),
// the annotated tag <pkg>/v<N> with the next revision number, and the
// removal of the proposed branch, in one atomic push. When another publish
// wins the race for the branch or the number, Publish re-reads and retries.
func (r *Repository) Publish(ctx context.Context, p, ws, expected, publishedBy, writer string) (_ Revision, err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return Revision{}, err
	}
	defer func() { unlock(err) }()
	full := joinPath(r.opts.Directory, p)
	src := proposedRef(full, ws)
	var lastErr error
	for attempt := 0; attempt < publishAttempts; attempt++ {
		// A lost race has fetched already (afterConflict): each attempt
		// reads what git has.
		head := r.ref(src)
		if head.IsZero() {
			return Revision{}, fmt.Errorf("package %s workspace %s is not Proposed: %w", p, ws, ErrNotFound)
		}
		if expected == "" {
			expected = head.String() // later attempts publish what was read first
		}
		if head.String() != expected {
			return Revision{}, &ConflictError{Ref: src.String(), Expected: expected, Actual: head.String()}
		}
		rev, err := r.publishOnce(ctx, p, ws, full, src, head, publishedBy, writer)
		if errors.Is(err, ErrConflict) {
			// Another publish moved the branch or took the number: re-read;
			// the next attempt fails if the proposal itself changed.
			lastErr = err
			continue
		}
		return rev, err
	}
	return Revision{}, fmt.Errorf("publishing %s/%s: gave up after %d races: %w", p, ws, publishAttempts, lastErr)
}

func (r *Repository) publishOnce(ctx context.Context, p, ws, full string, src plumbing.ReferenceName, head plumbing.Hash, publishedBy, writer string) (Revision, error) {
	branchHead := r.ref(r.branchRef())
	next, err := r.nextRevisionLocked(full)
	if err != nil {
		return Revision{}, err
	}
	sub, err := r.subtree(head, full)
	if err != nil {
		return Revision{}, err
	}
	var baseTree plumbing.Hash
	if !branchHead.IsZero() {
		c, err := object.GetCommit(r.storer, branchHead)
		if err != nil {
			return Revision{}, err
		}
		baseTree = c.TreeHash
	}
	tree, err := r.replaceSubtree(baseTree, full, sub)
	if err != nil {
		return Revision{}, err
	}
	proposal, err := object.GetCommit(r.storer, head)
	if err != nil {
		return Revision{}, err
	}
	trailers := parseTrailers(proposal.Message)
	if trailers == nil {
		trailers = Trailers{}
	}
	trailers[TrailerPackage] = p
	trailers[TrailerWorkspace] = ws
	trailers[TrailerRevision] = strconv.Itoa(next)
	delete(trailers, TrailerWriter)
	delete(trailers, TrailerApprovedBy)
	if writer != "" {
		trailers[TrailerWriter] = writer
	}
	if publishedBy != "" {
		trailers[TrailerApprovedBy] = publishedBy
	}
	msg, err := formatMessage(fmt.Sprintf("Publish %s v%d", p, next), trailers)
	if err != nil {
		return Revision{}, err
	}
	sig := r.signature("")
	commit, err := r.writeCommit(tree, []plumbing.Hash{branchHead, head}, msg, sig)
	if err != nil {
		return Revision{}, err
	}
	tagger := sig
	if publishedBy != "" {
		tagger.Name = publishedBy
	}
	tagName := strings.TrimPrefix(revisionTagRef(full, next).String(), tagPrefix)
	tag, err := r.writeTag(tagName, commit, tagger, fmt.Sprintf("%s v%d, published by %s\n", p, next, tagger.Name))
	if err != nil {
		return Revision{}, err
	}
	err = r.push(ctx, []refUpdate{
		{Name: r.branchRef(), Old: branchHead, New: commit},
		{Name: revisionTagRef(full, next), New: tag},
		{Name: src, Old: head},
	})
	if err != nil {
		return Revision{}, err
	}
	return Revision{
		Package: p, Workspace: ws, Revision: next, Lifecycle: porchv1alpha1.LifecyclePublished, Commit: commit.String(),
		Latest: true, Trailers: trailers, PublishedBy: formatPerson(tagger), PublishedAt: tagger.When,
	}, nil
}

// nextRevisionLocked is the number the package's next publication
// takes: above every published revision, and every deleted one (a
// revision's number is never given to other content).
func (r *Repository) nextRevisionLocked(full string) (int, error) {
	highest, err := r.newestRevisionLocked(full)
	for n := range r.retiredLocked(full) {
		highest = max(highest, n)
	}
	return highest + 1, err
}

// newestRevisionLocked is the package's newest published revision in
// git (0: none).
func (r *Repository) newestRevisionLocked(full string) (int, error) {
	highest := 0
	prefix := tagPrefix + full + "/"
	err := r.iterRefs(func(ref *plumbing.Reference) error {
		if rest, ok := strings.CutPrefix(ref.Name().String(), prefix); ok {
			if n, ok := parseRevisionSuffix(rest); ok {
				highest = max(highest, n)
			}
		}
		return nil
	})
	return highest, err
}

// ProposeDeletion marks a published revision DeletionProposed.
func (r *Repository) ProposeDeletion(ctx context.Context, p string, revision int) (_ Revision, err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return Revision{}, err
	}
	defer func() { unlock(err) }()
	full := joinPath(r.opts.Directory, p)
	commit, err := r.publishedCommitLocked(p, revision)
	if err != nil {
		return Revision{}, err
	}
	ref := deletionProposedRef(full, revision)
	current := r.ref(ref)
	if current.IsZero() {
		if err := r.push(ctx, []refUpdate{{Name: ref, New: commit}}); err != nil {
			return Revision{}, err
		}
	}
	return r.findLocked(p, revision)
}

// RejectDeletion moves a DeletionProposed revision back to Published.
func (r *Repository) RejectDeletion(ctx context.Context, p string, revision int) (_ Revision, err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return Revision{}, err
	}
	defer func() { unlock(err) }()
	ref := deletionProposedRef(joinPath(r.opts.Directory, p), revision)
	current := r.ref(ref)
	if !current.IsZero() {
		if err := r.push(ctx, []refUpdate{{Name: ref, Old: current}}); err != nil {
			return Revision{}, err
		}
	}
	return r.findLocked(p, revision)
}

func (r *Repository) findLocked(p string, revision int) (Revision, error) {
	revs, err := r.listLocked(p)
	if err != nil {
		return Revision{}, err
	}
	for _, rev := range revs {
		if rev.Package == p && rev.Revision == revision {
			return rev, nil
		}
	}
	return Revision{}, fmt.Errorf("package %s revision v%d: %w", p, revision, ErrNotFound)
}

// Delete removes a revision from git. A draft or proposed revision loses its
// branch (rev.Commit must still be its head). A published revision loses its
// tag and deletion-proposed branch; deleting the latest published revision
// also removes the package folder from the branch, so a deployment
// repository stops deploying it. All in one atomic push.
func (r *Repository) Delete(ctx context.Context, rev Revision, writer string) (err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return err
	}
	defer func() { unlock(err) }()
	full := joinPath(r.opts.Directory, rev.Package)
	switch rev.Lifecycle {
	case porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed:
		ref := draftRef(full, rev.Workspace)
		if rev.Lifecycle == porchv1alpha1.LifecycleProposed {
			ref = proposedRef(full, rev.Workspace)
		}
		current := r.ref(ref)
		if current.IsZero() {
			return fmt.Errorf("package %s workspace %s is not %s: %w", rev.Package, rev.Workspace, rev.Lifecycle, ErrNotFound)
		}
		if rev.Commit != "" && current.String() != rev.Commit {
			return &ConflictError{Ref: ref.String(), Expected: rev.Commit, Actual: current.String()}
		}
		return r.push(ctx, []refUpdate{{Name: ref, Old: current}})
	case porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDeletionProposed:
		return r.deletePublishedLocked(ctx, rev, full, writer)
	default:
		return fmt.Errorf("cannot delete a revision with lifecycle %q", rev.Lifecycle)
	}
}

func (r *Repository) deletePublishedLocked(ctx context.Context, rev Revision, full, writer string) error {
	tagRef := revisionTagRef(full, rev.Revision)
	tag := r.ref(tagRef)
	if tag.IsZero() {
		return fmt.Errorf("package %s revision v%d: %w", rev.Package, rev.Revision, ErrNotFound)
	}
	updates := []refUpdate{{Name: tagRef, Old: tag}}
	if dp := r.ref(deletionProposedRef(full, rev.Revision)); !dp.IsZero() {
		updates = append(updates, refUpdate{Name: deletionProposedRef(full, rev.Revision), Old: dp})
	}
	// The revision's name is retired with it, in the same push.
	if err := r.ensureEmptyTree(); err != nil {
		return err
	}
	msg, err := formatMessage(fmt.Sprintf("Retire %s v%d", rev.Package, rev.Revision), deleteTrailers(rev, writer))
	if err != nil {
		return err
	}
	retired, err := r.writeCommit(emptyTreeHash, nil, msg, r.signature(""))
	if err != nil {
		return err
	}
	updates = append(updates, refUpdate{Name: retiredRef(full, rev.Revision, rev.Workspace), New: retired})
	newest, err := r.newestRevisionLocked(full)
	if err != nil {
		return err
	}
	if rev.Revision == newest {
		branchHead := r.ref(r.branchRef())
		if !branchHead.IsZero() {
			c, err := object.GetCommit(r.storer, branchHead)
			if err != nil {
				return err
			}
			tree, err := r.replaceSubtree(c.TreeHash, full, plumbing.ZeroHash)
			if err != nil {
				return err
			}
			if tree != c.TreeHash {
				msg, err := formatMessage(fmt.Sprintf("Delete %s v%d", rev.Package, rev.Revision), deleteTrailers(rev, writer))
				if err != nil {
					return err
				}
				commit, err := r.writeCommit(tree, []plumbing.Hash{branchHead}, msg, r.signature(""))
				if err != nil {
					return err
				}
				updates = append(updates, refUpdate{Name: r.branchRef(), Old: branchHead, New: commit})
			}
		}
	}
	return r.push(ctx, updates)
}

// deleteTrailers are the trailers of the commits removing a package's
// files from the branch and retiring a deleted revision's name.
func deleteTrailers(rev Revision, writer string) Trailers {
	t := Trailers{TrailerPackage: rev.Package, TrailerRevision: strconv.Itoa(rev.Revision)}
	if rev.Workspace != "" {
		t[TrailerWorkspace] = rev.Workspace
	}
	if writer != "" {
		t[TrailerWriter] = writer
	}
	return t
}
