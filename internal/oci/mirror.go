package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// Mirrored is what a mirror did with one published revision.
type Mirrored struct {
	// Package and Revision name the revision; Ref is where it is in the
	// registry, Digest its artifact's digest.
	Package  string
	Revision int
	Ref      string
	Digest   string
	// Pushed is false when the registry had it already.
	Pushed bool
}

// ErrTagTaken is returned when a published revision's tag in the registry
// holds other content: published revisions are immutable, and a mirror
// never moves their tags.
var ErrTagTaken = errors.New("the tag holds other content")

// MirrorGit copies every published revision of the git repository st into
// the registry under prefix (REGISTRY/PATH): package P's revision N at
// PREFIX/P:vN. It is idempotent: a revision already there (same digest)
// is left alone; a tag holding other content is an ErrTagTaken error for
// that revision, and the others are still copied. Run it again to copy
// what was published since.
func MirrorGit(ctx context.Context, st *store.Repository, prefix string, o Options) ([]Mirrored, error) {
	if err := st.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("fetching %s: %w", st.URL(), err)
	}
	revs, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := o.context(ctx)
	defer cancel()
	opts := o.remote(ctx)
	var out []Mirrored
	var errs []error
	for _, rev := range revs {
		if rev.Lifecycle != porchv1alpha1.LifecyclePublished && rev.Lifecycle != porchv1alpha1.LifecycleDeletionProposed {
			continue
		}
		m, err := mirrorRevision(ctx, st, rev, prefix, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s revision %d: %w", rev.Package, rev.Revision, err))
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

// mirrorRevision copies one published revision unless it is there.
func mirrorRevision(ctx context.Context, st *store.Repository, rev store.Revision, prefix string, opts []remote.Option) (Mirrored, error) {
	tag := fmt.Sprintf("%s/%s:v%d", strings.TrimSuffix(prefix, "/"), rev.Package, rev.Revision)
	ref, err := name.ParseReference(tag, name.StrictValidation)
	if err != nil {
		return Mirrored{}, fmt.Errorf("%s cannot be an OCI reference (repository paths are lower case letters, digits and . _ -): %w", tag, err)
	}
	p, err := st.Read(ctx, rev)
	if err != nil {
		return Mirrored{}, err
	}
	a, err := build(rev.Package, p)
	if err != nil {
		return Mirrored{}, err
	}
	m := Mirrored{Package: rev.Package, Revision: rev.Revision, Ref: Scheme + ref.String(), Digest: a.digest}
	d, err := remote.Head(ref, opts...)
	var terr *transport.Error
	switch {
	case err == nil && d.Digest.String() == a.digest:
		return m, nil
	case err == nil:
		return Mirrored{}, fmt.Errorf("%w: %s is %s, the revision makes %s; published revisions are immutable, so the tag is left as it is", ErrTagTaken, m.Ref, d.Digest, a.digest)
	case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
	default:
		return Mirrored{}, fmt.Errorf("reading %s: %w", m.Ref, describe(err))
	}
	if err := a.push(ref, opts); err != nil {
		return Mirrored{}, err
	}
	m.Pushed = true
	return m, nil
}
