package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Annotations of the revision metadata a Store writes on its manifests
// (docs/oci-layout.md). A published revision's manifest is also a plain
// package artifact: tools that know only PackageAnnotation and the layer
// read it.
const (
	// LifecycleAnnotation is Draft, Proposed or DeletionProposed; absent
	// on a published revision.
	LifecycleAnnotation = "dev.scion.revision.lifecycle"
	// WorkspaceAnnotation is the workspace the revision was drafted in.
	WorkspaceAnnotation = "dev.scion.revision.workspace"
	// RevisionAnnotation is a published revision's number.
	RevisionAnnotation = "dev.scion.revision.number"
	// PublishedByAnnotation and PublishedAtAnnotation (RFC 3339) say who
	// published a revision and when.
	PublishedByAnnotation = "dev.scion.revision.published-by"
	PublishedAtAnnotation = "dev.scion.revision.published-at"
	// TrailersAnnotation holds the revision's metadata as JSON: the keys
	// and values Scion writes as commit trailers in git.
	TrailersAnnotation = "dev.scion.revision.trailers"
	// MessageAnnotation, AuthorAnnotation and WrittenAtAnnotation
	// describe the last write of a draft or proposal.
	MessageAnnotation   = "dev.scion.revision.message"
	AuthorAnnotation    = "dev.scion.revision.author"
	WrittenAtAnnotation = "dev.scion.revision.written-at"
)

// Tags of the lifecycle in a package's OCI repository: published
// revisions are vN; the others are named after the workspace or revision.
const (
	draftTagPrefix            = "draft."
	proposedTagPrefix         = "proposed."
	deletionProposedTagPrefix = "deletion-proposed."
	// retiredTagPrefix marks a deleted published revision (retired.vN):
	// an empty package annotated with its workspace, so that neither its
	// number nor its workspace is given to other content.
	retiredTagPrefix = "retired."
)

// LatestTag is kept on the newest published revision of each package, as
// a git repository's branch holds it: a deployer following it (Flux's
// OCIRepository with ref.tag: latest) deploys what Scion publishes. Only
// Scion moves it.
const LatestTag = "latest"

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
}

// Store keeps a Repository's package revisions in an OCI registry; it
// implements store.Store. Every package is an OCI repository under the
// prefix; every revision a manifest (the package artifact of this
// package, plus the revision's metadata as annotations), and the
// lifecycle is in tags:
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
// then reads the tag again. Writes of one process are serialized per
// Repository, so the window in which two writers can both win is that
// between another process's read and put (docs/oci-layout.md); the read
// after the put reports a loss as store.ErrConflict.
type Store struct {
	opts   StoreOptions
	reg    name.Registry
	path   string // under the registry, no trailing slash
	gate   *store.Gate
	puller *remote.Puller
	pusher *remote.Pusher
	writes sync.Mutex // one write (or fetch) of this process at a time

	mu        sync.Mutex
	pkgs      map[string]map[string]string // package -> tag -> digest
	manifests map[string]*manifest         // by digest: immutable
	bad       map[string]string            // "package:tag" -> why it is not a package
	moved     map[string]string            // "package:vN" -> how it moved behind Scion's back
	fetched   time.Time
	// catalogRead is when the catalog was last read (fetched: the tags).
	catalogRead time.Time
	head        string
	version     uint64
	contents    map[string]*pkg.Package // by digest, bounded (maxContents)
}

// manifest is what a Store keeps of one manifest.
type manifest struct {
	raw    []byte
	digest string
	m      v1.Manifest
}

func (m *manifest) ann(key string) string { return m.m.Annotations[key] }

// maxContents bounds the packages a Store keeps read.
const maxContents = 256

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
		pkgs: map[string]map[string]string{}, manifests: map[string]*manifest{}, bad: map[string]string{}, moved: map[string]string{}, contents: map[string]*pkg.Package{}}
	if s.gate == nil {
		s.gate = &store.Gate{}
	}
	// One puller and pusher for the store's life: each OCI repository's
	// authentication (the /v2/ ping, a token) is made once, not once per
	// request. Each call still carries its own context.
	base := opts.Options.remote(context.Background())
	if s.puller, err = remote.NewPuller(base...); err != nil {
		return nil, err
	}
	if s.pusher, err = remote.NewPusher(base...); err != nil {
		return nil, err
	}
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

func revisionTagName(n int) string { return "v" + strconv.Itoa(n) }

// Head is a digest of every tag read at the last fetch.
func (s *Store) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head
}

// RefsVersion changes whenever a fetch or write changed a tag.
func (s *Store) RefsVersion() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Trim drops the packages kept read.
func (s *Store) Trim() bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	n := len(s.contents)
	clear(s.contents)
	return n > 0
}

// Warnings lists what the store found wrong in the registry, each naming
// the artifact: tags that are not Scion packages (another media type, a
// manifest that cannot be read), which are not revisions; published
// revisions (vN) whose tag was moved to another manifest behind Scion's
// back, which are shown as the registry has them now. The Repository's
// Ready condition says them.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.bad)+len(s.moved))
	for ref, why := range s.bad {
		out = append(out, s.opts.Prefix+"/"+ref+": "+why)
	}
	for ref, how := range s.moved {
		out = append(out, s.opts.Prefix+"/"+ref+": "+how)
	}
	sort.Strings(out)
	return out
}

// noteMovedLocked records the published tags of p whose digest changed
// from what the store had read (a published revision is immutable: a
// registry that lets a tag move is told in the Repository's status).
func (s *Store) noteMovedLocked(p string, tags map[string]string) {
	for t, was := range s.pkgs[p] {
		if _, ok := revisionNumber(t); !ok {
			continue
		}
		if now, ok := tags[t]; ok && now != was {
			s.moved[p+":"+t] = fmt.Sprintf("the published revision's tag moved from %s to %s behind Scion's back (published revisions are immutable; it is shown as the registry has it now)", was, now)
		}
	}
}

// exchange runs fn through the gate, bounded by the timeout, with the
// registry client's options.
func (s *Store) exchange(ctx context.Context, what string, fn func(opts []remote.Option) error) error {
	exit, err := s.gate.Enter(ctx, s.URL())
	if err != nil {
		return err
	}
	ctx, opts, cancel := s.opts.session(ctx)
	defer cancel()
	opts = append(opts, remote.Reuse(s.puller), remote.Reuse(s.pusher))
	err = s.registryError(ctx, what, fn(opts))
	exit(err)
	return err
}

// registryError gives registry errors the store's meaning: a timeout is
// store.ErrTimeout (the gate backs off), a refusal of the credentials
// store.ErrAuthentication, each naming the registry.
func (s *Store) registryError(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var terr *transport.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s: the registry did not answer within %s: %w", what, s.URL(), s.opts.timeout(), store.ErrTimeout)
	case errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%s %s: %w: %w", what, s.URL(), store.ErrAuthentication, describe(err))
	}
	var already interface{ RaceLost() bool }
	if errors.As(err, &already) || errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrNotPackage) {
		return err
	}
	return &store.TextError{Msg: fmt.Sprintf("%s %s: %s", what, s.URL(), answered(err)), Err: err}
}

// answered says what went wrong with an exchange by its class only: a
// registry's status and error codes, never the text or body that came
// with them (a tenant's registry URL may lead to a service that is no
// registry, whose body must not reach the tenant), or the class of a
// connection's failure.
func answered(err error) string {
	if class := egress.Class(err); class != "" {
		return class
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return store.Shorten(err.Error(), 512)
	}
	var codes []string
	for _, d := range terr.Errors {
		if d.Code != transport.UnknownErrorCode && registryCode.MatchString(string(d.Code)) && !slices.Contains(codes, string(d.Code)) {
			codes = append(codes, string(d.Code))
		}
	}
	msg := fmt.Sprintf("the registry answered %d %s", terr.StatusCode, http.StatusText(terr.StatusCode))
	if len(codes) > 0 {
		msg += " (" + strings.Join(codes, ", ") + ")"
	}
	return msg
}

// registryCode is the shape of the error codes of the distribution
// specification (MANIFEST_UNKNOWN).
var registryCode = regexp.MustCompile(`^[A-Z][A-Z_]{2,40}$`)

func (o Options) timeout() time.Duration {
	if o.Timeout == 0 {
		return time.Minute
	}
	return o.Timeout
}

// Fetch reads the registry's catalog for the packages under the prefix,
// every package's tags, and the manifests it has not read before.
func (s *Store) Fetch(ctx context.Context) error {
	s.writes.Lock()
	defer s.writes.Unlock()
	return s.fetchLocked(ctx, true)
}

// catalogMaxAge is how stale the list of packages may be in a
// FetchIfOlder: a registry's catalog lists every repository it has (a
// walk of its storage), so a burst of upstream look-ups reads the tags of
// the packages known and the catalog at most this often. A package not
// found is looked for with Fetch, which reads the catalog.
const catalogMaxAge = 30 * time.Second

// FetchIfOlder fetches when the last fetch is older than maxAge: the
// known packages' tags, and the catalog too when it is older than
// catalogMaxAge.
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
	return s.fetchLocked(ctx, withCatalog)
}

func (s *Store) fetchLocked(ctx context.Context, withCatalog bool) error {
	pkgs := map[string]map[string]string{}
	bad := map[string]string{}
	err := s.exchange(ctx, "reading", func(opts []remote.Option) error {
		var names []string
		if withCatalog {
			repos, err := catalog(s.reg, opts)
			if err != nil {
				var terr *transport.Error
				if errors.As(err, &terr) && (terr.StatusCode == http.StatusNotFound || terr.StatusCode == http.StatusMethodNotAllowed) {
					return fmt.Errorf("listing the repositories: the registry does not serve its catalog (GET /v2/_catalog), which Scion needs to find packages: %w", err)
				}
				return fmt.Errorf("listing the repositories: %w", err)
			}
			for _, repo := range repos {
				p, ok := repo, s.path == ""
				if !ok {
					p, ok = strings.CutPrefix(repo, s.path+"/")
				}
				if ok && p != "" {
					names = append(names, p)
				}
			}
		} else {
			s.mu.Lock()
			names = slices.Collect(maps.Keys(s.pkgs))
			for k, why := range s.bad {
				// Packages with no tag but bad ones are not read again
				// before the next catalog: their warnings stay.
				if p, _, _ := strings.Cut(k, ":"); s.pkgs[p] == nil {
					bad[k] = why
				}
			}
			s.mu.Unlock()
		}
		for _, p := range names {
			tags, err := s.readTags(ctx, p, opts, bad)
			if err != nil {
				return err
			}
			if len(tags) > 0 {
				pkgs[p] = tags
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, tags := range pkgs {
		s.noteMovedLocked(p, tags)
	}
	s.pkgs, s.bad, s.fetched = pkgs, bad, time.Now()
	if withCatalog {
		s.catalogRead = s.fetched
	}
	s.rehashLocked()
	return nil
}

// readTags reads one package's tags and their digests, and the
// manifests not read before; tags that are not packages go to bad.
func (s *Store) readTags(ctx context.Context, p string, opts []remote.Option, bad map[string]string) (map[string]string, error) {
	repo := s.reg.Repo(s.path, p)
	if s.path == "" {
		repo = s.reg.Repo(p)
	}
	names, err := remote.List(repo, opts...)
	if err != nil {
		if notFound(err) {
			return nil, nil // every tag deleted
		}
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	tags := map[string]string{}
	for _, t := range names {
		digest, err := s.readTag(ctx, p, repo.Tag(t), opts)
		switch {
		case errors.Is(err, ErrNotPackage):
			bad[p+":"+t] = err.Error()
		case err != nil:
			return nil, err
		case digest != "":
			tags[t] = digest
		}
	}
	return tags, nil
}

// tagReads is how often readTag reads a tag whose manifest was deleted
// between the two requests.
const tagReads = 3

// readTag reads the digest a tag holds and its manifest; "" when the tag
// was deleted since it was listed. Another writer may move the tag and
// delete the manifest it held between the two requests (a draft updated,
// a proposal approved): the tag is then read again.
func (s *Store) readTag(ctx context.Context, p string, tag name.Tag, opts []remote.Option) (string, error) {
	for i := 1; ; i++ {
		d, err := remote.Head(tag, opts...)
		if notFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", tag, err)
		}
		digest := d.Digest.String()
		_, err = s.manifestFor(ctx, p, digest, opts)
		if notFound(err) && i < tagReads {
			continue
		}
		return digest, err
	}
}

// notFound says whether a registry answered 404 (MANIFEST_UNKNOWN,
// NAME_UNKNOWN) to a request.
func notFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// manifestFor returns a manifest by digest, reading it when not known.
func (s *Store) manifestFor(ctx context.Context, p, digest string, opts []remote.Option) (*manifest, error) {
	s.mu.Lock()
	m, ok := s.manifests[digest]
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	ref, err := s.reference(p, "@"+digest)
	if err != nil {
		return nil, err
	}
	d, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	m = &manifest{raw: d.Manifest, digest: digest}
	if err := checkManifest(d.MediaType, d.Manifest, &m.m, s.opts.maxLayer()); err != nil {
		return nil, fmt.Errorf("%s (%s): %w: %s", ref, digest, ErrNotPackage, err)
	}
	s.mu.Lock()
	s.manifests[digest] = m
	s.mu.Unlock()
	return m, nil
}

// reference is PREFIX/P followed by :TAG or @DIGEST; a package path or
// tag a registry cannot hold (upper case, too long) is an error naming
// it.
func (s *Store) reference(p, suffix string) (name.Reference, error) {
	ref, err := name.ParseReference(s.Image(p)+suffix, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%s%s cannot be an OCI reference (repository paths are lowercase letters, digits and . _ - /; tags at most 128 letters, digits and . _ -): %w: %w", s.Image(p), suffix, err, pkgInvalid)
	}
	return ref, nil
}

// rehashLocked recomputes Head, and moves RefsVersion when it changed.
func (s *Store) rehashLocked() {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(s.pkgs)) {
		tags := s.pkgs[p]
		for _, t := range slices.Sorted(maps.Keys(tags)) {
			fmt.Fprintf(h, "%s\x00%s\x00%s\n", p, t, tags[t])
		}
	}
	head := ""
	if len(s.pkgs) > 0 {
		head = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	if head != s.head {
		s.head = head
		s.version++
	}
}

// List returns every revision.
func (s *Store) List(ctx context.Context) ([]store.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked(""), nil
}

// ListPackage returns the revisions of one package.
func (s *Store) ListPackage(ctx context.Context, p string) ([]store.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked(p), nil
}

func (s *Store) listLocked(only string) []store.Revision {
	var out []store.Revision
	for p, tags := range s.pkgs {
		if only != "" && p != only {
			continue
		}
		out = append(out, s.packageRevisionsLocked(p, tags)...)
	}
	store.SortRevisions(out)
	return out
}

// packageRevisionsLocked reads a package's revisions from its tags. What
// a write that died half-way leaves (a draft beside its proposal, a
// proposal beside its published revision) shows as the later stage only.
func (s *Store) packageRevisionsLocked(p string, tags map[string]string) []store.Revision {
	var out []store.Revision
	published := map[string]bool{} // workspaces published
	latest := 0
	for t := range tags {
		if n, ok := revisionNumber(t); ok {
			latest = max(latest, n)
		}
	}
	for t, d := range tags {
		n, ok := revisionNumber(t)
		if !ok {
			continue
		}
		m := s.manifests[d]
		ws := m.ann(WorkspaceAnnotation)
		if ws == "" || m.ann(RevisionAnnotation) != strconv.Itoa(n) {
			ws = t
		}
		published[ws] = true
		lc := porchv1alpha1.LifecyclePublished
		if _, ok := tags[deletionProposedTagPrefix+t]; ok {
			lc = porchv1alpha1.LifecycleDeletionProposed
		}
		at, _ := time.Parse(time.RFC3339, m.ann(PublishedAtAnnotation))
		out = append(out, store.Revision{Package: p, Workspace: ws, Revision: n, Lifecycle: lc, Commit: d, Latest: n == latest,
			Trailers: trailersOf(m), PublishedBy: m.ann(PublishedByAnnotation), PublishedAt: at})
	}
	for t, d := range tags {
		ws, ok := strings.CutPrefix(t, proposedTagPrefix)
		lc := porchv1alpha1.LifecycleProposed
		if !ok {
			if ws, ok = strings.CutPrefix(t, draftTagPrefix); !ok {
				continue
			}
			lc = porchv1alpha1.LifecycleDraft
			if _, proposed := tags[proposedTagPrefix+ws]; proposed {
				continue
			}
		}
		if published[ws] || store.ValidateWorkspace(ws) != nil {
			continue
		}
		out = append(out, store.Revision{Package: p, Workspace: ws, Lifecycle: lc, Commit: d, Trailers: trailersOf(s.manifests[d])})
	}
	return out
}

// revisionNumber reads vN.
func revisionNumber(tag string) (int, bool) {
	m := revisionTag.FindStringSubmatch(tag)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

func trailersOf(m *manifest) store.Trailers {
	t := store.Trailers{}
	if raw := m.ann(TrailersAnnotation); raw != "" {
		_ = json.Unmarshal([]byte(raw), &t)
	}
	return t
}

// Get finds one revision: by workspace (revision 0) or by number.
func (s *Store) Get(ctx context.Context, p, workspace string, revision int) (store.Revision, error) {
	revs, _ := s.ListPackage(ctx, p)
	for _, rev := range revs {
		if (revision > 0 && rev.Revision == revision) || (revision == 0 && rev.Workspace == workspace) {
			return rev, nil
		}
	}
	what := "workspace " + workspace
	if revision > 0 {
		what = "revision v" + strconv.Itoa(revision)
	}
	return store.Revision{}, fmt.Errorf("package %s %s in %s: %w", p, what, s.URL(), store.ErrNotFound)
}

// Read returns the files of a revision (its layer, read once per digest).
func (s *Store) Read(ctx context.Context, rev store.Revision) (*pkg.Package, error) {
	s.mu.Lock()
	p, ok := s.contents[rev.Commit]
	m := s.manifests[rev.Commit]
	s.mu.Unlock()
	if ok {
		return p.DeepCopy(), nil
	}
	var err error
	err = s.exchange(ctx, "reading", func(opts []remote.Option) error {
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
	s.mu.Lock()
	if len(s.contents) >= maxContents {
		clear(s.contents)
	}
	s.contents[rev.Commit] = p
	s.mu.Unlock()
	return p.DeepCopy(), nil
}

// readLayer reads and checks a manifest's layer.
func (s *Store) readLayer(p string, m *manifest, opts []remote.Option) (*pkg.Package, error) {
	ref, err := s.reference(p, "@"+m.digest)
	if err != nil {
		return nil, err
	}
	max := s.opts.maxLayer()
	layer, err := remote.Layer(ref.Context().Digest(m.m.Layers[0].Digest.String()), opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return readPackageLayer(ref, m.digest, layer, max)
}

// ReadFile returns one file of a revision; the Kptfile comes from the
// manifest's annotation, without reading the layer.
func (s *Store) ReadFile(ctx context.Context, rev store.Revision, file string) ([]byte, error) {
	s.mu.Lock()
	m := s.manifests[rev.Commit]
	s.mu.Unlock()
	if m != nil && file == kptfileName {
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
	s.mu.Lock()
	m := s.manifests[rev.Commit]
	s.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("%s of %s: %w", rev.Commit, rev.Package, store.ErrNotFound)
	}
	at, _ := time.Parse(time.RFC3339, m.ann(WrittenAtAnnotation))
	return []store.Commit{{Hash: m.digest, Author: m.ann(AuthorAnnotation), Subject: m.ann(MessageAnnotation), Trailers: trailersOf(m), When: at}}, nil
}

// DraftFork is not known in a registry: "".
func (s *Store) DraftFork(ctx context.Context, rev store.Revision) (string, error) { return "", nil }

// SamePackage compares the layers of two manifests: the same files make
// the same layer.
func (s *Store) SamePackage(ctx context.Context, p, a, b string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ma, mb := s.manifests[a], s.manifests[b]
	if ma == nil || mb == nil {
		return ma == mb, nil
	}
	return ma.m.Layers[0].Digest == mb.m.Layers[0].Digest, nil
}

// current reads the digest a tag holds in the registry now ("" when
// absent).
func (s *Store) current(p, tag string, opts []remote.Option) (string, error) {
	ref, err := s.reference(p, ":"+tag)
	if err != nil {
		return "", err
	}
	d, err := remote.Head(ref, opts...)
	if err != nil {
		if notFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading %s:%s: %w", s.Image(p), tag, err)
	}
	return d.Digest.String(), nil
}

// expect fails with a ConflictError unless the tag holds want.
func (s *Store) expect(p, tag, want string, opts []remote.Option) error {
	got, err := s.current(p, tag, opts)
	if err != nil {
		return err
	}
	if got != want {
		return &store.ConflictError{Ref: s.Image(p) + ":" + tag, Expected: want, Actual: got}
	}
	return nil
}

// put uploads an artifact's blobs (once) and puts its manifest at tag,
// then reads the tag back: another writer's put in between is a conflict.
func (s *Store) put(p, tag string, a *artifact, opts []remote.Option) error {
	ref, err := s.reference(p, ":"+tag)
	if err != nil {
		return err
	}
	if err := a.push(ref, opts); err != nil {
		return err
	}
	return s.expect(p, tag, a.digest, opts)
}

// remove deletes a manifest (and every tag on it).
func (s *Store) remove(p, digest string, opts []remote.Option) error {
	ref, err := s.reference(p, "@"+digest)
	if err != nil {
		return err
	}
	if err := remote.Delete(ref, opts...); err != nil {
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("deleting %s (the registry must allow deletes): %w", ref, err)
	}
	return nil
}

// write runs one write: under the process's write lock, through the
// gate, then updates what the store knows of the package from the
// registry (success or not), so the next reader sees the outcome.
func (s *Store) write(ctx context.Context, p, what string, fn func(opts []remote.Option) error) error {
	if err := pkg.ValidPath(p); err != nil {
		return fmt.Errorf("package %q: %w", p, err)
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	err := s.exchange(ctx, what+" "+p+" in", fn)
	if rerr := s.refreshPackage(ctx, p); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// refreshPackage reads one package's tags again.
func (s *Store) refreshPackage(ctx context.Context, p string) error {
	bad := map[string]string{}
	var tags map[string]string
	err := s.exchange(ctx, "reading", func(opts []remote.Option) error {
		var err error
		tags, err = s.readTags(ctx, p, opts, bad)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteMovedLocked(p, tags)
	if len(tags) == 0 {
		delete(s.pkgs, p)
	} else {
		s.pkgs[p] = tags
	}
	for k := range s.bad {
		if strings.HasPrefix(k, p+":") {
			delete(s.bad, k)
		}
	}
	for k, v := range bad {
		s.bad[k] = v
	}
	s.rehashLocked()
	return nil
}

// tagsOf is what the store read of a package's tags.
func (s *Store) tagsOf(p string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for t, d := range s.pkgs[p] {
		out[t] = d
	}
	return out
}

// relabel builds a manifest over the blobs of an existing one with other
// revision annotations: a move through the lifecycle uploads no blob.
func relabel(from *manifest, ann map[string]string) (*artifact, error) {
	m := from.m
	m.Annotations = map[string]string{}
	for k, v := range from.m.Annotations {
		if !strings.HasPrefix(k, "dev.scion.revision.") {
			m.Annotations[k] = v
		}
	}
	for k, v := range ann {
		if v != "" {
			m.Annotations[k] = v
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &artifact{manifest: raw, digest: h.String()}, nil
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
	err := s.write(ctx, w.Package, "writing "+tag+" of", func(opts []remote.Option) error {
		known := s.tagsOf(w.Package)
		trailers := store.Trailers{}
		if w.Expected != "" {
			if err := s.expect(w.Package, tag, w.Expected, opts); err != nil {
				return err
			}
			if prev, err := s.manifestFor(ctx, w.Package, w.Expected, opts); err == nil {
				for k, v := range trailersOf(prev) {
					trailers[k] = v
				}
			}
		} else {
			if err := s.workspaceFree(ctx, w.Package, w.Workspace, known, w.CheckRemote, opts); err != nil {
				return err
			}
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
		if err := s.put(w.Package, tag, a, opts); err != nil {
			return err
		}
		if w.Expected != "" && w.Expected != a.digest {
			if err := s.remove(w.Package, w.Expected, opts); err != nil {
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

func marshalTrailers(t store.Trailers) string {
	data, _ := json.Marshal(t)
	return string(data)
}

// workspaceFree fails with a ConflictError when the workspace has a
// draft, a proposal or a published revision in the registry; with
// checkRemote, also when the registry has any tag of the package the
// store had not read.
func (s *Store) workspaceFree(ctx context.Context, p, ws string, known map[string]string, checkRemote bool, opts []remote.Option) error {
	bad := map[string]string{}
	tags, err := s.readTags(ctx, p, opts, bad)
	if err != nil {
		return err
	}
	for _, t := range []string{draftTagPrefix + ws, proposedTagPrefix + ws} {
		if d, ok := tags[t]; ok {
			return &store.ConflictError{Ref: s.Image(p) + ":" + t, Actual: d, Detail: "workspace " + ws + " is taken"}
		}
	}
	for t, d := range tags {
		if _, ok := revisionNumber(t); ok && s.manifests[d] != nil && s.manifests[d].ann(WorkspaceAnnotation) == ws {
			return &store.ConflictError{Ref: s.Image(p) + ":" + t, Actual: d, Detail: "workspace " + ws + " is published"}
		}
		if n, ok := revisionNumber(strings.TrimPrefix(t, retiredTagPrefix)); ok && strings.HasPrefix(t, retiredTagPrefix) && s.manifests[d] != nil && s.manifests[d].ann(WorkspaceAnnotation) == ws {
			return &store.RetiredError{Package: p, Workspace: ws, Revision: n}
		}
	}
	if checkRemote {
		for t, d := range tags {
			if known[t] != d {
				return &store.ConflictError{Ref: s.Image(p) + ":" + t, Expected: known[t], Actual: d, Detail: "the registry has a revision of the package this store had not read"}
			}
		}
	}
	return nil
}

// held reads the digest at tag, which must be there and, unless expected
// is "" (whatever is there), be expected: what a lifecycle move starts
// from. what names the stage in the not-found error.
func (s *Store) held(p, tag, expected, what string, opts []remote.Option) (string, error) {
	got, err := s.current(p, tag, opts)
	switch {
	case err != nil:
		return "", err
	case got == "":
		return "", fmt.Errorf("package %s %s in %s: %w", p, what, s.URL(), store.ErrNotFound)
	case expected != "" && got != expected:
		return "", &store.ConflictError{Ref: s.Image(p) + ":" + tag, Expected: expected, Actual: got}
	}
	return got, nil
}

// move relabels the manifest at from (which must hold expected, or
// anything when expected is "") with ann and puts it at to (which must be
// absent), then deletes the old one.
func (s *Store) move(ctx context.Context, p, from, to, expected string, ann func(*manifest) map[string]string, opts []remote.Option) (*artifact, error) {
	expected, err := s.held(p, from, expected, "has no "+from, opts)
	if err != nil {
		return nil, err
	}
	if err := s.expect(p, to, "", opts); err != nil {
		return nil, err
	}
	m, err := s.manifestFor(ctx, p, expected, opts)
	if err != nil {
		return nil, err
	}
	a, err := relabel(m, ann(m))
	if err != nil {
		return nil, err
	}
	if err := s.put(p, to, a, opts); err != nil {
		return nil, err
	}
	return a, s.remove(p, expected, opts)
}

// keep returns the revision annotations of m with some replaced.
func keep(m *manifest, set map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m.m.Annotations {
		if strings.HasPrefix(k, "dev.scion.revision.") {
			out[k] = v
		}
	}
	for k, v := range set {
		out[k] = v
	}
	return out
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
	err := s.write(ctx, p, "moving "+tag(from)+" of", func(opts []remote.Option) error {
		a, err := s.move(ctx, p, tag(from), tag(to), expected, func(m *manifest) map[string]string {
			set := map[string]string{LifecycleAnnotation: string(to)}
			if t := trailersOf(m); record.By != "" || t[store.TrailerProposedBy] != "" {
				delete(t, store.TrailerProposedBy)
				delete(t, store.TrailerProposedAt)
				if record.By != "" {
					t[store.TrailerProposedBy] = record.By
					t[store.TrailerProposedAt] = record.At.UTC().Format(time.RFC3339)
				}
				set[TrailersAnnotation] = marshalTrailers(t)
			}
			return keep(m, set)
		}, opts)
		if err != nil {
			return err
		}
		m, err := s.manifestFor(ctx, p, a.digest, opts)
		if err != nil {
			return err
		}
		out = store.Revision{Package: p, Workspace: ws, Lifecycle: to, Commit: a.digest, Trailers: trailersOf(m)}
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
	err := s.write(ctx, p, "publishing", func(opts []remote.Option) error {
		tags, err := s.readTags(ctx, p, opts, map[string]string{})
		if err != nil {
			return err
		}
		ptag := proposedTagPrefix + ws
		switch {
		case tags[ptag] == "":
			return fmt.Errorf("package %s workspace %s is not Proposed: %w", p, ws, store.ErrNotFound)
		case expected == "":
			expected = tags[ptag]
		case tags[ptag] != expected:
			return &store.ConflictError{Ref: s.Image(p) + ":" + ptag, Expected: expected, Actual: tags[ptag]}
		}
		next := 1
		for t := range tags {
			if n, ok := revisionNumber(strings.TrimPrefix(t, retiredTagPrefix)); ok {
				next = max(next, n+1) // a deleted revision's number too
			}
		}
		m, err := s.manifestFor(ctx, p, expected, opts)
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
		now := time.Now().UTC().Truncate(time.Second)
		a, err := s.move(ctx, p, ptag, revisionTagName(next), expected, func(m *manifest) map[string]string {
			return map[string]string{WorkspaceAnnotation: ws, RevisionAnnotation: strconv.Itoa(next), TrailersAnnotation: marshalTrailers(trailers),
				PublishedByAnnotation: publishedBy, PublishedAtAnnotation: now.Format(time.RFC3339)}
		}, opts)
		if err != nil {
			return err
		}
		out = store.Revision{Package: p, Workspace: ws, Revision: next, Lifecycle: porchv1alpha1.LifecyclePublished, Commit: a.digest,
			Latest: true, Trailers: trailers, PublishedBy: publishedBy, PublishedAt: now}
		// The same manifest under latest: a put of its bytes, no blob
		// moves. A crash before it leaves latest on the revision before,
		// until the next publication or deletion of the package.
		return s.put(p, LatestTag, a, opts)
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
	err := s.write(ctx, p, "marking "+vtag+" of", func(opts []remote.Option) error {
		d, err := s.current(p, vtag, opts)
		if err != nil {
			return err
		}
		if d == "" {
			return fmt.Errorf("package %s revision %s in %s: %w", p, vtag, s.URL(), store.ErrNotFound)
		}
		current, err := s.current(p, mark, opts)
		if err != nil {
			return err
		}
		lc := porchv1alpha1.LifecyclePublished
		switch {
		case propose && current == "":
			m, err := s.manifestFor(ctx, p, d, opts)
			if err != nil {
				return err
			}
			a, err := relabel(m, keep(m, map[string]string{LifecycleAnnotation: string(porchv1alpha1.LifecycleDeletionProposed)}))
			if err != nil {
				return err
			}
			if err := s.put(p, mark, a, opts); err != nil {
				return err
			}
			lc = porchv1alpha1.LifecycleDeletionProposed
		case propose:
			lc = porchv1alpha1.LifecycleDeletionProposed
		case current != "":
			if err := s.remove(p, current, opts); err != nil {
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
	return s.write(ctx, rev.Package, "deleting", func(opts []remote.Option) error {
		tag := s.RefName(rev)
		if err := s.expect(rev.Package, tag, rev.Commit, opts); err != nil {
			return err
		}
		if rev.Revision > 0 {
			tags, err := s.readTags(ctx, rev.Package, opts, map[string]string{})
			if err != nil {
				return err
			}
			for t, d := range tags {
				if n, ok := revisionNumber(t); ok && n != rev.Revision && d == rev.Commit {
					return fmt.Errorf("revision %s of %s shares its manifest %s with %s: a registry deletes a manifest with every tag on it; delete both, or re-publish one: %w", tag, rev.Package, rev.Commit, t, pkgInvalid)
				}
			}
			if d := tags[deletionProposedTagPrefix+tag]; d != "" {
				if err := s.remove(rev.Package, d, opts); err != nil {
					return err
				}
			}
			if err := s.remove(rev.Package, rev.Commit, opts); err != nil {
				return err
			}
			if err := s.retire(rev, writer, opts); err != nil {
				return err
			}
			if tags[LatestTag] != rev.Commit {
				return nil
			}
			// The registry deleted latest with the newest revision's
			// manifest: it goes to the newest one left.
			newest, digest := 0, ""
			for t, d := range tags {
				if n, ok := revisionNumber(t); ok && n != rev.Revision && n > newest {
					newest, digest = n, d
				}
			}
			if digest == "" {
				return nil
			}
			m, err := s.manifestFor(ctx, rev.Package, digest, opts)
			if err != nil {
				return err
			}
			return s.tag(rev.Package, LatestTag, m, opts)
		}
		return s.remove(rev.Package, rev.Commit, opts)
	})
}

// retire tags retired.vN for a deleted published revision: a package of
// a Kptfile only, annotated with the revision's number and workspace (its own
// manifest, which no other tag shares).
func (s *Store) retire(rev store.Revision, writer string, opts []remote.Option) error {
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
	return s.put(rev.Package, retiredTagPrefix+revisionTagName(rev.Revision), a, opts)
}

// pkgInvalid marks errors a retry cannot fix.
var pkgInvalid = errors.New("not possible in an OCI registry")

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
	err := s.write(ctx, p, "tagging", func(opts []remote.Option) error {
		d, err := s.current(p, revisionTagName(revision), opts)
		if err != nil {
			return err
		}
		if d == "" {
			return fmt.Errorf("package %s revision v%d in %s: %w", p, revision, s.URL(), store.ErrNotFound)
		}
		current, err := s.current(p, tag, opts)
		if err != nil {
			return err
		}
		if current != "" {
			if m, err := s.manifestFor(ctx, p, current, opts); err == nil {
				from, _ = strconv.Atoi(m.ann(RevisionAnnotation))
			}
		}
		if current == d {
			return nil
		}
		m, err := s.manifestFor(ctx, p, d, opts)
		if err != nil {
			return err
		}
		if err := s.expect(p, tag, current, opts); err != nil {
			return err
		}
		if err := s.tag(p, tag, m, opts); err != nil {
			return err
		}
		return s.expect(p, tag, d, opts)
	})
	return from, err
}

// tag puts a manifest the registry has under another tag of p (its
// bytes only: no blob moves).
func (s *Store) tag(p, tag string, m *manifest, opts []remote.Option) error {
	ref, err := s.reference(p, ":"+tag)
	if err != nil {
		return err
	}
	if err := remote.Put(ref, rawManifest{m.raw}, opts...); err != nil {
		return fmt.Errorf("tagging %s:%s: %w", s.Image(p), tag, err)
	}
	return nil
}

func isLifecycleTag(t string) bool {
	return strings.HasPrefix(t, draftTagPrefix) || strings.HasPrefix(t, proposedTagPrefix) || strings.HasPrefix(t, deletionProposedTagPrefix) || strings.HasPrefix(t, retiredTagPrefix)
}

// FloatingTags returns a package's tags that are not vN nor lifecycle
// tags (semantic versions such as 1.4.0 included, as in git), with the
// revision each points at (0: none).
func (s *Store) FloatingTags(ctx context.Context, p string) (map[string]int, error) {
	tags := s.tagsOf(p)
	byDigest := map[string]int{}
	for t, d := range tags {
		if n, ok := revisionNumber(t); ok {
			byDigest[d] = n
		}
	}
	out := map[string]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, d := range tags {
		if _, ok := revisionNumber(t); ok || isLifecycleTag(t) || t == LatestTag || store.ValidateFloatingTag(t) != nil {
			continue
		}
		out[t] = byDigest[d]
	}
	return out, nil
}

// ResolveFloatingTag finds the published revision a tag points at.
func (s *Store) ResolveFloatingTag(ctx context.Context, p, tag string) (store.Revision, error) {
	d, ok := s.tagsOf(p)[tag]
	if !ok {
		return store.Revision{}, fmt.Errorf("package %s has no tag %s in %s: %w", p, tag, s.URL(), store.ErrNotFound)
	}
	revs, _ := s.ListPackage(ctx, p)
	for _, rev := range revs {
		if rev.Revision > 0 && rev.Commit == d {
			return rev, nil
		}
	}
	return store.Revision{}, fmt.Errorf("the tag %s of package %s in %s is on no published revision: %w", tag, p, s.URL(), store.ErrNotFound)
}
