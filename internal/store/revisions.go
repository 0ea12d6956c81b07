package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
)

// Revision is one package revision found in a repository.
type Revision struct {
	// Package is the package path relative to the repository directory.
	Package string
	// Workspace names the revision; for published revisions written by
	// Scion it is the workspace they were drafted in, otherwise v<N>.
	Workspace string
	// Revision is the published revision number, 0 before publishing.
	Revision int
	// Lifecycle is the stage the refs encode.
	Lifecycle porchv1alpha1.Lifecycle
	// Commit holds the revision's content.
	Commit string
	// Latest marks the highest published revision of the package.
	Latest bool
	// Trailers of the revision's commit.
	Trailers Trailers
	// PublishedBy and PublishedAt come from the revision tag.
	PublishedBy string
	PublishedAt time.Time
}

// revisionMeta is what List reads from objects, cached by ref value.
type revisionMeta struct {
	commit      plumbing.Hash
	trailers    Trailers
	publishedBy string
	publishedAt time.Time
}

// Head returns the commit at the tip of the branch ("" when missing).
func (r *Repository) Head() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.ref(r.branchRef())
	return hashString(h)
}

// List returns every package revision of the repository (under its
// directory), sorted by package, then revision, then workspace. It reads
// the local mirror: call Fetch first to see changes made by others.
func (r *Repository) List(ctx context.Context) ([]Revision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listLocked("")
}

// ListPackage returns the revisions of one package (path relative to the
// repository directory).
func (r *Repository) ListPackage(ctx context.Context, pkgPath string) ([]Revision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listLocked(pkgPath)
}

// listLocked lists the revisions of one package (relative path), or of all
// packages when only is empty.
func (r *Repository) listLocked(only string) ([]Revision, error) {
	var (
		out       []Revision
		published = map[string]map[int]plumbing.Hash{} // package -> revision -> tag value
		deletion  = map[string]map[int]bool{}
	)
	err := r.iterRefs(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		name := ref.Name().String()
		switch {
		case strings.HasPrefix(name, draftPrefix), strings.HasPrefix(name, proposedPrefix):
			lc, rest := porchv1alpha1.LifecycleDraft, strings.TrimPrefix(name, draftPrefix)
			if strings.HasPrefix(name, proposedPrefix) {
				lc, rest = porchv1alpha1.LifecycleProposed, strings.TrimPrefix(name, proposedPrefix)
			}
			full, ws, ok := splitLast(rest)
			if !ok {
				return nil
			}
			p, ok := r.relPackage(full)
			if !ok || (only != "" && p != only) {
				return nil
			}
			meta, err := r.draftMetaFor(ref.Hash(), p, ws)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, Revision{Package: p, Workspace: ws, Lifecycle: lc, Commit: meta.commit.String(), Trailers: meta.trailers})
		case strings.HasPrefix(name, tagPrefix), strings.HasPrefix(name, deletionProposedPrefix):
			isTag := strings.HasPrefix(name, tagPrefix)
			rest := strings.TrimPrefix(strings.TrimPrefix(name, tagPrefix), deletionProposedPrefix)
			full, last, ok := splitLast(rest)
			if !ok {
				return nil
			}
			n, ok := parseRevisionSuffix(last)
			if !ok {
				return nil // a floating tag
			}
			p, ok := r.relPackage(full)
			if !ok || (only != "" && p != only) {
				return nil
			}
			if isTag {
				if published[p] == nil {
					published[p] = map[int]plumbing.Hash{}
				}
				published[p][n] = ref.Hash()
			} else {
				if deletion[p] == nil {
					deletion[p] = map[int]bool{}
				}
				deletion[p][n] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.URL(), err)
	}
	for p, revs := range published {
		latest := 0
		for n := range revs {
			latest = max(latest, n)
		}
		for n, tag := range revs {
			meta, err := r.metaFor(tag)
			if err != nil {
				return nil, fmt.Errorf("revision %s/v%d: %w", p, n, err)
			}
			ws := meta.trailers[TrailerWorkspace]
			if ws == "" || meta.trailers[TrailerRevision] != strconv.Itoa(n) {
				ws = "v" + strconv.Itoa(n)
			}
			lc := porchv1alpha1.LifecyclePublished
			if deletion[p][n] {
				lc = porchv1alpha1.LifecycleDeletionProposed
			}
			out = append(out, Revision{
				Package: p, Workspace: ws, Revision: n, Lifecycle: lc, Commit: meta.commit.String(),
				Latest: n == latest, Trailers: meta.trailers, PublishedBy: meta.publishedBy, PublishedAt: meta.publishedAt,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if a.Workspace != b.Workspace {
			return a.Workspace < b.Workspace
		}
		return a.Lifecycle < b.Lifecycle
	})
	return out, nil
}

// metaFor reads (once) the commit, trailers and tagger behind a ref value.
func (r *Repository) metaFor(h plumbing.Hash) (revisionMeta, error) {
	if m, ok := r.meta[h]; ok {
		return m, nil
	}
	commit, tag, err := r.peel(h)
	if err != nil {
		return revisionMeta{}, err
	}
	c, err := object.GetCommit(r.storer, commit)
	if err != nil {
		return revisionMeta{}, fmt.Errorf("reading commit %s: %w", short(commit.String()), err)
	}
	m := revisionMeta{commit: commit, trailers: parseTrailers(c.Message)}
	if tag != nil {
		m.publishedBy = formatPerson(tag.Tagger)
		m.publishedAt = tag.Tagger.When.UTC()
	}
	if len(r.meta) >= maxCached {
		clear(r.meta) // bounded: refilled from git as revisions are read
	}
	r.meta[h] = m
	return m, nil
}

// maxCached bounds each cache of commit facts a Repository keeps (commits
// never change, so a cache is only ever dropped, never invalidated).
const maxCached = 20000

// inheritDepth bounds how far back a draft's history is read for the
// trailers of its last commit written through Scion.
const inheritDepth = 100

// draftMetaFor is metaFor of a draft's or proposal's head, whose trailers
// (the object and the variant the draft belongs to) are those of the last
// commit on the branch written through Scion: a commit someone pushed with
// plain git carries no trailers, and must not take the draft away from
// its owner. Only trailers of this draft (package p, workspace ws) count.
func (r *Repository) draftMetaFor(h plumbing.Hash, p, ws string) (revisionMeta, error) {
	key := draftKey{h, p, ws}
	if m, ok := r.draftMeta[key]; ok {
		return m, nil
	}
	m, err := r.metaFor(h)
	if err != nil {
		return revisionMeta{}, err
	}
	if _, ok := m.trailers[TrailerPackage]; !ok {
		c := m.commit
		for range inheritDepth {
			commit, err := object.GetCommit(r.storer, c)
			if err != nil || len(commit.ParentHashes) == 0 {
				break
			}
			c = commit.ParentHashes[0]
			parent, err := object.GetCommit(r.storer, c)
			if err != nil {
				break
			}
			if t := parseTrailers(parent.Message); t[TrailerPackage] != "" {
				if t[TrailerPackage] == p && t[TrailerWorkspace] == ws {
					m.trailers = t
				}
				break
			}
		}
	}
	if r.draftMeta == nil || len(r.draftMeta) >= maxCached {
		r.draftMeta = map[draftKey]revisionMeta{} // bounded, as meta
	}
	r.draftMeta[key] = m
	return m, nil
}

// draftKey identifies a draft head: its commit, package and workspace.
type draftKey struct {
	commit  plumbing.Hash
	pkg, ws string
}

func formatPerson(s object.Signature) string {
	if s.Email == "" || s.Email == "scion@localhost" {
		return s.Name
	}
	return s.Name + " <" + s.Email + ">"
}

// relPackage maps a full package path to the path relative to the
// repository directory, or false when it lies outside it.
func (r *Repository) relPackage(full string) (string, bool) {
	if r.opts.Directory == "" {
		return full, true
	}
	rel, ok := strings.CutPrefix(full, r.opts.Directory+"/")
	return rel, ok && rel != ""
}

// Get finds one revision: by workspace (revision 0) or by revision number.
func (r *Repository) Get(ctx context.Context, pkgPath, workspace string, revision int) (Revision, error) {
	r.mu.Lock()
	revs, err := r.listLocked(pkgPath)
	r.mu.Unlock()
	if err != nil {
		return Revision{}, err
	}
	for _, rev := range revs {
		if rev.Package != pkgPath {
			continue
		}
		if (revision > 0 && rev.Revision == revision) || (revision == 0 && rev.Workspace == workspace) {
			return rev, nil
		}
	}
	what := "workspace " + workspace
	if revision > 0 {
		what = "revision v" + strconv.Itoa(revision)
	}
	return Revision{}, fmt.Errorf("package %s %s in %s: %w", pkgPath, what, r.URL(), ErrNotFound)
}

// Read returns the files of a revision.
func (r *Repository) Read(ctx context.Context, rev Revision) (*pkg.Package, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tree, err := r.subtree(plumbing.NewHash(rev.Commit), joinPath(r.opts.Directory, rev.Package))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rev.Package, err)
	}
	return r.readTreeFiles(tree)
}

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
				trailers[k] = v
			}
		}
	}
	tree, err := r.replaceSubtree(baseTree, full, sub)
	if err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", w.Package, err)
	}
	for k, v := range w.Trailers {
		trailers[k] = v
	}
	trailers[TrailerPackage] = w.Package
	trailers[TrailerWorkspace] = w.Workspace
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
	return nil
}

// Propose moves a draft to Proposed. expected is the draft commit the
// caller read ("" accepts the current one).
func (r *Repository) Propose(ctx context.Context, p, ws, expected string) (Revision, error) {
	return r.moveBranch(ctx, p, ws, expected, porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed)
}

// RejectProposal moves a proposed revision back to Draft.
func (r *Repository) RejectProposal(ctx context.Context, p, ws, expected string) (Revision, error) {
	return r.moveBranch(ctx, p, ws, expected, porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecycleDraft)
}

func (r *Repository) moveBranch(ctx context.Context, p, ws, expected string, from, to porchv1alpha1.Lifecycle) (_ Revision, err error) {
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
	if err := r.push(ctx, []refUpdate{{Name: dst, New: head}, {Name: src, Old: head}}); err != nil {
		return Revision{}, err
	}
	meta, err := r.metaFor(head)
	if err != nil {
		return Revision{}, err
	}
	return Revision{Package: p, Workspace: ws, Lifecycle: to, Commit: head.String(), Trailers: meta.trailers}, nil
}

// publishAttempts bounds the retries of a publish that lost a race with
// another publish on the same branch.
const publishAttempts = 8

// Publish publishes a proposed revision: a commit on the branch that
// merges the proposal (so the branch history keeps the draft's commits),
// the annotated tag <pkg>/v<N> with the next revision number, and the
// removal of the proposed branch, in one atomic push. When another publish
// wins the race for the branch or the number, Publish re-reads and retries.
func (r *Repository) Publish(ctx context.Context, p, ws, expected, publishedBy string) (_ Revision, err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return Revision{}, err
	}
	defer func() { unlock(err) }()
	full := joinPath(r.opts.Directory, p)
	src := proposedRef(full, ws)
	var lastErr error
	for attempt := 0; attempt < publishAttempts; attempt++ {
		if attempt > 0 {
			if err := r.fetchLocked(ctx); err != nil {
				return Revision{}, err
			}
		}
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
		rev, err := r.publishOnce(ctx, p, ws, full, src, head, publishedBy)
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

func (r *Repository) publishOnce(ctx context.Context, p, ws, full string, src plumbing.ReferenceName, head plumbing.Hash, publishedBy string) (Revision, error) {
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

func (r *Repository) nextRevisionLocked(full string) (int, error) {
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
	return highest + 1, err
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
func (r *Repository) Delete(ctx context.Context, rev Revision) (err error) {
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
		return r.deletePublishedLocked(ctx, rev, full)
	default:
		return fmt.Errorf("cannot delete a revision with lifecycle %q", rev.Lifecycle)
	}
}

func (r *Repository) deletePublishedLocked(ctx context.Context, rev Revision, full string) error {
	tagRef := revisionTagRef(full, rev.Revision)
	tag := r.ref(tagRef)
	if tag.IsZero() {
		return fmt.Errorf("package %s revision v%d: %w", rev.Package, rev.Revision, ErrNotFound)
	}
	updates := []refUpdate{{Name: tagRef, Old: tag}}
	if dp := r.ref(deletionProposedRef(full, rev.Revision)); !dp.IsZero() {
		updates = append(updates, refUpdate{Name: deletionProposedRef(full, rev.Revision), Old: dp})
	}
	next, err := r.nextRevisionLocked(full)
	if err != nil {
		return err
	}
	if rev.Revision == next-1 {
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
				msg, err := formatMessage(fmt.Sprintf("Delete %s v%d", rev.Package, rev.Revision), Trailers{TrailerPackage: rev.Package, TrailerRevision: strconv.Itoa(rev.Revision)})
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

// ReadFile returns one file of a revision (such as its Kptfile), without
// reading the rest of the package.
func (r *Repository) ReadFile(ctx context.Context, rev Revision, name string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := object.GetCommit(r.storer, plumbing.NewHash(rev.Commit))
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", short(rev.Commit), err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, err
	}
	f, err := t.File(joinPath(r.opts.Directory, rev.Package) + "/" + name)
	if err != nil {
		if errors.Is(err, object.ErrFileNotFound) {
			return nil, fmt.Errorf("%s of %s: %w", name, rev.Package, ErrNotFound)
		}
		return nil, err
	}
	s, err := f.Contents()
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// Commit describes one commit of a draft's history.
type Commit struct {
	Hash     string
	Author   string
	Subject  string
	Trailers Trailers
	// When the commit was made.
	When time.Time
}

// String is "<short hash> <author>: <subject>".
func (c Commit) String() string { return short(c.Hash) + " " + c.Author + ": " + c.Subject }

// DraftHistory returns the commits of a draft or proposal since it forked
// from the branch, newest first (first parents, at most inheritDepth).
func (r *Repository) DraftHistory(ctx context.Context, rev Revision) ([]Commit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	commits, _, err := r.draftHistoryLocked(rev)
	return commits, err
}

// DraftFork returns the branch commit a draft or proposal started from
// ("" when it is not found within inheritDepth commits).
func (r *Repository) DraftFork(ctx context.Context, rev Revision) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, fork, err := r.draftHistoryLocked(rev)
	return hashString(fork), err
}

// draftHistoryLocked walks a draft's first parents back to the branch:
// its own commits, and the branch commit it forked from.
func (r *Repository) draftHistoryLocked(rev Revision) ([]Commit, plumbing.Hash, error) {
	onBranch := map[plumbing.Hash]bool{}
	for h, i := r.ref(r.branchRef()), 0; !h.IsZero() && i < 10*inheritDepth; i++ {
		onBranch[h] = true
		c, err := object.GetCommit(r.storer, h)
		if err != nil || len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	var out []Commit
	for h := plumbing.NewHash(rev.Commit); !h.IsZero() && len(out) < inheritDepth; {
		if onBranch[h] {
			return out, h, nil
		}
		c, err := object.GetCommit(r.storer, h)
		if err != nil {
			return out, plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", short(h.String()), err)
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		out = append(out, Commit{Hash: h.String(), Author: c.Author.Name, Subject: subject, Trailers: parseTrailers(c.Message), When: c.Committer.When})
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return out, plumbing.ZeroHash, nil
}

// SamePackage says whether a package has the same content (the same git
// tree) in two commits; absent from both counts as the same. Comparing
// tree hashes reads no file.
func (r *Repository) SamePackage(ctx context.Context, p, a, b string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := joinPath(r.opts.Directory, p)
	ta, err := r.subtree(plumbing.NewHash(a), full)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	tb, err := r.subtree(plumbing.NewHash(b), full)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	return ta == tb, nil
}
