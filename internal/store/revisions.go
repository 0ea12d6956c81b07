package store

import (
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

// Proposal records who proposed a revision and when; the zero Proposal
// records nothing.
type Proposal struct {
	By string
	At time.Time
}

// Proposed is the record of the revision's proposal git holds (its
// proposing commit's trailers, kept by its publication): the zero
// Proposal for a draft, or a revision proposed without a record.
func (r Revision) Proposed() Proposal {
	if r.Lifecycle == porchv1alpha1.LifecycleDraft || r.Trailers[TrailerProposedBy] == "" {
		return Proposal{}
	}
	at, _ := time.Parse(time.RFC3339, r.Trailers[TrailerProposedAt])
	return Proposal{By: r.Trailers[TrailerProposedBy], At: at}
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
	SortRevisions(out)
	return out, nil
}

// SortRevisions puts revisions in the order every store lists them: by
// package, revision number, workspace, lifecycle.
func SortRevisions(revs []Revision) {
	sort.Slice(revs, func(i, j int) bool {
		a, b := revs[i], revs[j]
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
}

// metaFor reads (once) the commit, trailers and tagger behind a ref value.
func (r *Repository) metaFor(h plumbing.Hash) (revisionMeta, error) {
	if m, ok := r.meta[h]; ok {
		return m, nil
	}
	m, err := r.readMeta(h)
	if err != nil {
		return revisionMeta{}, err
	}
	if len(r.meta) >= maxCached {
		clear(r.meta) // bounded: refilled from git as revisions are read
	}
	r.meta[h] = m
	return m, nil
}

// readMeta reads the facts of the commit h is or peels to, uncached.
func (r *Repository) readMeta(h plumbing.Hash) (revisionMeta, error) {
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
//
// It is kept for the draft's current head only (not in meta, by hash):
// a draft's head moves with every write, and facts kept per head piled
// up for every commit a draft ever had.
func (r *Repository) draftMetaFor(h plumbing.Hash, p, ws string) (revisionMeta, error) {
	key := draftKey{p, ws}
	if m, ok := r.draftMeta[key]; ok && m.head == h {
		return m.revisionMeta, nil
	}
	m, err := r.readMeta(h)
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
		r.draftMeta = map[draftKey]draftMeta{} // bounded, as meta
	}
	r.draftMeta[key] = draftMeta{head: h, revisionMeta: m}
	return m, nil
}

// draftKey identifies a draft (or proposal): its package and workspace.
type draftKey struct {
	pkg, ws string
}

// draftMeta is the revisionMeta of a draft's head.
type draftMeta struct {
	head plumbing.Hash
	revisionMeta
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
	return r.readTreeFiles(tree, rev.Package)
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
	if limit := r.opts.Limits.orDefaults().FileBytes; f.Size > limit {
		return nil, &LimitError{What: fmt.Sprintf("file %s of package %s (%s)", name, rev.Package, Quantity(f.Size)), Limit: "max-file-size", Value: limit}
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
