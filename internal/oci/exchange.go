package oci

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/scion-dev/scion/internal/store"
)

// This file is a Store's exchanges with its registry: each through the
// gate and bounded in time, their errors given the store's meaning, and
// the reads of the catalog, of tags and of manifests.

// exchange runs fn through the gate with a context bounded by the
// timeout (which every request of fn carries) and the registry client's
// options.
func (s *Store) exchange(ctx context.Context, what string, fn func(ctx context.Context, opts []remote.Option) error) error {
	exit, err := s.gate.Enter(ctx, s.URL())
	if err != nil {
		return err
	}
	ctx, opts, cancel := s.opts.session(ctx)
	defer cancel()
	_, reads, err := s.uploader.unscoped(ctx, s.reg)
	if reads != nil {
		opts = append(opts, remote.WithTransport(reads))
	} else if err == nil {
		opts = append(opts, remote.Reuse(s.puller))
	}
	if err == nil {
		err = fn(ctx, opts)
	}
	err = s.registryError(ctx, what, err)
	if errors.Is(err, store.ErrAuthentication) {
		s.uploader.forgetPing()
	}
	exit(err)
	return err
}

// registryError gives registry errors the store's meaning
// (store.Remote): a timeout (or the exchange's deadline passed) is
// store.ErrTimeout, a refusal of the credentials store.ErrAuthentication,
// each naming the registry; a lost race, a missing tag and a repository
// that is no package are themselves.
func (s *Store) registryError(ctx context.Context, what string, err error) error {
	r := store.Remote{Noun: "registry", URL: s.URL(), Timeout: s.opts.timeout(), Text: answered}
	r.Known = func(op string, err error) error {
		var terr *transport.Error
		var already interface{ RaceLost() bool }
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return r.TimedOut(op)
		case errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden):
			return fmt.Errorf("%s %s: %w: %w", op, r.URL, store.ErrAuthentication, describe(err))
		case errors.As(err, &already) || errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrNotPackage):
			return err
		}
		return nil
	}
	return r.Classify(what, err)
}

// answered says what went wrong with an exchange by its class only: a
// registry's status and error codes, never the text or body that came
// with them (a tenant's registry URL may lead to a service that is no
// registry, whose body must not reach the tenant).
func answered(err error) string {
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

// notFound says whether a registry answered 404 (MANIFEST_UNKNOWN,
// NAME_UNKNOWN) to a request.
func notFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
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

// pkgInvalid marks errors a retry cannot fix.
var pkgInvalid = errors.New("not possible in an OCI registry")

// fetchMode says what a fetch reads.
type fetchMode struct {
	// catalog: every package under the prefix in the catalog, else
	// those known.
	catalog bool
	// verify: every tag is read; else the published and retired tags
	// already read are trusted (they never move but behind Scion's
	// back, which a verifying fetch notices).
	verify bool
	// skipWritten: the packages the store wrote since it last read
	// them are taken as written (Resync); their tags are read next time.
	skipWritten bool
}

// fetchLocked reads the tags of the packages as mode says, the caller
// holding s.writes. Every package is read again by the next fetch:
// none is skipped twice in a row.
func (s *Store) fetchLocked(ctx context.Context, mode fetchMode) error {
	pkgs := map[string]*pkgState{}
	bad := map[string]string{}
	// kept are the packages listed and skipped: what the store knows of
	// them stays.
	var skip, kept map[string]bool
	if mode.skipWritten {
		s.mu.Lock()
		skip = maps.Clone(s.written)
		s.mu.Unlock()
		kept = map[string]bool{}
	}
	err := s.exchange(ctx, "reading", func(ctx context.Context, opts []remote.Option) error {
		var names []string
		if mode.catalog {
			maxAge := catalogMaxAge
			if mode.verify {
				maxAge = catalogShareAge // Fetch
			}
			repos, err := s.opts.Catalogs.read(ctx, s.catalogKey(), s.opts.Catalogs.clock().Add(-maxAge), s.opts.Since, func() ([]string, error) {
				return catalog(s.reg, opts)
			})
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
			if skip[p] {
				kept[p] = true
				continue
			}
			ps, err := s.readTags(ctx, p, opts, bad, mode.verify)
			if err != nil {
				return err
			}
			pkgs[p] = ps
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, why := range s.bad {
		if p, _, _ := strings.Cut(k, ":"); kept[p] {
			bad[k] = why
		}
	}
	for p := range s.pkgs {
		if _, ok := pkgs[p]; !ok && !kept[p] {
			s.setPackageLocked(p, nil)
		}
	}
	for p, ps := range pkgs {
		s.setPackageLocked(p, ps)
	}
	clear(s.written)
	s.bad, s.fetched = bad, time.Now()
	if mode.catalog {
		s.catalogRead = s.fetched
	}
	return nil
}

// catalogKey is the key of the store's catalog reads in Catalogs: the
// registry and the credentials.
func (s *Store) catalogKey() string { return s.opts.CatalogKey + "\x00" + s.reg.Name() }

// FetchPackage reads package p's tags now (trusting the published ones
// read before), whether the catalog read lists it or not: a package
// another process or tool made is found at once.
func (s *Store) FetchPackage(ctx context.Context, p string) error {
	if _, err := s.reference(p, ":"+LatestTag); err != nil {
		return err
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	return s.refreshPackage(ctx, p)
}

// refreshPackage reads one package's tags again (trusting the published
// ones read before), the caller holding s.writes.
func (s *Store) refreshPackage(ctx context.Context, p string) error {
	bad := map[string]string{}
	var ps *pkgState
	err := s.exchange(ctx, "reading", func(ctx context.Context, opts []remote.Option) error {
		var err error
		ps, err = s.readTags(ctx, p, opts, bad, false)
		return err
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setPackageLocked(p, ps)
	s.setBadLocked(p, bad)
	delete(s.written, p)
	return nil
}

// repository is the OCI repository of package p.
func (s *Store) repository(p string) name.Repository {
	if s.path == "" {
		return s.reg.Repo(p)
	}
	return s.reg.Repo(s.path, p)
}

// readTags reads one package's tags, the digests they hold and the
// manifests not read before; tags that are not packages go to bad.
// Without verify, the published and retired tags the store read before
// are taken as they were (their names are listed, not each read).
func (s *Store) readTags(ctx context.Context, p string, opts []remote.Option, bad map[string]string, verify bool) (*pkgState, error) {
	s.mu.Lock()
	known := s.pkgs[p]
	s.mu.Unlock()
	repo := s.repository(p)
	names, err := remote.List(repo, opts...)
	ps := newPkgState()
	if err != nil {
		if notFound(err) {
			return ps, nil // every tag deleted
		}
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	for _, t := range names {
		if d, ok := known.tagOf(t); ok && !verify && immutableTag(t) {
			ps.set(t, known.manifests[d])
			continue
		}
		m, err := s.readTag(ctx, p, repo.Tag(t), opts, known, ps)
		switch {
		case errors.Is(err, ErrNotPackage):
			bad[p+":"+t] = err.Error()
		case err != nil:
			return nil, err
		case m != nil:
			ps.set(t, m)
		}
	}
	return ps, nil
}

// tagReads is how often readTag reads a tag whose manifest was deleted
// between the two requests.
const tagReads = 3

// readTag reads the manifest a tag holds; nil when the tag was deleted
// since it was listed. Another writer may move the tag and delete the
// manifest it held between the two requests (a draft updated, a proposal
// approved): the tag is then read again.
func (s *Store) readTag(ctx context.Context, p string, tag name.Tag, opts []remote.Option, known ...*pkgState) (*manifest, error) {
	for i := 1; ; i++ {
		d, err := remote.Head(tag, opts...)
		if notFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", tag, err)
		}
		m, err := s.manifestFor(ctx, p, d.Digest.String(), opts, known...)
		if notFound(err) && i < tagReads {
			continue
		}
		return m, err
	}
}

// manifestFor returns a manifest of p by digest: one known (to the store,
// or in the states given), else read from the registry.
func (s *Store) manifestFor(ctx context.Context, p, digest string, opts []remote.Option, known ...*pkgState) (*manifest, error) {
	for _, ps := range known {
		if m := ps.manifest(digest); m != nil {
			return m, nil
		}
	}
	s.mu.Lock()
	m := s.pkgs[p].manifest(digest)
	s.mu.Unlock()
	if m != nil {
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
	s.layers.Add(digest, m.layer(), 0)
	return m, nil
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
