package oci

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/lru"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// Prefix is REGISTRY/PATH (without oci://): each package is the OCI
	// repository PREFIX/PACKAGE.
	Prefix string
	// Options of the registry client (credentials, transport, timeout
	// of each exchange, layer limit).
	Options
	// Gate admits the exchanges with the registry (store.Gate: one at a
	// time, backoff after the registry did not answer); a gate of its
	// own when nil.
	Gate *store.Gate
	// Author names the writer of drafts ("scion" when empty).
	Author string
	// Catalogs, when set, shares the reads of the registry's catalog
	// with the other Stores of the process of the same CatalogKey (the
	// registry and the credentials, as the caller identifies them).
	Catalogs   *Catalogs
	CatalogKey string
	// Blobs, when set, is where the Store keeps the package layers it
	// writes and reads, shared with the other Stores of the process
	// (one of its own otherwise).
	Blobs *Blobs
	// Since is when the Repository was made: its fetches take no
	// catalog read that started before, so that it lists the packages
	// its prefix held when it was registered (a read shared for longer,
	// which is what keeps a large registry's catalog from being read
	// all the time, would not).
	Since time.Time
}

// Store keeps a Repository's package revisions in an OCI registry; it
// implements store.Store. Every package is an OCI repository under the
// prefix; every revision a manifest (the package artifact of this
// package, plus the revision's metadata as annotations), and the
// lifecycle is in tags (tags.go):
//
//	Draft             draft.<workspace>
//	Proposed          proposed.<workspace>
//	Published         v<N> (immutable), plus the package's declared
//	                  semantic version when it has one
//	DeletionProposed  deletion-proposed.v<N> beside v<N>
//	floating tag      any other tag on a published revision's manifest
//
// Registries have no compare-and-swap on tags: a write reads the tag
// (HEAD), compares it with the digest the writer read, puts the manifest,
// then reads the tag again (writes.go). Writes of one process are
// serialized per Repository, so the window in which two writers can both
// win is that between another process's read and put
// (docs/oci-layout.md); the read after the put reports a loss as
// store.ErrConflict.
//
// What the store read (state.go) is each package's tags and the
// manifests they hold, updated by its own writes without reading the
// package again, and the package layers it read, in a bounded cache.
type Store struct {
	opts StoreOptions
	reg  name.Registry
	path string // under the registry, no trailing slash
	gate *store.Gate
	// puller reads from a registry that asks for tokens: each OCI
	// repository's ping and token once, not once per request.
	puller *remote.Puller
	// uploader puts the blobs of what the store writes, and holds the
	// transports of a registry that asks for no token.
	uploader *uploader
	writes   sync.Mutex // one write (or fetch) of this process at a time

	mu    sync.Mutex
	pkgs  map[string]*pkgState // by package
	bad   map[string]string    // "package:tag" -> why it is not a package
	moved map[string]movedTag  // "package:vN" -> how it moved behind Scion's back
	// written are the packages whose state the store's own writes made
	// since it last read them (Resync skips them once).
	written map[string]bool
	// fetched is when the tags were last read; catalogRead the catalog.
	fetched, catalogRead time.Time
	head                 [32]byte // the packages' sums, XORed
	version              uint64

	contents *lru.Cache[string, *pkg.Package] // by layer digest
	blobs    *Blobs                           // the layers, gzipped
	layers   *lru.Cache[string, string]       // manifest digest -> layer digest
}

var _ store.Store = (*Store)(nil)

// OpenStore opens the OCI store at opts.Prefix and reads it.
func OpenStore(ctx context.Context, opts StoreOptions) (*Store, error) {
	prefix := strings.Trim(strings.TrimPrefix(opts.Prefix, Scheme), "/")
	if strings.Contains(prefix, "://") {
		return nil, fmt.Errorf("%s is not an OCI registry address: write REGISTRY[:PORT]/PATH, without a scheme", opts.Prefix)
	}
	host, path, _ := strings.Cut(prefix, "/")
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s%s is not an OCI registry address: %w", Scheme, prefix, err)
	}
	if path != "" {
		if _, err := name.NewRepository(prefix, name.StrictValidation); err != nil {
			return nil, fmt.Errorf("%s%s is not an OCI repository prefix (lowercase letters, digits and . _ - /): %w", Scheme, prefix, err)
		}
	}
	opts.Prefix = prefix
	s := &Store{opts: opts, reg: reg, path: path, gate: opts.Gate,
		pkgs: map[string]*pkgState{}, bad: map[string]string{}, moved: map[string]movedTag{}, written: map[string]bool{},
		contents: lru.New[string, *pkg.Package](maxContents, maxContentBytes), layers: lru.New[string, string](maxLayers, 0)}
	if s.gate == nil {
		s.gate = &store.Gate{}
	}
	if s.blobs = opts.Blobs; s.blobs == nil {
		s.blobs = &Blobs{MaxBytes: maxContentBytes}
	}
	// One puller for the store's life: each OCI repository's
	// authentication (the /v2/ ping, a token) is made once, not once per
	// request. Each call still carries its own context.
	if s.puller, err = remote.NewPuller(opts.Options.remote(context.Background())...); err != nil {
		return nil, err
	}
	s.uploader = newUploader(opts.Options)
	if err := s.Fetch(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is oci://PREFIX.
func (s *Store) URL() string { return Scheme + s.opts.Prefix }

// Directory is "": each package is an OCI repository of its own.
func (s *Store) Directory() string { return "" }

// Image is the OCI repository of a package: PREFIX/PACKAGE.
func (s *Store) Image(p string) string { return s.opts.Prefix + "/" + p }

// RefName is the tag that holds rev.
func (s *Store) RefName(rev store.Revision) string {
	switch rev.Lifecycle {
	case porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDeletionProposed:
		return revisionTagName(rev.Revision)
	case porchv1alpha1.LifecycleProposed:
		return proposedTagPrefix + rev.Workspace
	}
	return draftTagPrefix + rev.Workspace
}

// Fetch reads the registry's catalog for the packages under the prefix
// (a read of it shared with other Stores, catalogShareAge old at most),
// every tag of every package (a published tag moved behind Scion's back
// is noticed here), and the manifests it has not read before.
func (s *Store) Fetch(ctx context.Context) error {
	s.writes.Lock()
	defer s.writes.Unlock()
	return s.fetchLocked(ctx, fetchMode{catalog: true, verify: true})
}

// Resync is the periodic Fetch: as Fetch, except that the packages the
// store wrote since it last read them are taken as it wrote them, this
// once (a package's tags cost the registry a request, and a HEAD per
// tag). A tag another tool moved in such a package is noticed by the
// next Resync, a sync period later; a requested sync (Fetch) reads
// everything.
func (s *Store) Resync(ctx context.Context) error {
	s.writes.Lock()
	defer s.writes.Unlock()
	return s.fetchLocked(ctx, fetchMode{catalog: true, verify: true, skipWritten: true})
}

// catalogShareAge is how old a catalog read shared by another Store may
// be for a Fetch: a package another tool made in the last seconds is
// found by the next.
const catalogShareAge = 5 * time.Second

// catalogMaxAge is how stale the list of packages may be in a
// FetchIfOlder: a registry's catalog lists every repository it has (a
// walk of its storage), so a burst of upstream look-ups reads the tags of
// the packages known and the catalog at most this often. A package not
// found is looked for with Fetch, which reads the catalog.
const catalogMaxAge = 30 * time.Second

// FetchIfOlder fetches when the last fetch is older than maxAge: the
// known packages' tags (their published tags as read before), and the
// catalog too when it is older than catalogMaxAge.
func (s *Store) FetchIfOlder(ctx context.Context, maxAge time.Duration) error {
	s.mu.Lock()
	fresh := time.Since(s.fetched) < maxAge
	s.mu.Unlock()
	if fresh {
		return nil
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	s.mu.Lock()
	fresh = time.Since(s.fetched) < maxAge
	withCatalog := time.Since(s.catalogRead) >= catalogMaxAge
	s.mu.Unlock()
	if fresh {
		return nil
	}
	return s.fetchLocked(ctx, fetchMode{catalog: withCatalog})
}

// state is what the store read of package p (nil: nothing).
func (s *Store) state(p string) *pkgState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pkgs[p]
}

// List returns every revision.
func (s *Store) List(ctx context.Context) ([]store.Revision, error) {
	s.mu.Lock()
	var out []store.Revision
	for p, ps := range s.pkgs {
		out = append(out, packageRevisions(p, ps)...)
	}
	s.mu.Unlock()
	store.SortRevisions(out)
	return out, nil
}

// ListPackage returns the revisions of one package.
func (s *Store) ListPackage(ctx context.Context, p string) ([]store.Revision, error) {
	ps := s.state(p)
	if ps == nil {
		return nil, nil
	}
	out := packageRevisions(p, ps)
	store.SortRevisions(out)
	return out, nil
}

// Get finds one revision: by workspace (revision 0) or by number.
func (s *Store) Get(ctx context.Context, p, workspace string, revision int) (store.Revision, error) {
	if ps := s.state(p); ps != nil {
		if rev, ok := findRevision(p, ps, workspace, revision); ok {
			return rev, nil
		}
	}
	what := "workspace " + workspace
	if revision > 0 {
		what = "revision v" + strconv.Itoa(revision)
	}
	return store.Revision{}, fmt.Errorf("package %s %s in %s: %w", p, what, s.URL(), store.ErrNotFound)
}

// findRevision looks one revision up by its tags: vN for a number; for a
// workspace, the published revision drafted in it, else its proposal,
// else its draft (as packageRevisions shows them).
func findRevision(p string, ps *pkgState, workspace string, revision int) (store.Revision, bool) {
	if revision > 0 {
		t := revisionTagName(revision)
		d, ok := ps.tags[t]
		if !ok {
			return store.Revision{}, false
		}
		return publishedRevision(p, ps, t, d, revision, ps.publishedWorkspace(t), ps.latest() == revision), true
	}
	for t, d := range ps.tags {
		if n, ok := revisionNumber(t); ok && ps.publishedWorkspace(t) == workspace {
			return publishedRevision(p, ps, t, d, n, workspace, ps.latest() == n), true
		}
	}
	if store.ValidateWorkspace(workspace) != nil {
		return store.Revision{}, false
	}
	for _, t := range []string{proposedTagPrefix + workspace, draftTagPrefix + workspace} {
		if d, ok := ps.tags[t]; ok {
			_, lc, _ := workspaceTag(t)
			return store.Revision{Package: p, Workspace: workspace, Lifecycle: lc, Commit: d, Trailers: trailersOf(ps.manifests[d])}, true
		}
	}
	return store.Revision{}, false
}

// Read returns the files of a revision: parsed before, or from its layer
// kept (Blobs), or read from the registry.
func (s *Store) Read(ctx context.Context, rev store.Revision) (*pkg.Package, error) {
	m := s.state(rev.Package).manifest(rev.Commit)
	if m != nil {
		if p, ok := s.contents.Get(m.layer()); ok {
			return p.DeepCopy(), nil
		}
		if data, ok := s.keptLayer(rev.Package, m.layer()); ok {
			p, err := s.parseLayer(rev.Package, m, data)
			if err != nil {
				return nil, err
			}
			s.keepContents(m.layer(), p)
			return p.DeepCopy(), nil
		}
	}
	var p *pkg.Package
	err := s.exchange(ctx, "reading", func(ctx context.Context, opts []remote.Option) error {
		var err error
		if m == nil {
			if m, err = s.manifestFor(ctx, rev.Package, rev.Commit, opts); err != nil {
				return err
			}
		}
		p, err = s.readLayer(rev.Package, m, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.keepContents(m.layer(), p)
	return p.DeepCopy(), nil
}

// readLayer reads a manifest's layer from the registry, keeps it
// (Blobs) and parses it.
func (s *Store) readLayer(p string, m *manifest, opts []remote.Option) (*pkg.Package, error) {
	ref, err := s.reference(p, "@"+m.digest)
	if err != nil {
		return nil, err
	}
	layer, err := remote.Layer(ref.Context().Digest(m.layer()), opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	max := s.opts.maxLayer()
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	pk, err := readPackageLayer(ref, m.digest, bytes.NewReader(data), max)
	if err == nil {
		s.keepLayer(p, m.layer(), data)
	}
	return pk, err
}

// parseLayer parses a manifest's layer kept.
func (s *Store) parseLayer(p string, m *manifest, data []byte) (*pkg.Package, error) {
	ref, err := s.reference(p, "@"+m.digest)
	if err != nil {
		return nil, err
	}
	return readPackageLayer(ref, m.digest, bytes.NewReader(data), s.opts.maxLayer())
}

// ReadFile returns one file of a revision; the Kptfile comes from the
// manifest's annotation, without reading the layer.
func (s *Store) ReadFile(ctx context.Context, rev store.Revision, file string) ([]byte, error) {
	if m := s.state(rev.Package).manifest(rev.Commit); m != nil && file == kptfileName {
		if kf := m.ann(KptfileAnnotation); kf != "" {
			return []byte(kf), nil
		}
	}
	p, err := s.Read(ctx, rev)
	if err != nil {
		return nil, err
	}
	data, ok := p.File(file)
	if !ok {
		return nil, fmt.Errorf("%s of %s: %w", file, rev.Package, store.ErrNotFound)
	}
	return data, nil
}

const kptfileName = "Kptfile"

// DraftHistory is the last write of a draft or proposal: a registry keeps
// no history of a tag.
func (s *Store) DraftHistory(ctx context.Context, rev store.Revision) ([]store.Commit, error) {
	m := s.state(rev.Package).manifest(rev.Commit)
	if m == nil {
		return nil, fmt.Errorf("%s of %s: %w", rev.Commit, rev.Package, store.ErrNotFound)
	}
	at, _ := time.Parse(time.RFC3339, m.ann(WrittenAtAnnotation))
	return []store.Commit{{Hash: m.digest, Author: m.ann(AuthorAnnotation), Subject: m.ann(MessageAnnotation), Trailers: trailersOf(m), When: at}}, nil
}

// DraftFork is not known in a registry: "".
func (s *Store) DraftFork(ctx context.Context, rev store.Revision) (string, error) { return "", nil }

// SamePackage compares the layers of two manifests: the same files make
// the same layer. A manifest no tag holds any more (a draft's before it
// was updated or proposed) is remembered by its layer's digest while the
// store keeps it (maxLayers), else read again from the registry; one the
// registry no longer has is store.ErrUnknownCommit.
func (s *Store) SamePackage(ctx context.Context, p, a, b string) (bool, error) {
	if a == "" || b == "" {
		return a == b, nil
	}
	la, err := s.layerOf(ctx, p, a)
	if err != nil {
		return false, err
	}
	lb, err := s.layerOf(ctx, p, b)
	return la == lb, err
}

// layerOf is the layer digest of the manifest of p at digest.
func (s *Store) layerOf(ctx context.Context, p, digest string) (string, error) {
	if m := s.state(p).manifest(digest); m != nil {
		return m.layer(), nil
	}
	if l, ok := s.layers.Get(digest); ok {
		return l, nil
	}
	var m *manifest
	err := s.exchange(ctx, "reading", func(ctx context.Context, opts []remote.Option) error {
		var err error
		m, err = s.manifestFor(ctx, p, digest, opts)
		return err
	})
	if notFound(err) {
		return "", fmt.Errorf("%s of %s in %s: %w", digest, p, s.URL(), store.ErrUnknownCommit)
	}
	if err != nil {
		return "", err
	}
	return m.layer(), nil
}

// FloatingTags returns a package's tags that are not vN nor lifecycle
// tags (semantic versions such as 1.4.0 included, as in git), with the
// revision each points at (0: none).
func (s *Store) FloatingTags(ctx context.Context, p string) (map[string]int, error) {
	out := map[string]int{}
	ps := s.state(p)
	if ps == nil {
		return out, nil
	}
	byDigest := map[string]int{}
	for t, d := range ps.tags {
		if n, ok := revisionNumber(t); ok {
			byDigest[d] = n
		}
	}
	for t, d := range ps.tags {
		if _, ok := revisionNumber(t); ok || isLifecycleTag(t) || t == LatestTag || store.ValidateFloatingTag(t) != nil {
			continue
		}
		out[t] = byDigest[d]
	}
	return out, nil
}

// ResolveFloatingTag finds the published revision a tag points at.
func (s *Store) ResolveFloatingTag(ctx context.Context, p, tag string) (store.Revision, error) {
	ps := s.state(p)
	d, ok := ps.tagOf(tag)
	if !ok {
		return store.Revision{}, fmt.Errorf("package %s has no tag %s in %s: %w", p, tag, s.URL(), store.ErrNotFound)
	}
	for t, td := range ps.tags {
		if n, ok := revisionNumber(t); ok && td == d {
			return publishedRevision(p, ps, t, d, n, ps.publishedWorkspace(t), ps.latest() == n), nil
		}
	}
	return store.Revision{}, fmt.Errorf("the tag %s of package %s in %s is on no published revision: %w", tag, p, s.URL(), store.ErrNotFound)
}
