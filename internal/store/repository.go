package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/scion-dev/scion/internal/pkg"
)

// Credentials authenticate to a remote: over HTTP(S) either a user name
// and password (or token used as password), or a bearer token; over ssh
// a private key, with the known_hosts lines the remote's host key is
// checked against.
type Credentials struct {
	Username    string
	Password    string
	BearerToken string
	// SSHKey is a private key (PEM or OpenSSH), SSHPassphrase its
	// passphrase when it is encrypted.
	SSHKey        []byte
	SSHPassphrase string
	// KnownHosts are known_hosts lines; an ssh remote's host key must be
	// one of them.
	KnownHosts []byte
	// CABundle holds PEM certificates of authorities an https remote's
	// certificate may be signed by, beside the system's.
	CABundle []byte
}

// String never shows the secret.
func (c Credentials) String() string {
	switch {
	case len(c.SSHKey) > 0:
		return "ssh key"
	case c.BearerToken != "":
		return "bearer token"
	case c.Username != "" || c.Password != "":
		return "basic auth for " + c.Username
	default:
		return "none"
	}
}

// Options configure a Repository.
type Options struct {
	// URL of the remote: file://, http:// or https://.
	URL string
	// Branch holding published packages; "main" when empty.
	Branch string
	// Directory inside the repository holding the packages.
	Directory string
	// CreateBranch creates Branch on the remote when it is missing.
	CreateBranch bool
	// Credentials for HTTP(S) remotes.
	Credentials Credentials
	// Author and Email sign the commits Scion writes.
	Author, Email string
	// CacheDir is the folder of the local bare mirror; it is created when
	// missing and reused when present.
	CacheDir string
	// Timeout bounds each exchange with the remote (a fetch, a push);
	// DefaultTimeout when 0. A remote that does not answer in time fails
	// the operation with ErrTimeout instead of holding it.
	Timeout time.Duration
	// Objects keeps recent git objects in memory, within one bound shared
	// by the Repositories given the same cache; a cache of
	// DefaultObjectCacheSize of its own when nil.
	Objects *ObjectCache
	// Limits bound what the remote and the packages may make Scion hold
	// (DefaultLimits for fields not set).
	Limits Limits
	// ReadOnly opens a repository that is only read at refs the caller
	// names (ResolveRef), such as the source of a clone from a git URL:
	// Branch need not exist, and every push is refused.
	ReadOnly bool
	// Transport carries the exchanges with an http(s) remote
	// (http.DefaultTransport when nil): one that checks an egress policy
	// (egress.Policy.Transport).
	Transport http.RoundTripper
	// CheckHost checks an ssh remote's host before each connection
	// (egress.Policy.CheckHost), since go-git dials ssh itself; nil
	// checks nothing.
	CheckHost func(ctx context.Context, host string) error
	// Gate admits the exchanges with the remote; a new one when nil.
	// Passing the same Gate to the Repositories that replace one another
	// (after a change of settings, a restart of the cache) keeps the
	// backoff of a remote that does not answer.
	Gate *Gate
}

// DefaultTimeout bounds an exchange with a remote when Options.Timeout is
// not set.
const DefaultTimeout = 2 * time.Minute

// timeout is the bound of one exchange with the remote.
func (r *Repository) timeout() time.Duration {
	if r.opts.Timeout > 0 {
		return r.opts.Timeout
	}
	return DefaultTimeout
}

// withTimeout bounds ctx by the repository's timeout.
func (r *Repository) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.timeout())
}

// Repository is a git repository of packages, mirrored into a local cache.
// It is safe for concurrent use.
//
// Locking: r.mu guards the mirror (refs, objects, caches, the write
// queue) and is held only for local work, never across a network round
// trip, so reads never wait on the remote. Exchanges with the remote
// (fetches and pushes, which change the refs) go one at a time through the
// Gate, entered before r.mu is taken, and release r.mu while the remote
// works: a writer holding the Gate sees no ref change it did not make.
type Repository struct {
	opts      Options
	endpoint  *transport.Endpoint
	transport transport.Transport
	auth      transport.AuthMethod
	gate      *Gate

	mu     sync.Mutex
	repo   *git.Repository
	storer *cachedStorage
	meta   map[plumbing.Hash]revisionMeta // by ref value; objects never change
	// draftMeta is meta of each draft's and proposal's head, with the
	// trailers it inherits (see draftMetaFor).
	draftMeta map[draftKey]draftMeta
	// refs mirrors the local refs in memory: reloaded after every fetch
	// and updated with every push, so reads never walk the ref files.
	refs map[plumbing.ReferenceName]plumbing.Hash
	// refsVersion counts the changes of refs (RefsVersion).
	refsVersion uint64
	// fetchedAt is when the last successful fetch started: the refs are
	// at least that fresh.
	fetchedAt time.Time
	// queue holds draft writes waiting for their push; pushing says a
	// writer is pushing them (see pushQueued).
	queue   []*queuedWrite
	pushing bool
}

// Open opens (or creates) the local cache of a remote repository and
// fetches it. It fails with ErrRepositoryNotFound, ErrAuthentication or
// ErrBranchNotFound (unless CreateBranch, which then creates the branch).
func Open(ctx context.Context, opts Options) (_ *Repository, err error) {
	if opts.Branch == "" {
		opts.Branch = "main"
	}
	if opts.CacheDir == "" {
		return nil, errors.New("store: CacheDir is required")
	}
	if opts.Directory != "" {
		if err := pkg.ValidatePackagePath(opts.Directory); err != nil {
			return nil, fmt.Errorf("directory: %w", err)
		}
	}
	ep, err := endpoint(opts.URL)
	if err != nil {
		return nil, err
	}
	opts.Limits = opts.Limits.orDefaults()
	if len(opts.Credentials.CABundle) > 0 && ep.Protocol == "https" {
		if opts.Transport, err = WithCA(opts.Transport, opts.Credentials.CABundle); err != nil {
			return nil, fmt.Errorf("%s: %w", Redact(opts.URL), err)
		}
	}
	tr, err := newTransport(ep, opts.Transport, opts.Limits.FetchBytes, Redact(opts.URL))
	if err != nil {
		return nil, err
	}
	r := &Repository{opts: opts, endpoint: ep, transport: tr, gate: opts.Gate, meta: map[plumbing.Hash]revisionMeta{}}
	if r.gate == nil {
		r.gate = &Gate{}
	}
	switch {
	case ep.Protocol == "ssh":
		auth, err := sshAuth(ep, opts.Credentials, r.timeout())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Redact(opts.URL), err)
		}
		r.auth = auth
		r.transport = sshTransport(ep, opts.CheckHost, r.timeout())
	case opts.Credentials.BearerToken != "":
		r.auth = &githttp.TokenAuth{Token: opts.Credentials.BearerToken}
	case opts.Credentials.Username != "" || opts.Credentials.Password != "":
		r.auth = &githttp.BasicAuth{Username: opts.Credentials.Username, Password: opts.Credentials.Password}
	}
	if err := r.openCache(); err != nil {
		return nil, err
	}
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { unlock(err) }()
	if err = r.fetchLocked(ctx); err != nil {
		return nil, err
	}
	if _, ok := r.refs[r.branchRef()]; !ok && !opts.ReadOnly {
		if !opts.CreateBranch {
			return nil, fmt.Errorf("branch %q does not exist in %s; create it or set createBranch: %w", opts.Branch, Redact(opts.URL), ErrBranchNotFound)
		}
		if cerr := r.createBranchLocked(ctx); cerr != nil {
			// Someone else created it first: fine, if it is there now.
			if !errors.Is(cerr, ErrConflict) {
				return nil, cerr
			}
			if err = r.fetchLocked(ctx); err != nil {
				return nil, err
			}
			if _, ok := r.refs[r.branchRef()]; !ok {
				return nil, cerr
			}
		}
	}
	return r, nil
}

func (r *Repository) openCache() error {
	if err := os.MkdirAll(r.opts.CacheDir, 0o700); err != nil {
		return fmt.Errorf("creating cache %s: %w", r.opts.CacheDir, err)
	}
	shared := r.opts.Objects
	if shared == nil {
		shared = NewObjectCache(0)
	}
	objects := shared.view()
	st := newCachedStorage(filesystem.NewStorageWithOptions(osfs.New(r.opts.CacheDir), objects, filesystem.Options{KeepDescriptors: false}), objects)
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.Init(st, nil)
	}
	if err != nil {
		return fmt.Errorf("opening cache %s: %w", r.opts.CacheDir, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	cfg.Remotes = map[string]*config.RemoteConfig{"origin": {
		Name:  "origin",
		URLs:  []string{r.opts.URL},
		Fetch: mirrorRefSpecs,
	}}
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("configuring cache %s: %w", filepath.Base(r.opts.CacheDir), err)
	}
	r.repo, r.storer = repo, st
	return nil
}

// Trim frees the memory the repository keeps to read its packs (their
// indexes) when it has read no object since the last Trim and nothing is
// using it now, and says whether it did; the next read loads them again.
// It never waits: a repository in use is left alone. Called
// periodically for every open repository (repocache.Cache.Trim).
func (r *Repository) Trim() bool {
	if !r.mu.TryLock() {
		return false
	}
	defer r.mu.Unlock()
	return r.storer.forgetIdleIndexes()
}

// URL returns the remote URL without credentials.
func (r *Repository) URL() string { return Redact(r.opts.URL) }

// Branch returns the branch holding published packages.
func (r *Repository) Branch() string { return r.opts.Branch }

// Directory returns the folder of the packages inside the repository.
func (r *Repository) Directory() string { return r.opts.Directory }

func (r *Repository) branchRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.opts.Branch)
}

// Resync fetches (Fetch): one fetch brings every package's refs, those
// the repository wrote itself included.
func (r *Repository) Resync(ctx context.Context) error { return r.Fetch(ctx) }

// FetchPackage fetches (Fetch): one fetch brings every package's refs.
func (r *Repository) FetchPackage(ctx context.Context, _ string) error { return r.Fetch(ctx) }

// Fetch brings the local mirror up to date with the remote, including
// refs deleted there.
func (r *Repository) Fetch(ctx context.Context) (err error) {
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return err
	}
	defer func() { unlock(err) }()
	return r.fetchLocked(ctx)
}

// FetchIfOlder fetches unless the refs are fresher than maxAge (fetched,
// by any user of this Repository, less than maxAge ago). Reconciles that
// read the same repository in a burst share one fetch instead of making
// one each; a caller that waited for another's fetch uses its result.
func (r *Repository) FetchIfOlder(ctx context.Context, maxAge time.Duration) (err error) {
	fresh := func() bool { return !r.fetchedAt.IsZero() && time.Since(r.fetchedAt) < maxAge }
	r.mu.Lock()
	ok := fresh()
	r.mu.Unlock()
	if ok {
		return nil
	}
	unlock, err := r.lockRemote(ctx)
	if err != nil {
		return err
	}
	defer func() { unlock(err) }()
	if fresh() {
		return nil
	}
	return r.fetchLocked(ctx)
}

// lockRemote enters the gate, then takes r.mu; the function returned
// releases both, telling the gate how the exchange ended.
func (r *Repository) lockRemote(ctx context.Context) (func(error), error) {
	exit, err := r.gate.enter(ctx, r.URL())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	return func(err error) {
		r.mu.Unlock()
		exit(err)
	}, nil
}

// mirrorRefSpecs are the refs a mirror holds: branches, tags, the
// floating tags and the retired revision names.
var mirrorRefSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", "+" + floatingPrefix + "*:" + floatingPrefix + "*", "+" + retiredPrefix + "*:" + retiredPrefix + "*"}

// fetchLocked brings the mirror up to date: one advertisement, then, if
// the remote has objects the mirror lacks, one upload-pack exchange whose
// pack is spooled to a file. The caller has entered the gate and holds
// r.mu, which is released during both exchanges, so readers never wait on
// the network: only the mirror's refs and object store change, under the
// lock, once the remote has answered.
func (r *Repository) fetchLocked(ctx context.Context) error {
	r.gate.mark()
	started := time.Now()
	ctx, cancel := r.withTimeout(ctx)
	defer cancel()
	var (
		remote map[plumbing.ReferenceName]plumbing.Hash
		pack   *os.File
		err    error
	)
	r.unlocked(func() { remote, pack, err = r.download(ctx) })
	if pack != nil {
		defer func() {
			_ = pack.Close()
			_ = os.Remove(pack.Name())
		}()
	}
	if err != nil {
		return err
	}
	if pack != nil {
		if err := packfile.UpdateObjectStorage(r.storer, pack); err != nil {
			return fmt.Errorf("storing what was fetched from %s: %w", r.URL(), err)
		}
	}
	if err := r.mirrorRefsLocked(remote); err != nil {
		return err
	}
	r.fetchedAt = started
	if pack != nil {
		// Each fetch that brings objects adds a pack: a mirror Scion
		// only reads (an upstream people push to) would otherwise keep
		// them all, one more index in memory each.
		if err := r.storer.consolidate(); err != nil {
			return fmt.Errorf("merging the packs fetched from %s: %w", r.URL(), err)
		}
	}
	return nil
}

// download reads the remote's refs and, when it has objects the mirror
// lacks, downloads them into a temporary pack file (nil when nothing was
// needed). It runs without r.mu but for short local reads.
func (r *Repository) download(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, *os.File, error) {
	sess, err := r.transport.NewUploadPackSession(r.endpoint, r.auth)
	if err != nil {
		return nil, nil, r.remoteError("connecting to", err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[plumbing.ReferenceName]plumbing.Hash{}, nil, nil
	}
	if err != nil {
		return nil, nil, r.remoteError("fetching", err)
	}
	all, err := ar.AllReferences()
	if err != nil {
		return nil, nil, r.remoteError("fetching", err)
	}
	remote := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, ref := range all {
		if ref.Type() == plumbing.HashReference && mirrored(name) {
			remote[name] = ref.Hash()
		}
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	r.mu.Lock()
	wanted := map[plumbing.Hash]bool{}
	for _, h := range remote {
		if !wanted[h] && r.storer.HasEncodedObject(h) != nil {
			wanted[h] = true
			req.Wants = append(req.Wants, h)
		}
	}
	if len(req.Wants) > 0 {
		for _, h := range r.refs {
			req.Haves = append(req.Haves, h)
		}
	}
	r.mu.Unlock()
	if len(req.Wants) == 0 {
		return remote, nil, nil
	}
	res, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return remote, nil, nil
	}
	if err != nil {
		return nil, nil, r.remoteError("fetching", err)
	}
	defer res.Close()
	var body io.Reader = res
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		body = sideband.NewDemuxer(sideband.Sideband64k, res)
	case req.Capabilities.Supports(capability.Sideband):
		body = sideband.NewDemuxer(sideband.Sideband, res)
	}
	pack, err := os.CreateTemp(r.opts.CacheDir, "fetch-*.pack")
	if err != nil {
		return nil, nil, fmt.Errorf("spooling a fetch from %s: %w", r.URL(), err)
	}
	limited := &limitedReader{r: body, max: r.opts.Limits.FetchBytes, what: "the pack fetched from " + r.URL()}
	if _, err := io.Copy(pack, limited); err != nil {
		_ = pack.Close()
		_ = os.Remove(pack.Name())
		var over *LimitError
		if errors.As(err, &over) {
			return nil, nil, over
		}
		return nil, nil, r.remoteError("fetching", err)
	}
	if _, err := pack.Seek(0, io.SeekStart); err != nil {
		_ = pack.Close()
		_ = os.Remove(pack.Name())
		return nil, nil, err
	}
	return remote, pack, nil
}

// mirrored says whether a ref is one the mirror keeps (mirrorRefSpecs).
func mirrored(name plumbing.ReferenceName) bool {
	return name.IsBranch() || name.IsTag() || strings.HasPrefix(name.String(), floatingPrefix) || strings.HasPrefix(name.String(), retiredPrefix)
}

// mirrorRefsLocked makes the mirror's refs those of the remote: new and
// moved refs are set, refs the remote no longer has are removed.
func (r *Repository) mirrorRefsLocked(remote map[plumbing.ReferenceName]plumbing.Hash) error {
	if r.refs == nil {
		if err := r.loadRefsLocked(); err != nil {
			return err
		}
	}
	for name := range r.refs {
		if _, ok := remote[name]; !ok {
			if err := r.setLocalRef(name, plumbing.ZeroHash); err != nil {
				return err
			}
		}
	}
	for name, h := range remote {
		if r.refs[name] != h {
			if err := r.setLocalRef(name, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// unlocked runs fn without r.mu, which the caller holds.
func (r *Repository) unlocked(fn func()) {
	r.mu.Unlock()
	defer r.mu.Lock()
	fn()
}

// loadRefsLocked reads the local refs into memory.
func (r *Repository) loadRefsLocked() error {
	iter, err := r.storer.IterReferences()
	if err != nil {
		return fmt.Errorf("reading refs of the cache: %w", err)
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && mirrored(ref.Name()) {
			refs[ref.Name()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading refs of the cache: %w", err)
	}
	if !maps.Equal(r.refs, refs) {
		r.refsVersion++
	}
	r.refs = refs
	return nil
}

// RefsVersion changes whenever the mirror's branches or tags change (a
// fetch that brought something, a write): what was computed from the
// refs at one version holds while it stays.
func (r *Repository) RefsVersion() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refsVersion
}

func (r *Repository) createBranchLocked(ctx context.Context) error {
	if err := r.ensureEmptyTree(); err != nil {
		return err
	}
	msg, err := formatMessage("Initialize branch "+r.opts.Branch, Trailers{TrailerWriter: WriterRepository})
	if err != nil {
		return err
	}
	c, err := r.writeCommit(emptyTreeHash, nil, msg, r.signature(""))
	if err != nil {
		return err
	}
	if err := r.push(ctx, []refUpdate{{Name: r.branchRef(), New: c}}); err != nil {
		return fmt.Errorf("creating branch %q: %w", r.opts.Branch, err)
	}
	return nil
}

// ref returns the local value of a ref, zero when it does not exist.
func (r *Repository) ref(name plumbing.ReferenceName) plumbing.Hash {
	return r.refs[name]
}

func (r *Repository) setLocalRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	if h.IsZero() {
		if err := r.storer.RemoveReference(name); err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return fmt.Errorf("updating local ref %s: %w", name, err)
		}
		delete(r.refs, name)
		r.refsVersion++
		return nil
	}
	if err := r.storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return fmt.Errorf("updating local ref %s: %w", name, err)
	}
	r.refs[name] = h
	r.refsVersion++
	return nil
}

// iterRefs calls fn for every local branch and tag.
func (r *Repository) iterRefs(fn func(*plumbing.Reference) error) error {
	for name, h := range r.refs {
		if err := fn(plumbing.NewHashReference(name, h)); err != nil {
			return err
		}
	}
	return nil
}

// remoteError turns transport errors into the package's typed errors with
// a message naming the repository (never the credentials).
func (r *Repository) remoteError(op string, err error) error {
	return Remote{Noun: "remote", URL: Redact(r.opts.URL), Timeout: r.timeout(), Known: r.knownError,
		// The library's message may quote what the server sent, at any
		// length: kept short, and without the repository's secrets.
		Text: func(err error) string { return Shorten(r.scrub(err.Error()), maxRemoteText) },
	}.Classify(op, err)
}

// knownError is what git's transports say: a refusal of the credentials
// (for a push, or a read), a repository that is not there, an ssh host
// key or key that does not fit (nil: none of those).
func (r *Repository) knownError(op string, err error) error {
	u := Redact(r.opts.URL)
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		if strings.Contains(op, "push") {
			// Reading may well work: git serves reads and pushes
			// (upload-pack, receive-pack) under separate permissions.
			return fmt.Errorf("%s %s: the remote refused the push (credentials: %s; reading may be allowed): %w", op, u, r.credentialsUsed(), ErrAuthentication)
		}
		return fmt.Errorf("%s %s: the remote refused the credentials (%s): %w", op, u, r.credentialsUsed(), ErrAuthentication)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%s %s: %w", op, u, ErrRepositoryNotFound)
	case hostKeyError(err) != "":
		return &TextError{Msg: fmt.Sprintf("%s %s: %s", op, u, hostKeyError(err)), Err: err}
	case strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return fmt.Errorf("%s %s: the remote refused the ssh key (its public key is not authorized there, or for this user): %w", op, u, ErrAuthentication)
	}
	return nil
}

// credentialsUsed says which credentials an exchange used, never their
// value.
func (r *Repository) credentialsUsed() string {
	if c := r.opts.Credentials.String(); c != "none" {
		return c
	}
	if HasCredentials(r.opts.URL) {
		return "the user and password in the URL"
	}
	return "none"
}

// scrub removes the repository's secrets (a password or token, given as
// Credentials or in the URL) from a message, whatever library wrote it.
func (r *Repository) scrub(msg string) string {
	secrets := []string{r.opts.Credentials.Password, r.opts.Credentials.BearerToken, r.opts.Credentials.SSHPassphrase}
	if u, perr := url.Parse(r.opts.URL); perr == nil && u.User != nil {
		p, _ := u.User.Password()
		secrets = append(secrets, u.User.String(), p, url.QueryEscape(p))
	}
	for _, s := range secrets {
		if len(s) >= 3 {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
		}
	}
	return msg
}

// ValidateURL checks that a repository URL is one Scion can use: file://,
// http:// or https://. Its errors never show the URL's credentials.
func ValidateURL(raw string) error {
	_, err := endpoint(raw)
	return err
}

func endpoint(raw string) (*transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		// The parser's message may quote the URL.
		return nil, fmt.Errorf("invalid repository URL %s: it cannot be parsed", Redact(raw))
	}
	switch ep.Protocol {
	case "file", "http", "https", "ssh":
	default:
		return nil, fmt.Errorf("invalid repository URL %s: only https://, http://, ssh:// (or user@host:path) and file:// are supported", Redact(raw))
	}
	return ep, nil
}

// HasCredentials says whether a repository URL carries a password or
// token in its user information.
func HasCredentials(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// Redact removes any user information from a URL: the one way Scion
// prints a repository URL.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// ErrCABundle is matched by errors about a CA bundle that holds no
// certificate.
var ErrCABundle = errors.New("CA bundle")

// WithCA returns a copy of base (an *http.Transport, such as an egress
// policy's; http.DefaultTransport when nil) that trusts the certificate
// authorities of a PEM bundle beside the system's: a private CA of an
// https git server or a registry.
func WithCA(base http.RoundTripper, bundle []byte) (*http.Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	t, ok := base.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("a CA bundle needs an *http.Transport, not %T", base)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("the CA bundle holds no PEM certificate: %w", ErrCABundle)
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = pool
	return t, nil
}
