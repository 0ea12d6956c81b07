package demo

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/rpkg"
)

// The OCI part of the walk-through: a blueprint served from a registry,
// a deployment repository published to one.
const (
	ociBlueprints = "oci-blueprints"
	ociSite       = "edge-01"
	ociBlueprint  = "tenant-ns"
	ociVariant    = "edge-01-tenant-ns"
)

// showOCI serves the tenant-ns blueprint from the environment's OCI
// registry (Options.Registry), makes a variant of it in a deployment
// repository that is a registry prefix too, and publishes it there, where
// Flux's OCIRepository or Argo CD would deploy it from. Skipped when the
// environment runs no registry.
func (o *Options) showOCI(ctx context.Context, f *Fleet) error {
	o.say("")
	if o.Registry == "" {
		o.say("==> packages in an OCI registry: skipped (no registry in this environment; make registry installs one)")
		return nil
	}
	ns := f.Namespace
	blueprints, site := o.Registry+"/blueprints", o.Registry+"/sites/"+ociSite
	o.say("==> packages in an OCI registry at %s", o.Registry)
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: blueprints, Author: "platform-team"})
	if err != nil {
		return err
	}
	revs, err := st.ListPackage(ctx, ociBlueprint)
	if err != nil {
		return err
	}
	if latestRevision(revs) == 0 {
		p, err := pkg.ReadDir(filepath.Join(o.Examples, "blueprints", ociBlueprint))
		if err != nil {
			return err
		}
		rev, err := publish(ctx, st, ociBlueprint, "v1", p)
		if err != nil {
			return fmt.Errorf("publishing %s to %s: %w", ociBlueprint, blueprints, err)
		}
		o.say("    published blueprint %s v1 as oci://%s/%s:v1 (%s)", ociBlueprint, blueprints, ociBlueprint, rev.Commit)
	}
	for name, spec := range map[string]configv1alpha1.RepositorySpec{
		ociBlueprints: {Type: configv1alpha1.OCIRepositoryType, OCI: &configv1alpha1.OCIRepository{Registry: blueprints}},
		ociSite:       {Type: configv1alpha1.OCIRepositoryType, Deployment: true, OCI: &configv1alpha1.OCIRepository{Registry: site}},
	} {
		repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := createOrUpdate(ctx, o.Client, repo, func() { repo.Spec = spec }); err != nil {
			return fmt.Errorf("Repository %s: %w", name, err)
		}
	}
	o.say("    Repositories %s (type oci, registry %s) and %s (type oci, deployment, registry %s)", ociBlueprints, blueprints, ociSite, site)
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: ociVariant, Namespace: ns}}
	if err := createOrUpdate(ctx, o.Client, pv, func() {
		pv.Spec = configv1alpha1.PackageVariantSpec{
			Upstream:       &configv1alpha1.Upstream{Repo: ociBlueprints, Package: ociBlueprint, Revision: "1"},
			Downstream:     &configv1alpha1.Downstream{Repo: ociSite, Package: ociBlueprint},
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"tenant": "edge"}},
		}
	}); err != nil {
		return fmt.Errorf("PackageVariant %s: %w", ociVariant, err)
	}
	o.say("    PackageVariant %s: %s/%s v1 -> %s/%s", ociVariant, ociBlueprints, ociBlueprint, ociSite, ociBlueprint)
	pr, err := o.ociDownstream(ctx, ns)
	if err != nil {
		return err
	}
	if lock := pr.Status.UpstreamLock; lock != nil && lock.OCI != nil {
		o.say("    its Kptfile pins the upstream by digest: upstreamLock.oci.image %s, digest %s", lock.OCI.Image, lock.OCI.Digest)
	}
	if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
		rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
		o.say("==> %s rpkg propose %s && %s rpkg approve %s", o.scion(), pr.Name, o.scion(), pr.Name)
		if _, err := rc.Propose(ctx, pr.Name); err != nil {
			return err
		}
		if pr, err = rc.Approve(ctx, pr.Name); err != nil {
			return err
		}
	}
	down, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: site})
	if err != nil {
		return err
	}
	rev, err := down.Get(ctx, ociBlueprint, "", pr.Spec.Revision)
	if err != nil {
		return fmt.Errorf("%s is %s, but the registry does not show it: %w", pr.Name, pr.Spec.Lifecycle, err)
	}
	o.say("    %s is Published: oci://%s/%s:%s (%s)", pr.Name, site, ociBlueprint, down.RefName(rev), rev.Commit)
	o.say("    deploy it with Flux: kind: OCIRepository, spec.url: oci://%s/%s, spec.ref.tag: %s (the newest published revision; or %s to pin this one), spec.insecure: true for this local registry (docs/flux.md)", site, ociBlueprint, oci.LatestTag, down.RefName(rev))
	o.say("    read it with any OCI tool: %s pkg pull oci://%s/%s:%s ./%s", o.scion(), site, ociBlueprint, down.RefName(rev), ociBlueprint)
	return nil
}

// ociDownstream waits for the OCI variant's downstream revision and
// returns it.
func (o *Options) ociDownstream(ctx context.Context, ns string) (*porchv1alpha1.PackageRevision, error) {
	var pr *porchv1alpha1.PackageRevision
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		pv := &configv1alpha1.PackageVariant{}
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ociVariant}, pv); err != nil {
			return false, nil
		}
		if len(pv.Status.DownstreamTargets) == 0 {
			return false, nil
		}
		got, err := o.draftOf(ctx, ns, ociVariant)
		if err != nil {
			return false, nil
		}
		pr = got
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the downstream of PackageVariant %s (kubectl describe packagevariant %s): %w", ociVariant, ociVariant, err)
	}
	return pr, nil
}
