package pkgdeps

import (
	"context"
	"fmt"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/store"
)

// Package is a package of a deployment repository.
type Package struct {
	// Dir is its folder in the repository.
	Dir string
	// Rev is what the repository will hold: the newest draft or proposal
	// when there is one, else the newest published revision. Its package
	// and version are those of the upstream revision it was cloned from
	// (its Kptfile's upstreamLock, looked up in the catalog); a package
	// whose upstream the catalog does not have is named by its folder and
	// has no version. Its declaration is read from the package itself.
	Rev *deps.Revision
	// Lifecycle is Rev's.
	Lifecycle porchv1alpha1.Lifecycle
	// Published is the newest published revision's identity (nil: none).
	Published *deps.Revision
}

// Installed reads every package of a deployment repository.
func (r *Reader) Installed(ctx context.Context, st store.Store, cat *Catalog) ([]Package, error) {
	revs, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	type pair struct{ draft, published *store.Revision }
	byDir := map[string]*pair{}
	var dirs []string
	for i := range revs {
		rev := &revs[i]
		p := byDir[rev.Package]
		if p == nil {
			p = &pair{}
			byDir[rev.Package] = p
			dirs = append(dirs, rev.Package)
		}
		switch rev.Lifecycle {
		case porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed:
			if p.draft == nil || p.draft.Lifecycle == porchv1alpha1.LifecycleDraft && rev.Lifecycle == porchv1alpha1.LifecycleProposed {
				p.draft = rev // a proposal is nearer publication than a draft
			}
		case porchv1alpha1.LifecyclePublished:
			if p.published == nil || rev.Revision > p.published.Revision {
				p.published = rev
			}
		}
	}
	out := make([]Package, 0, len(dirs))
	for _, dir := range dirs {
		p := byDir[dir]
		var pkg Package
		pkg.Dir = dir
		if p.published != nil {
			if pkg.Published, err = r.identity(ctx, st, *p.published, cat); err != nil {
				return nil, err
			}
			pkg.Rev, pkg.Lifecycle = pkg.Published, porchv1alpha1.LifecyclePublished
		}
		if p.draft != nil {
			if pkg.Rev, err = r.identity(ctx, st, *p.draft, cat); err != nil {
				return nil, err
			}
			pkg.Lifecycle = p.draft.Lifecycle
		}
		if pkg.Rev == nil {
			continue // only revisions proposed for deletion
		}
		out = append(out, pkg)
	}
	return out, nil
}

// identity reads a deployment repository's revision: its upstream package
// and version, and its declaration.
func (r *Reader) identity(ctx context.Context, st store.Store, rev store.Revision, cat *Catalog) (*deps.Revision, error) {
	d, err := r.declaration(ctx, st, rev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rev.Package, err)
	}
	out := &deps.Revision{Package: rev.Package, Decl: d.decl, Err: d.err}
	if cat != nil {
		if up, ok := cat.byCommit[d.origin]; ok && d.origin != "" {
			out.Package, out.Version = up.Package, up.Version
		}
	}
	return out, nil
}
