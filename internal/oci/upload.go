package oci

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/scion-dev/scion/internal/lru"
)

// uploader puts a Store's blobs in a registry and deletes its manifests. A package's layer is small
// and nearly always new (a draft's files changed), so it is uploaded in
// two requests, the distribution specification's monolithic upload (POST
// for an upload session, PUT of the whole blob with its digest), instead
// of the registry client's four (HEAD to see whether the registry has it,
// POST, PATCH, PUT). A blob this store uploaded to the same OCI
// repository before (the config of a package's next draft) is checked
// first, the registry client's way, as it is likely there.
type uploader struct {
	opts   Options
	pusher *remote.Pusher // the store's, for the blobs checked first
	// transports are authenticated for pushing (or deleting), by OCI
	// repository and scope: the registry's ping and any token exchange
	// once per repository, where the registry client pings again for
	// every delete.
	transports *lru.Cache[string, http.RoundTripper]
	// uploaded are the blobs this store put, as "repository@digest".
	uploaded *lru.Cache[string, struct{}]
}

// maxUploadRepositories and maxUploadedBlobs bound what an uploader
// remembers.
const (
	maxUploadRepositories = 1024
	maxUploadedBlobs      = 1 << 14
)

func newUploader(o Options, pusher *remote.Pusher) *uploader {
	return &uploader{opts: o, pusher: pusher, transports: lru.New[string, http.RoundTripper](maxUploadRepositories, 0),
		uploaded: lru.New[string, struct{}](maxUploadedBlobs, 0)}
}

// push uploads the artifact's blobs, then puts its manifest at ref.
func (u *uploader) push(ctx context.Context, ref name.Reference, a *artifact, opts []remote.Option) error {
	repo := ref.Context()
	for _, b := range a.blobs {
		if err := u.upload(ctx, repo, b); err != nil {
			return fmt.Errorf("pushing to %s: %w", repo, describe(err))
		}
	}
	if err := remote.Put(ref, rawManifest{a.manifest}, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, describe(err))
	}
	return nil
}

// upload puts one blob in repo.
func (u *uploader) upload(ctx context.Context, repo name.Repository, blob v1.Layer) error {
	d, err := blob.Digest()
	if err != nil {
		return err
	}
	key := repo.String() + "@" + d.String()
	if _, ok := u.uploaded.Get(key); ok {
		return u.pusher.Upload(ctx, repo, blob) // checked first
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
	resp, err := send(ctx, c, http.MethodPost, start, nil, http.StatusAccepted)
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
	if _, err := send(ctx, c, http.MethodPut, loc, data, http.StatusCreated); err != nil {
		return err
	}
	u.uploaded.Add(key, struct{}{}, 0)
	return nil
}

// send makes one request and checks its status; the body is drained.
func send(ctx context.Context, c *http.Client, method string, to *url.URL, body []byte, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, to.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
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
	_, err = send(ctx, &http.Client{Transport: rt}, http.MethodDelete, at, nil, http.StatusAccepted)
	if notFound(err) {
		return nil
	}
	return err
}

// transport is an authenticated transport for repo with scope
// (transport.PushScope, transport.DeleteScope).
func (u *uploader) transport(ctx context.Context, repo name.Repository, scope string) (http.RoundTripper, error) {
	key := repo.String() + " " + scope
	if rt, ok := u.transports.Get(key); ok {
		return rt, nil
	}
	kc := u.opts.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	auth, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", repo, err)
	}
	base := u.opts.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, base, []string{repo.Scope(scope)})
	if err != nil {
		return nil, err
	}
	u.transports.Add(key, rt, 0)
	return rt, nil
}
