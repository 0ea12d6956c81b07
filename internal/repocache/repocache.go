// Package repocache keeps one opened store per Repository object (its git
// repository, or its prefix in an OCI registry), with credentials read
// from the Repository's Secret, and reopens it when the Repository's
// settings or the Secret change.
package repocache

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/store"
)

// Secret keys of git credentials: a user name and password (or token) or
// a bearer token over https; a private key (identity, as Flux names it,
// or ssh-privatekey, a kubernetes.io/ssh-auth Secret's, as Porch uses it)
// with known_hosts over ssh, the password then being the key's
// passphrase; and a CA bundle (caFile, as Flux names it, or ca.crt) for an
// https server or a registry whose certificate a private authority
// signed.
const (
	SecretUsernameKey      = "username"
	SecretPasswordKey      = "password"
	SecretBearerTokenKey   = "bearerToken"
	SecretSSHIdentityKey   = "identity"
	SecretSSHPrivateKeyKey = corev1.SSHAuthPrivateKey
	SecretKnownHostsKey    = "known_hosts"
	SecretCAFileKey        = "caFile"
	SecretCACrtKey         = "ca.crt"
)

// credentialKeys are the keys of a Secret credentials are read from.
var credentialKeys = []string{SecretUsernameKey, SecretPasswordKey, SecretBearerTokenKey, SecretSSHIdentityKey, SecretSSHPrivateKeyKey,
	SecretKnownHostsKey, SecretCAFileKey, SecretCACrtKey, corev1.DockerConfigJsonKey}

// caBundle is a Secret's CA bundle, if any.
func caBundle(s *corev1.Secret) []byte {
	if ca := s.Data[SecretCAFileKey]; len(ca) > 0 {
		return ca
	}
	return s.Data[SecretCACrtKey]
}

// ErrSecret is matched by errors about a Repository's credentials Secret
// (missing, or without usable keys).
var ErrSecret = errors.New("credentials secret")

// DefaultOpenWait is how long Open waits for another reconcile's open of
// the same Repository before it returns store.ErrBusy: long enough for an
// ordinary fetch to finish, short enough that a hung remote costs other
// workers little.
const DefaultOpenWait = time.Second

// ErrURLNotAllowed is matched by errors about a repository URL the
// controller refuses: file:// when file repositories are not allowed, or
// one inside the controller's own state.
var ErrURLNotAllowed = errors.New("repository URL not allowed")

// Cache holds the opened repositories. It is safe for concurrent use;
// operations on different repositories run in parallel.
type Cache struct {
	// Reader reads Secrets: in the controller, a namedwatch.Reader (one
	// watch per Secret a Repository names, so no open reads the API
	// server, and no other Secret is ever held).
	Reader client.Reader
	// Dir is the root folder of the local git mirrors.
	Dir string
	// Timeout bounds each exchange with a remote (store.Options.Timeout).
	Timeout time.Duration
	// Limits bound what a remote and its packages may make Scion hold
	// (store.Options.Limits).
	Limits store.Limits
	// OpenWait bounds how long Open waits behind another reconcile's open
	// of the same Repository (DefaultOpenWait when 0): a slow remote then
	// costs the waiting worker only that, not the whole open.
	OpenWait time.Duration
	// AllowFileRepositories lets Repositories use file:// URLs: a path on
	// the controller's file system, which is for development and tests
	// (scion dev turns it on). Even then, no URL may point into Dir.
	AllowFileRepositories bool
	// OCITransport carries the requests to OCI registries
	// (http.DefaultTransport when nil): where a test trusts its
	// registry's CA.
	OCITransport http.RoundTripper
	// Egress is the policy every remote a Repository, clone source or
	// registry names is checked against (URLs at open, addresses at each
	// connection); nil allows every address.
	Egress *egress.Policy
	// Objects keeps recent git objects in memory within one bound for
	// every repository (store.Options.Objects); one of
	// store.DefaultObjectCacheSize when nil.
	Objects *store.ObjectCache

	mu    sync.Mutex
	repos map[types.NamespacedName]*entry
	// catalogs shares the reads of a registry's catalog between the
	// OCI Repositories read with the same credentials.
	catalogs oci.Catalogs
	// blobs keeps the package layers the OCI stores wrote and read.
	blobs oci.Blobs
	// gitHTTP and registryHTTP carry the exchanges with remotes and
	// registries under Egress (transports).
	gitHTTP, registryHTTP http.RoundTripper
	key                   []byte // names the mirrors, see mirrorDir
}

type entry struct {
	lock chan struct{} // holds a token while the entry is being opened
	held time.Time     // when lock was taken (guarded by Cache.mu)
	hash string        // of the settings the store was opened with
	repo store.Store
	// gate admits the exchanges with the remote, across reopenings with
	// the same URL (see store.Gate).
	gate    *store.Gate
	gateURL string
}

// Open returns the store of a Repository, opening (and fetching) it when it
// is not open yet or its settings or credentials changed: its git
// repository, or its prefix in an OCI registry (spec.type oci).
func (c *Cache) Open(ctx context.Context, r *configv1alpha1.Repository) (store.Store, error) {
	if r.Spec.Type == configv1alpha1.OCIRepositoryType || r.Spec.OCI != nil {
		return c.openOCI(ctx, r)
	}
	if r.Spec.Git == nil {
		return nil, fmt.Errorf("repository %s/%s has no spec.git", r.Namespace, r.Name)
	}
	secret := r.Spec.Git.SecretRef.SecretName()
	creds, secretVersion, err := c.credentials(ctx, r.Namespace, secret, "spec.git.secretRef")
	if err != nil {
		return nil, err
	}
	e := c.entry(types.NamespacedName{Namespace: r.Namespace, Name: r.Name})
	objects := c.objects()

	g := r.Spec.Git
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%t\x00%s\x00%s\x00%s", g.Repo, g.Branch, g.Dir(), g.CreateBranch, g.Author, g.Email, secretVersion)))
	hash := hex.EncodeToString(h[:8])
	if err := c.acquire(ctx, e); err != nil {
		return nil, fmt.Errorf("repository %s/%s is being opened by another reconcile (its remote %s is slow): %w", r.Namespace, r.Name, store.Redact(g.Repo), err)
	}
	defer func() { <-e.lock }()
	if e.repo != nil && e.hash == hash {
		return e.repo, nil
	}
	if err := c.checkURL(g.Repo, "spec.git.repo"); err != nil {
		return nil, err
	}
	dir, err := c.mirrorDir(r)
	if err != nil {
		return nil, err
	}
	if e.gate == nil || e.gateURL != g.Repo {
		e.gate, e.gateURL = &store.Gate{}, g.Repo
	}
	start := time.Now()
	repo, err := store.Open(ctx, store.Options{
		URL: g.Repo, Branch: g.Branch, Directory: g.Dir(), CreateBranch: g.CreateBranch,
		Credentials: creds, Author: g.Author, Email: g.Email,
		CacheDir: dir, Timeout: c.Timeout, Limits: c.Limits, Gate: e.gate, Objects: objects, Transport: c.transports().git, CheckHost: c.Egress.CheckHost,
	})
	metrics.ObserveGit("open", start, &err)
	if err != nil {
		return nil, err
	}
	e.repo, e.hash = repo, hash
	return repo, nil
}

// objects is the object cache every store of c shares, made when first
// needed.
func (c *Cache) objects() *store.ObjectCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Objects == nil {
		c.Objects = store.NewObjectCache(0)
	}
	return c.Objects
}

// ErrDeleting is returned for a Repository being deleted: nothing is
// written through it any more.
var ErrDeleting = errors.New("the Repository is being deleted")

// OpenNamed reads the Repository ns/name with reader and opens its store:
// the one way a reconciler goes from a Repository's name to its git.
// Errors name the Repository; a missing one is apierrors.IsNotFound, one
// being deleted ErrDeleting.
func (c *Cache) OpenNamed(ctx context.Context, reader client.Reader, ns, name string) (*configv1alpha1.Repository, store.Store, error) {
	repo := &configv1alpha1.Repository{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, repo); err != nil {
		return nil, nil, fmt.Errorf("repository %s: %w", name, err)
	}
	if !repo.DeletionTimestamp.IsZero() {
		return nil, nil, fmt.Errorf("repository %s: %w", name, ErrDeleting)
	}
	st, err := c.Open(ctx, repo)
	if err != nil {
		return nil, nil, fmt.Errorf("repository %s: %w", name, err)
	}
	return repo, st, nil
}

// acquire takes the entry's lock, waiting at most OpenWait from when
// another reconcile took it (store.ErrBusy after that, at once when the
// other open has already taken that long).
func (c *Cache) acquire(ctx context.Context, e *entry) error {
	took := func() {
		c.mu.Lock()
		e.held = time.Now()
		c.mu.Unlock()
	}
	select {
	case e.lock <- struct{}{}:
		took()
		return nil
	default:
	}
	wait := c.OpenWait
	if wait <= 0 {
		wait = DefaultOpenWait
	}
	c.mu.Lock()
	wait -= time.Since(e.held)
	c.mu.Unlock()
	if wait <= 0 {
		return store.ErrBusy
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case e.lock <- struct{}{}:
		took()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return store.ErrBusy
	}
}

// checkURL refuses file:// URLs unless allowed, and any that resolves into
// the controller's own state (another tenant's mirrors); errors name
// field.
func (c *Cache) checkURL(raw, field string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" {
		if err := c.Egress.CheckURL(raw); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		return nil // store.Open says what is wrong with other URLs
	}
	if !c.AllowFileRepositories {
		return fmt.Errorf("%s: file:// repositories are turned off in this controller (--allow-file-repositories is for development): %w", field, ErrURLNotAllowed)
	}
	p := filepath.Clean(u.Path)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	dir := filepath.Clean(c.Dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s: %s is inside the controller's own state: %w", field, u.Path, ErrURLNotAllowed)
	}
	return nil
}

// httpTransports are the transports of a Cache's exchanges.
type httpTransports struct{ git, registry http.RoundTripper }

// transports returns the transports of git remotes and registries, the
// egress policy's checks on them, made when first needed.
func (c *Cache) transports() httpTransports {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gitHTTP == nil {
		c.gitHTTP = c.Egress.Transport(http.DefaultTransport.(*http.Transport))
		c.registryHTTP = c.OCITransport
		if t, ok := c.OCITransport.(*http.Transport); ok {
			c.registryHTTP = c.Egress.Transport(t)
		} else if c.OCITransport == nil {
			c.registryHTTP = c.gitHTTP
		}
	}
	return httpTransports{git: c.gitHTTP, registry: c.registryHTTP}
}

// TrimPeriod is how often the controller trims the open repositories: a
// repository nothing read for one to two periods frees its pack indexes.
const TrimPeriod = 30 * time.Second

// Trim frees the pack indexes of the open repositories that read nothing
// since the last Trim (store.Repository.Trim) and returns how many did.
func (c *Cache) Trim() int {
	c.mu.Lock()
	repos := make([]store.Store, 0, len(c.repos))
	for _, e := range c.repos {
		// e.repo is written under e.lock, not c.mu: a store being
		// opened is skipped this time.
		select {
		case e.lock <- struct{}{}:
			if e.repo != nil {
				repos = append(repos, e.repo)
			}
			<-e.lock
		default:
		}
	}
	c.mu.Unlock()
	trimmed := 0
	for _, r := range repos {
		if r.Trim() {
			trimmed++
		}
	}
	return trimmed
}

// Forget drops a Repository's store (when the Repository is deleted).
func (c *Cache) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.repos, key)
}

// keyFile holds the key that names the mirrors, in Dir.
const keyFile = ".mirror-key"

// mirrorDir is the folder of a Repository's mirror: a keyed hash of its
// namespace, name and URL, so nobody can derive where another namespace's
// mirror lives from names they can read. The key is made once, at random,
// and kept in Dir, so mirrors survive restarts.
func (c *Cache) mirrorDir(r *configv1alpha1.Repository) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == nil {
		key, err := loadKey(filepath.Join(c.Dir, keyFile))
		if err != nil {
			return "", err
		}
		c.key = key
	}
	m := hmac.New(sha256.New, c.key)
	fmt.Fprintf(m, "%s\x00%s\x00%s", r.Namespace, r.Name, r.Spec.Git.Repo)
	return filepath.Join(c.Dir, hex.EncodeToString(m.Sum(nil)[:16])), nil
}

// loadKey reads the mirror key, creating it when missing.
func loadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	switch {
	case err == nil && len(key) < 32:
		return nil, fmt.Errorf("the mirror key %s is damaged: remove it (the mirrors are then fetched again)", path)
	case err == nil:
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading the mirror key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the mirror folder: %w", err)
	}
	// Another process may be writing one at the same time: the first
	// one written wins.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if key, err = os.ReadFile(path); err == nil && len(key) >= 32 {
			return key, nil
		}
		return nil, fmt.Errorf("reading the mirror key another process wrote: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the mirror key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing the mirror key: %w", err)
	}
	return key, f.Close()
}

// credentials reads the credentials Secret name in namespace, which field
// names (none when name is empty). The version returned changes whenever
// the Secret does.
func (c *Cache) credentials(ctx context.Context, namespace, name, field string) (store.Credentials, string, error) {
	if name == "" {
		return store.Credentials{}, "", nil
	}
	s := &corev1.Secret{}
	if err := c.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return store.Credentials{}, "", fmt.Errorf("secret %s/%s named by %s does not exist: %w", namespace, name, field, ErrSecret)
		}
		return store.Credentials{}, "", fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	creds := store.Credentials{CABundle: caBundle(s)}
	key := s.Data[SecretSSHIdentityKey]
	if len(key) == 0 {
		key = s.Data[SecretSSHPrivateKeyKey]
	}
	switch {
	case len(key) > 0:
		creds.SSHKey, creds.SSHPassphrase, creds.KnownHosts = key, string(s.Data[SecretPasswordKey]), s.Data[SecretKnownHostsKey]
		if len(creds.KnownHosts) == 0 {
			return store.Credentials{}, "", fmt.Errorf("secret %s/%s named by %s has an ssh key but no %q: host keys are always checked; add the server's line (ssh-keyscan -p PORT HOST prints it): %w", namespace, name, field, SecretKnownHostsKey, ErrSecret)
		}
	case len(s.Data[SecretBearerTokenKey]) > 0 || len(s.Data[SecretPasswordKey]) > 0:
		creds.Username, creds.Password, creds.BearerToken = string(s.Data[SecretUsernameKey]), string(s.Data[SecretPasswordKey]), string(s.Data[SecretBearerTokenKey])
	case len(creds.CABundle) == 0:
		return store.Credentials{}, "", fmt.Errorf("secret %s/%s named by %s has none of %q, %q, %q (with %q) and %q: %w", namespace, name, field,
			SecretPasswordKey, SecretBearerTokenKey, SecretSSHIdentityKey, SecretKnownHostsKey, SecretCAFileKey, ErrSecret)
	}
	return creds, s.ResourceVersion, nil
}

// TrimSecret keeps of a Secret only what credentials are read from (the
// credential keys and a target cluster's kubeconfig keys, name, namespace and resourceVersion): what a watch of
// a Repository's Secret holds in memory.
func TrimSecret(s *corev1.Secret) {
	data := map[string][]byte{}
	keys := append(slices.Clone(credentialKeys), configv1alpha1.KubeConfigKeys...)
	for _, k := range keys {
		if v, ok := s.Data[k]; ok {
			data[k] = v
		}
	}
	s.Data, s.StringData = data, nil
	s.Annotations, s.Labels, s.ManagedFields, s.OwnerReferences = nil, nil, nil, nil
}
