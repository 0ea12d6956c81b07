package variant

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// The PackageVariant indexes more than one controller reads (registered
// once, by IndexVariants, with the manager's cache).
const (
	// UpstreamIndex indexes PackageVariants by "<repository>/<package>" of
	// their upstream, so a PackageRevision event (or a Repository's new
	// revision) finds exactly the variants deriving from it.
	UpstreamIndex = "spec.upstream.repoPackage"
	// RepositoryIndex indexes PackageVariants by the Repositories they
	// read from and write to (Repositories), so a Repository counts its
	// users.
	RepositoryIndex = "spec.upstream.repo+spec.downstream.repo"
	// DownstreamPackageIndex indexes PackageVariants by downstream
	// repository and package (DownstreamPackageKey): one variant per
	// package, and a rollout finds the variant writing a package.
	DownstreamPackageIndex = "spec.downstream.repo+package"
)

// Repositories are the names of the Repositories a variant reads from and
// writes to.
func Repositories(pv *configv1alpha1.PackageVariant) []string {
	var out []string
	if pv.Spec.Upstream != nil && pv.Spec.Upstream.Repo != "" {
		out = append(out, pv.Spec.Upstream.Repo)
	}
	if pv.Spec.Downstream != nil && pv.Spec.Downstream.Repo != "" && (len(out) == 0 || out[0] != pv.Spec.Downstream.Repo) {
		out = append(out, pv.Spec.Downstream.Repo)
	}
	return out
}

// PackageKey is the key of a package of a Repository in UpstreamIndex and
// DownstreamPackageIndex: "repo/package".
func PackageKey(repo, pkgPath string) string { return repo + "/" + pkgPath }

// DownstreamPackageKey is a variant's key in DownstreamPackageIndex;
// empty without a downstream.
func DownstreamPackageKey(pv *configv1alpha1.PackageVariant) string {
	if pv.Spec.Downstream == nil {
		return ""
	}
	return PackageKey(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
}

// IndexVariants registers UpstreamIndex, RepositoryIndex and
// DownstreamPackageIndex with a manager's cache.
func IndexVariants(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &configv1alpha1.PackageVariant{}, UpstreamIndex, func(o client.Object) []string {
		pv := o.(*configv1alpha1.PackageVariant)
		if pv.Spec.Upstream == nil {
			return nil
		}
		return []string{PackageKey(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package)}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &configv1alpha1.PackageVariant{}, RepositoryIndex, func(o client.Object) []string {
		return Repositories(o.(*configv1alpha1.PackageVariant))
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &configv1alpha1.PackageVariant{}, DownstreamPackageIndex, func(o client.Object) []string {
		if k := DownstreamPackageKey(o.(*configv1alpha1.PackageVariant)); k != "" {
			return []string{k}
		}
		return nil
	})
}
