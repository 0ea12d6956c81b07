package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/scion-dev/scion/internal/lru"
)

// uploader puts a Store's blobs and manifests in a registry and deletes
// its manifests. A package's layer is small and nearly always new (a
// draft's files changed), so it is uploaded in two requests, the
// distribution specification's monolithic upload (POST for an upload
// session, PUT of the whole blob with its digest), instead of the
// registry client's four (HEAD to see whether the registry has it, POST,
// PATCH, PUT). A blob this uploader put in the same OCI repository before
// (the config of a package's next draft) is neither sent nor checked: a
// registry that has lost it since (a garbage collection after every
// manifest holding it was deleted) refuses the manifest naming it
// (MANIFEST_BLOB_UNKNOWN), and the blobs are uploaded again. Manifests go
// through the same authenticated transport, so that a new package costs
// the registry one ping for its writes, not two.
//
// A registry that asks for no token (basic authentication, or none) is
// pinged once for the store's life: its credentials are the same for
// every OCI repository, so one transport serves every package's writes,
// and another, which retries what failed for a moment, its reads
// (Store.exchange).
type uploader struct {
	opts Options
	// transports are authenticated for pushing and deleting, by OCI
	// repository: the registry's ping and any token exchange once per
	// repository, where the registry client pings again for every
	// delete.
	transports *lru.Cache[string, http.RoundTripper]
	// registry is what the registry's ping said (unscoped).
	registry struct {
		sync.Mutex
		pinged bool
		// writes and reads are the transports of a registry that asks
		// for no token; nil for one that does.
		writes, reads http.RoundTripper
	}
	// uploaded are the blobs this store put, as "repository@digest".
	uploaded *lru.Cache[string, struct{}]
}

// maxUploadTransports and maxUploadedBlobs bound what an uploader
// remembers: a transport (a few hundred bytes) for each package written
// in a fleet of tens of thousands of packages, and their config blobs.
const (
	maxUploadTransports = 1 << 15
	maxUploadedBlobs    = 1 << 15
)

func newUploader(o Options) *uploader {
	return &uploader{opts: o, transports: lru.New[string, http.RoundTripper](maxUploadTransports, 0),
		uploaded: lru.New[string, struct{}](maxUploadedBlobs, 0)}
}

// push uploads the artifact's blobs, then puts its manifest at ref; when
// the registry no longer has a blob it was not sent again, once more with
// every blob sent.
func (u *uploader) push(ctx context.Context, ref name.Reference, a *artifact) error {
	repo := ref.Context()
	for again := false; ; again = true {
		for _, b := range a.blobs {
			if err := u.upload(ctx, repo, b, again); err != nil {
				return fmt.Errorf("pushing to %s: %w", repo, describe(err))
			}
		}
		err := u.putManifest(ctx, ref, a.manifest)
		if !again && blobUnknown(err) {
			continue
		}
		return err
	}
}

// putManifest puts a manifest's bytes at ref (a tag).
func (u *uploader) putManifest(ctx context.Context, ref name.Reference, raw []byte) error {
	repo := ref.Context()
	rt, err := u.transport(ctx, repo, transport.PushScope)
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	at := &url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/manifests/" + ref.Identifier()}
	if _, err := send(ctx, &http.Client{Transport: rt}, http.MethodPut, at, raw, string(types.OCIManifestSchema1), http.StatusCreated); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, describe(err))
	}
	return nil
}

// blobUnknown says whether a registry refused a manifest for a blob it
// does not have.
func blobUnknown(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestBlobUnknownErrorCode || d.Code == transport.BlobUnknownErrorCode {
			return true
		}
	}
	return false
}

// upload puts one blob in repo, unless this uploader put it there before
// and again is false.
func (u *uploader) upload(ctx context.Context, repo name.Repository, blob v1.Layer, again bool) error {
	d, err := blob.Digest()
	if err != nil {
		return err
	}
	key := repo.String() + "@" + d.String()
	if _, ok := u.uploaded.Get(key); ok && !again {
		return nil
	}
	rc, err := blob.Compressed()
	if err != nil {
		return err
	}
	data, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		return err
	}
	rt, err := u.transport(ctx, repo, transport.PushScope)
	if err != nil {
		return err
	}
	c := &http.Client{Transport: rt}
	start := &url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/uploads/"}
	resp, err := send(ctx, c, http.MethodPost, start, nil, "", http.StatusAccepted)
	if err != nil {
		return err
	}
	loc, err := start.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return fmt.Errorf("the registry gave no upload location for %s", repo)
	}
	q := loc.Query()
	q.Set("digest", d.String())
	loc.RawQuery = q.Encode()
	if _, err := send(ctx, c, http.MethodPut, loc, data, "application/octet-stream", http.StatusCreated); err != nil {
		return err
	}
	u.uploaded.Add(key, struct{}{}, 0)
	return nil
}

// send makes one request, with a body of mediaType, and checks its
// status; the answer's body is drained.
func send(ctx context.Context, c *http.Client, method string, to *url.URL, body []byte, mediaType string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, to.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	if mediaType != "" {
		req.Header.Set("Content-Type", mediaType)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, want, http.StatusOK); err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp, nil
}

// remove deletes the manifest at digest from repo (and every tag on
// it); one the registry does not have is no error.
func (u *uploader) remove(ctx context.Context, repo name.Repository, digest string) error {
	rt, err := u.transport(ctx, repo, transport.DeleteScope)
	if err != nil {
		return err
	}
	at := &url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/manifests/" + digest}
	_, err = send(ctx, &http.Client{Transport: rt}, http.MethodDelete, at, nil, "", http.StatusAccepted)
	if notFound(err) {
		return nil
	}
	return err
}

// transport is an authenticated transport for repo with scope
// (transport.PushScope, transport.DeleteScope). One transport of
// DeleteScope (push, pull and delete) serves both, so that a package
// written and then updated (which deletes the manifest it replaced)
// costs the registry one ping and one token exchange: a token service
// grants what the credentials allow of what is asked. One that refuses
// deletes outright is asked for push alone, for pushes (a delete fails).
// A registry that asks for no token has one transport for every
// repository (unscoped).
func (u *uploader) transport(ctx context.Context, repo name.Repository, scope string) (http.RoundTripper, error) {
	if writes, _, err := u.unscoped(ctx, repo.Registry); err != nil || writes != nil {
		return writes, err
	}
	all, pushOnly := repo.String(), repo.String()+" push"
	if rt, ok := u.transports.Get(all); ok {
		return rt, nil
	}
	if rt, ok := u.transports.Get(pushOnly); ok && scope == transport.PushScope {
		return rt, nil
	}
	auth, err := u.credentials(ctx, repo)
	if err != nil {
		return nil, err
	}
	base := u.base()
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, base, []string{repo.Scope(transport.DeleteScope)})
	if err == nil {
		u.transports.Add(all, rt, 0)
		return rt, nil
	}
	if scope == transport.DeleteScope {
		return nil, err // what was just refused
	}
	if rt, err = transport.NewWithContext(ctx, repo.Registry, auth, base, []string{repo.Scope(transport.PushScope)}); err != nil {
		return nil, err
	}
	u.transports.Add(pushOnly, rt, 0)
	return rt, nil
}

// unscoped returns the transports for the writes and the reads of every
// OCI repository of a registry that asks for no token, pinging it the
// first time; both nil for a registry that asks for tokens, whose
// transports are scoped to one OCI repository each. The credentials are
// the registry's: both keychains Scion gives a store (a Repository's
// Secret, the Docker config file) answer by registry host.
func (u *uploader) unscoped(ctx context.Context, reg name.Registry) (writes, reads http.RoundTripper, err error) {
	r := &u.registry
	r.Lock()
	defer r.Unlock()
	if r.pinged {
		return r.writes, r.reads, nil
	}
	base := u.base()
	challenge, err := transport.Ping(ctx, reg, base)
	if err != nil {
		return nil, nil, err
	}
	if !strings.EqualFold(challenge.Scheme, "bearer") {
		auth, err := u.credentials(ctx, reg)
		if err != nil {
			return nil, nil, err
		}
		if r.writes, err = transport.NewWithContext(ctx, reg, auth, base, nil); err != nil {
			return nil, nil, err
		}
		// The registry client does not wrap a transport it is given
		// authenticated with its retries: a read the registry answered
		// for a moment with an error (or a network error) is tried
		// again, as the client's own are.
		retrying := transport.NewRetry(base, transport.WithRetryBackoff(readBackoff), transport.WithRetryStatusCodes(retriedStatuses...))
		if r.reads, err = transport.NewWithContext(ctx, reg, auth, retrying, nil); err != nil {
			r.writes = nil
			return nil, nil, err
		}
	}
	r.pinged = true
	return r.writes, r.reads, nil
}

// retriedStatuses are the registry's answers for which a read is tried
// again: a timeout, too many requests, and its or a proxy's failures;
// readBackoff is when: 1 s and then 3 s later (the registry client's
// defaults, which a token registry's reads have).
var (
	retriedStatuses = []int{http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
	readBackoff = transport.Backoff{Duration: time.Second, Factor: 3, Jitter: 0.1, Steps: 3}
)

// forgetPing has the next exchange ping the registry again: after it
// refused the credentials, as a registry whose authentication changed
// would.
func (u *uploader) forgetPing() {
	r := &u.registry
	r.Lock()
	r.pinged, r.writes, r.reads = false, nil, nil
	r.Unlock()
}

// credentials are the keychain's for target.
func (u *uploader) credentials(ctx context.Context, target authn.Resource) (authn.Authenticator, error) {
	auth, err := authn.Resolve(ctx, u.opts.keychain(), target)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", target, err)
	}
	return auth, nil
}

// base is the transport under the authentication.
func (u *uploader) base() http.RoundTripper {
	if u.opts.Transport != nil {
		return u.opts.Transport
	}
	return remote.DefaultTransport
}
