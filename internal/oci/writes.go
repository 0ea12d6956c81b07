package oci

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// This file is a Store's writes. Registries have no compare-and-swap on
// tags: a write reads a tag, compares it with the digest the writer read,
// puts the manifest, then reads the tag again (docs/oci-layout.md).

// txn is one write to a package: its exchanges with the registry, and
// what they did to the package's tags, applied to what the store knows
// when the write succeeds, so that a write is not followed by a read of
// every tag of the package. A write that failed, or that found a tag
// other than the store knew, reads the package's tags again instead.
type txn struct {
	s     *Store
	ctx   context.Context
	p     string
	opts  []remote.Option
	known *pkgState // what the store knew of the package when the write began
	state *pkgState // the package as the write leaves it
	stale bool      // the registry had a tag other than the store knew
}

// write runs one write of package p: under the process's write lock,
// through the gate.
func (s *Store) write(ctx context.Context, p, what string, fn func(tx *txn) error) error {
	if err := pkg.ValidPath(p); err != nil {
		return fmt.Errorf("package %q: %w", p, err)
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	s.mu.Lock()
	known := s.pkgs[p]
	s.mu.Unlock()
	tx := &txn{s: s, ctx: ctx, p: p, known: known, state: known.clone()}
	err := s.exchange(ctx, what+" "+p+" in", func(ctx context.Context, opts []remote.Option) error {
		tx.ctx, tx.opts = ctx, opts
		return fn(tx)
	})
	if known == nil && err == nil {
		// A new package: the process's shared catalog read may not list
		// it.
		s.opts.Catalogs.added(s.catalogKey(), s.repository(p).RepositoryStr())
	}
	if err == nil && !tx.stale {
		s.mu.Lock()
		s.setPackageLocked(p, tx.state)
		s.written[p] = true
		s.mu.Unlock()
		return nil
	}
	// The next reader sees the outcome, whatever it was.
	if rerr := s.refreshPackage(ctx, p); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// readTags reads the package's tags now: the write goes on from them.
func (tx *txn) readTags() (*pkgState, error) {
	ps, err := tx.s.readTags(tx.ctx, tx.p, tx.opts, map[string]string{}, false)
	if err != nil {
		return nil, err
	}
	tx.state = ps.clone()
	return ps, nil
}

// current reads the digest a tag holds now ("" when absent).
func (tx *txn) current(tag string) (string, error) {
	got, err := tx.s.current(tx.p, tag, tx.opts)
	if err == nil && got != tx.state.tags[tag] {
		tx.stale = true
	}
	return got, err
}

// expect fails with a ConflictError unless the tag holds want.
func (tx *txn) expect(tag, want string) error {
	got, err := tx.current(tag)
	if err != nil {
		return err
	}
	if got != want {
		return &store.ConflictError{Ref: tx.s.Image(tx.p) + ":" + tag, Expected: want, Actual: got}
	}
	return nil
}

// held reads the digest at tag, which must be there and, unless expected
// is "" (whatever is there), be expected: what a lifecycle move starts
// from. what names the stage in the not-found error.
func (tx *txn) held(tag, expected, what string) (string, error) {
	got, err := tx.current(tag)
	switch {
	case err != nil:
		return "", err
	case got == "":
		return "", fmt.Errorf("package %s %s in %s: %w", tx.p, what, tx.s.URL(), store.ErrNotFound)
	case expected != "" && got != expected:
		return "", &store.ConflictError{Ref: tx.s.Image(tx.p) + ":" + tag, Expected: expected, Actual: got}
	}
	return got, nil
}

// published reads the digest of the published revision vN, which must
// be there.
func (tx *txn) published(revision int) (string, error) {
	d, err := tx.current(revisionTagName(revision))
	if err == nil && d == "" {
		err = fmt.Errorf("package %s revision v%d in %s: %w", tx.p, revision, tx.s.URL(), store.ErrNotFound)
	}
	return d, err
}

// manifest returns a manifest of the package by digest.
func (tx *txn) manifest(digest string) (*manifest, error) {
	return tx.s.manifestFor(tx.ctx, tx.p, digest, tx.opts, tx.state)
}

// put uploads an artifact's blobs (once) and puts its manifest at tag,
// then reads the tag back: another writer's put in between is a conflict.
func (tx *txn) put(tag string, a *artifact) error {
	ref, err := tx.s.reference(tx.p, ":"+tag)
	if err != nil {
		return err
	}
	if err := tx.s.uploader.push(tx.ctx, ref, a); err != nil {
		return err
	}
	got, err := tx.s.current(tx.p, tag, tx.opts)
	if err != nil {
		return err
	}
	if got != a.digest {
		return &store.ConflictError{Ref: tx.s.Image(tx.p) + ":" + tag, Expected: a.digest, Actual: got}
	}
	m := &manifest{raw: a.manifest, digest: a.digest, m: a.parsed}
	tx.state.set(tag, m)
	tx.s.layers.Add(a.digest, m.layer(), 0)
	if a.layer != nil {
		tx.s.keepLayer(tx.p, m.layer(), a.layer)
	}
	return nil
}

// tag puts a manifest the registry has under another tag (its bytes only:
// no blob moves).
func (tx *txn) tag(tag string, m *manifest) error {
	ref, err := tx.s.reference(tx.p, ":"+tag)
	if err != nil {
		return err
	}
	if err := tx.s.uploader.putManifest(tx.ctx, ref, m.raw); err != nil {
		return fmt.Errorf("tagging %s:%s: %w", tx.s.Image(tx.p), tag, err)
	}
	tx.state.set(tag, m)
	return nil
}

// remove deletes a manifest (and every tag on it).
func (tx *txn) remove(digest string) error {
	ref, err := tx.s.reference(tx.p, "@"+digest)
	if err != nil {
		return err
	}
	if err := tx.s.uploader.remove(tx.ctx, ref.Context(), digest); err != nil {
		return fmt.Errorf("deleting %s (the registry must allow deletes): %w", ref, err)
	}
	tx.state.removeDigest(digest)
	return nil
}

// move relabels the manifest at from (which must hold expected, or
// anything when expected is "") with ann and puts it at to (which must be
// absent), then deletes the old one.
func (tx *txn) move(from, to, expected string, ann func(*manifest) map[string]string) (*artifact, error) {
	expected, err := tx.held(from, expected, "has no "+from)
	if err != nil {
		return nil, err
	}
	if err := tx.expect(to, ""); err != nil {
		return nil, err
	}
	m, err := tx.manifest(expected)
	if err != nil {
		return nil, err
	}
	a, err := relabel(m, ann(m))
	if err != nil {
		return nil, err
	}
	if err := tx.put(to, a); err != nil {
		return nil, err
	}
	return a, tx.remove(expected)
}

// WriteDraft creates or updates a draft (w.Proposed: a proposal) as one
// manifest at draft.<workspace> (proposed.<workspace>).
func (s *Store) WriteDraft(ctx context.Context, w store.DraftWrite) (store.Revision, error) {
	if err := store.ValidateWorkspace(w.Workspace); err != nil {
		return store.Revision{}, err
	}
	if w.Contents == nil {
		return store.Revision{}, fmt.Errorf("draft %s/%s: no contents", w.Package, w.Workspace)
	}
	lc, tag := porchv1alpha1.LifecycleDraft, draftTagPrefix+w.Workspace
	if w.Proposed {
		lc, tag = porchv1alpha1.LifecycleProposed, proposedTagPrefix+w.Workspace
		if w.Expected == "" {
			return store.Revision{}, fmt.Errorf("writing the proposal %s/%s: an update only (no expected digest given)", w.Package, w.Workspace)
		}
	}
	var out store.Revision
	err := s.write(ctx, w.Package, "writing "+tag+" of", func(tx *txn) error {
		trailers := store.Trailers{}
		if w.Expected != "" {
			if err := tx.expect(tag, w.Expected); err != nil {
				return err
			}
			if prev, err := tx.manifest(w.Expected); err == nil {
				for k, v := range trailersOf(prev) {
					trailers[k] = v
				}
			}
		} else if err := s.workspaceFree(tx, w.Workspace, w.CheckRemote); err != nil {
			return err
		}
		delete(trailers, store.TrailerWriter)
		for k, v := range w.Trailers {
			trailers[k] = v
		}
		trailers[store.TrailerPackage], trailers[store.TrailerWorkspace] = w.Package, w.Workspace
		if w.Writer != "" {
			trailers[store.TrailerWriter] = w.Writer
		}
		author := w.Author
		if author == "" {
			author = s.author()
		}
		a, err := buildAnnotated(w.Package, w.Contents, map[string]string{
			LifecycleAnnotation: string(lc), WorkspaceAnnotation: w.Workspace, TrailersAnnotation: marshalTrailers(trailers),
			MessageAnnotation: w.Message, AuthorAnnotation: author, WrittenAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
		}, s.opts.maxLayer())
		if err != nil {
			return err
		}
		if err := tx.put(tag, a); err != nil {
			return err
		}
		// What was written is what a read of it returns: kept (its
		// files, not the writer's parse of them), so that the writer's
		// next read does not pull it back.
		s.keepContents(a.parsed.Layers[0].Digest.String(), pkg.New(w.Contents.Files()))
		if w.Expected != "" && w.Expected != a.digest {
			if err := tx.remove(w.Expected); err != nil {
				return err
			}
		}
		out = store.Revision{Package: w.Package, Workspace: w.Workspace, Lifecycle: lc, Commit: a.digest, Trailers: trailers}
		return nil
	})
	return out, err
}

func (s *Store) author() string {
	if s.opts.Author != "" {
		return s.opts.Author
	}
	return "scion"
}

// workspaceFree fails with a ConflictError when the workspace has a
// draft, a proposal or a published revision in the registry, with a
// RetiredError when it was published and deleted; with checkRemote, also
// when the registry has any tag of the package the store had not read.
func (s *Store) workspaceFree(tx *txn, ws string, checkRemote bool) error {
	now, err := tx.readTags()
	if err != nil {
		return err
	}
	for _, t := range []string{draftTagPrefix + ws, proposedTagPrefix + ws} {
		if d, ok := now.tags[t]; ok {
			return &store.ConflictError{Ref: s.Image(tx.p) + ":" + t, Actual: d, Detail: "workspace " + ws + " is taken"}
		}
	}
	for t, d := range now.tags {
		if _, ok := revisionNumber(t); ok && now.manifests[d].ann(WorkspaceAnnotation) == ws {
			return &store.ConflictError{Ref: s.Image(tx.p) + ":" + t, Actual: d, Detail: "workspace " + ws + " is published"}
		}
		if n, ok := retiredNumber(t); ok && now.manifests[d].ann(WorkspaceAnnotation) == ws {
			return &store.RetiredError{Package: tx.p, Workspace: ws, Revision: n}
		}
	}
	if checkRemote {
		for t, d := range now.tags {
			if was, _ := tx.known.tagOf(t); was != d {
				return &store.ConflictError{Ref: s.Image(tx.p) + ":" + t, Expected: was, Actual: d, Detail: "the registry has a revision of the package this store had not read"}
			}
		}
	}
	return nil
}

// Propose moves a draft to proposed.<workspace>.
func (s *Store) Propose(ctx context.Context, p, ws, expected string, record store.Proposal) (store.Revision, error) {
	return s.moveStage(ctx, p, ws, expected, porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed, record)
}

// RejectProposal moves a proposal back to draft.<workspace>.
func (s *Store) RejectProposal(ctx context.Context, p, ws, expected string) (store.Revision, error) {
	return s.moveStage(ctx, p, ws, expected, porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecycleDraft, store.Proposal{})
}

// moveStage moves a workspace's manifest from one lifecycle's tag to the
// other's; a proposal's record (who, when) goes into its trailers, as
// git's proposing commit has it, and a draft has none.
func (s *Store) moveStage(ctx context.Context, p, ws, expected string, from, to porchv1alpha1.Lifecycle, record store.Proposal) (store.Revision, error) {
	tag := func(lc porchv1alpha1.Lifecycle) string {
		return s.RefName(store.Revision{Workspace: ws, Lifecycle: lc})
	}
	var out store.Revision
	err := s.write(ctx, p, "moving "+tag(from)+" of", func(tx *txn) error {
		var trailers store.Trailers
		a, err := tx.move(tag(from), tag(to), expected, func(m *manifest) map[string]string {
			set := map[string]string{LifecycleAnnotation: string(to)}
			trailers = trailersOf(m)
			if record.By != "" || trailers[store.TrailerProposedBy] != "" {
				delete(trailers, store.TrailerProposedBy)
				delete(trailers, store.TrailerProposedAt)
				if record.By != "" {
					trailers[store.TrailerProposedBy] = record.By
					trailers[store.TrailerProposedAt] = record.At.UTC().Format(time.RFC3339)
				}
				set[TrailersAnnotation] = marshalTrailers(trailers)
			}
			return keep(m, set)
		})
		if err != nil {
			return err
		}
		out = store.Revision{Package: p, Workspace: ws, Lifecycle: to, Commit: a.digest, Trailers: trailers}
		return nil
	})
	return out, err
}

// Publish gives a proposal the next revision number: its manifest at vN,
// then the proposal deleted. A crash in between leaves
// the proposal, which lists hide (its workspace is published) and the
// next publish of the package removes.
func (s *Store) Publish(ctx context.Context, p, ws, expected, publishedBy, writer string) (store.Revision, error) {
	var out store.Revision
	err := s.write(ctx, p, "publishing", func(tx *txn) error {
		now, err := tx.readTags()
		if err != nil {
			return err
		}
		ptag := proposedTagPrefix + ws
		switch {
		case now.tags[ptag] == "":
			return fmt.Errorf("package %s workspace %s is not Proposed: %w", p, ws, store.ErrNotFound)
		case expected == "":
			expected = now.tags[ptag]
		case now.tags[ptag] != expected:
			return &store.ConflictError{Ref: s.Image(p) + ":" + ptag, Expected: expected, Actual: now.tags[ptag]}
		}
		next := 1
		for t := range now.tags {
			if n, ok := revisionNumber(t); ok {
				next = max(next, n+1)
			} else if n, ok := retiredNumber(t); ok {
				next = max(next, n+1) // a deleted revision's number too
			}
		}
		m, err := tx.manifest(expected)
		if err != nil {
			return err
		}
		trailers := trailersOf(m)
		trailers[store.TrailerRevision] = strconv.Itoa(next)
		if writer != "" {
			trailers[store.TrailerWriter] = writer
		}
		delete(trailers, store.TrailerApprovedBy)
		if publishedBy != "" {
			trailers[store.TrailerApprovedBy] = publishedBy
		}
		at := time.Now().UTC().Truncate(time.Second)
		a, err := tx.move(ptag, revisionTagName(next), expected, func(m *manifest) map[string]string {
			return map[string]string{WorkspaceAnnotation: ws, RevisionAnnotation: strconv.Itoa(next), TrailersAnnotation: marshalTrailers(trailers),
				PublishedByAnnotation: publishedBy, PublishedAtAnnotation: at.Format(time.RFC3339)}
		})
		if err != nil {
			return err
		}
		out = store.Revision{Package: p, Workspace: ws, Revision: next, Lifecycle: porchv1alpha1.LifecyclePublished, Commit: a.digest,
			Latest: true, Trailers: trailers, PublishedBy: publishedBy, PublishedAt: at}
		// The same manifest under latest: a put of its bytes, no blob
		// moves. A crash before it leaves latest on the revision before,
		// until the next publication or deletion of the package.
		return tx.tag(LatestTag, tx.state.manifests[a.digest])
	})
	return out, err
}

// ProposeDeletion tags deletion-proposed.vN beside vN.
func (s *Store) ProposeDeletion(ctx context.Context, p string, revision int) (store.Revision, error) {
	return s.markDeletion(ctx, p, revision, true)
}

// RejectDeletion removes deletion-proposed.vN.
func (s *Store) RejectDeletion(ctx context.Context, p string, revision int) (store.Revision, error) {
	return s.markDeletion(ctx, p, revision, false)
}

func (s *Store) markDeletion(ctx context.Context, p string, revision int, propose bool) (store.Revision, error) {
	vtag := revisionTagName(revision)
	mark := deletionProposedTagPrefix + vtag
	var out store.Revision
	err := s.write(ctx, p, "marking "+vtag+" of", func(tx *txn) error {
		d, err := tx.published(revision)
		if err != nil {
			return err
		}
		current, err := tx.current(mark)
		if err != nil {
			return err
		}
		lc := porchv1alpha1.LifecyclePublished
		switch {
		case propose && current == "":
			m, err := tx.manifest(d)
			if err != nil {
				return err
			}
			a, err := relabel(m, keep(m, map[string]string{LifecycleAnnotation: string(porchv1alpha1.LifecycleDeletionProposed)}))
			if err != nil {
				return err
			}
			if err := tx.put(mark, a); err != nil {
				return err
			}
			lc = porchv1alpha1.LifecycleDeletionProposed
		case propose:
			lc = porchv1alpha1.LifecycleDeletionProposed
		case current != "":
			if err := tx.remove(current); err != nil {
				return err
			}
		}
		out = store.Revision{Package: p, Revision: revision, Lifecycle: lc, Commit: d}
		return nil
	})
	if err != nil {
		return store.Revision{}, err
	}
	if rev, err := s.Get(ctx, p, "", revision); err == nil {
		return rev, nil
	}
	return out, nil
}

// Delete removes a revision: a draft's or proposal's manifest, or a
// published revision's (with the tags on it) and its deletion mark. A
// published manifest another vN tag shares (revisions with the same
// files copied by scion repo mirror) cannot be deleted alone.
func (s *Store) Delete(ctx context.Context, rev store.Revision, writer string) error {
	return s.write(ctx, rev.Package, "deleting", func(tx *txn) error {
		tag := s.RefName(rev)
		if err := tx.expect(tag, rev.Commit); err != nil {
			return err
		}
		if rev.Revision == 0 {
			return tx.remove(rev.Commit)
		}
		now, err := tx.readTags()
		if err != nil {
			return err
		}
		for t, d := range now.tags {
			if n, ok := revisionNumber(t); ok && n != rev.Revision && d == rev.Commit {
				return fmt.Errorf("revision %s of %s shares its manifest %s with %s: a registry deletes a manifest with every tag on it; delete both, or re-publish one: %w", tag, rev.Package, rev.Commit, t, pkgInvalid)
			}
		}
		if d := now.tags[deletionProposedTagPrefix+tag]; d != "" {
			if err := tx.remove(d); err != nil {
				return err
			}
		}
		if err := tx.remove(rev.Commit); err != nil {
			return err
		}
		if err := s.retire(tx, rev, writer); err != nil {
			return err
		}
		if now.tags[LatestTag] != rev.Commit {
			return nil
		}
		// The registry deleted latest with the newest revision's
		// manifest: it goes to the newest one left.
		newest, digest := 0, ""
		for t, d := range now.tags {
			if n, ok := revisionNumber(t); ok && n != rev.Revision && n > newest {
				newest, digest = n, d
			}
		}
		if digest == "" {
			return nil
		}
		m, err := tx.manifest(digest)
		if err != nil {
			return err
		}
		return tx.tag(LatestTag, m)
	})
}

// retire tags retired.vN for a deleted published revision: a package of
// a Kptfile only, annotated with the revision's number and workspace (its
// own manifest, which no other tag shares).
func (s *Store) retire(tx *txn, rev store.Revision, writer string) error {
	trailers := store.Trailers{store.TrailerPackage: rev.Package, store.TrailerRevision: strconv.Itoa(rev.Revision)}
	if writer != "" {
		trailers[store.TrailerWriter] = writer
	}
	// A registry holds packages only: the empty package is a Kptfile
	// saying what it stands for.
	kf := fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  description: revision v%d of %s was deleted; its name is retired\n", path.Base(rev.Package), rev.Revision, rev.Package)
	a, err := buildAnnotated(rev.Package, pkg.New(map[string][]byte{"Kptfile": []byte(kf)}), map[string]string{
		WorkspaceAnnotation: rev.Workspace, RevisionAnnotation: strconv.Itoa(rev.Revision), TrailersAnnotation: marshalTrailers(trailers),
		MessageAnnotation: fmt.Sprintf("Retire %s v%d", rev.Package, rev.Revision), WrittenAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
	}, s.opts.maxLayer())
	if err != nil {
		return err
	}
	return tx.put(retiredTagPrefix+revisionTagName(rev.Revision), a)
}

// SetFloatingTag points a floating tag at a published revision's
// manifest, after reading where it points now: a move by someone else in
// between is a store.ErrConflict (the same read-put-read as every write).
func (s *Store) SetFloatingTag(ctx context.Context, p, tag string, revision int) (int, error) {
	if err := store.ValidateFloatingTag(tag); err != nil {
		return 0, err
	}
	if isLifecycleTag(tag) {
		return 0, fmt.Errorf("invalid floating tag %q: draft., proposed. and deletion-proposed. name the lifecycle in a registry", tag)
	}
	if tag == LatestTag {
		return 0, fmt.Errorf("invalid floating tag %q: Scion keeps it on the newest published revision", tag)
	}
	from := 0
	err := s.write(ctx, p, "tagging", func(tx *txn) error {
		d, err := tx.published(revision)
		if err != nil {
			return err
		}
		current, err := tx.current(tag)
		if err != nil {
			return err
		}
		if current != "" {
			if m, err := tx.manifest(current); err == nil {
				from, _ = strconv.Atoi(m.ann(RevisionAnnotation))
			}
		}
		if current == d {
			return nil
		}
		m, err := tx.manifest(d)
		if err != nil {
			return err
		}
		if err := tx.tag(tag, m); err != nil {
			return err
		}
		return tx.expect(tag, d)
	})
	return from, err
}
