package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// maxUsersNamed bounds the users an in-use refusal names.
const maxUsersNamed = 3

// usage finds what uses a published revision as its upstream.
type usage struct {
	// api reads PackageVariants and PackageVariantSets.
	api client.Reader
	// storage lists the revisions, from the server's copy when it can.
	storage *storage
}

// users names what uses pr in its namespace (objects being deleted do
// not): PackageVariants that follow
// it (by revision number, workspace, or as the latest), PackageVariantSets
// that name it, and PackageRevisions whose upstreamLock records its
// commit and that are not superseded (drafts, proposals, the latest
// published revision of their package: history does not pin an upstream).
func (u *usage) users(ctx context.Context, pr *porchv1alpha1.PackageRevision) ([]string, error) {
	if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished && pr.Spec.Lifecycle != porchv1alpha1.LifecycleDeletionProposed {
		return nil, nil
	}
	ns := client.InNamespace(pr.Namespace)
	var out []string
	pvs := &configv1alpha1.PackageVariantList{}
	if err := u.api.List(ctx, pvs, ns); err != nil {
		return nil, fmt.Errorf("listing PackageVariants: %w", err)
	}
	for _, pv := range pvs.Items {
		if pv.DeletionTimestamp.IsZero() && pv.Spec.Upstream != nil && names(pv.Spec.Upstream, pr) {
			out = append(out, "PackageVariant "+pv.Name)
		}
	}
	sets := &configv1alpha2.PackageVariantSetList{}
	if err := u.api.List(ctx, sets, ns); err != nil {
		return nil, fmt.Errorf("listing PackageVariantSets: %w", err)
	}
	for _, s := range sets.Items {
		if s.DeletionTimestamp.IsZero() && slices.ContainsFunc(s.Spec.AllUpstreams(), func(up configv1alpha1.Upstream) bool { return names(&up, pr) }) {
			out = append(out, "PackageVariantSet "+s.Name)
		}
	}
	if pr.Status.Commit != "" {
		revs, err := u.storage.listShown(ctx, pr.Namespace, nil)
		if err != nil {
			return nil, fmt.Errorf("listing PackageRevisions: %w", err)
		}
		for _, r := range revs.Items {
			current := r.Spec.Lifecycle == porchv1alpha1.LifecycleDraft || r.Spec.Lifecycle == porchv1alpha1.LifecycleProposed ||
				r.Labels[porchv1alpha1.LatestRevisionLabel] == "true"
			if r.Name != pr.Name && current && r.Status.UpstreamLock.Commit() == pr.Status.Commit {
				out = append(out, "PackageRevision "+r.Name)
			}
		}
	}
	return out, nil
}

// names says whether an upstream reference resolves to pr: its revision
// number or workspace, or the latest published revision while pr is it.
// Floating tags and version ranges are resolved by the variants; the
// revisions they made record what they resolved to (upstreamLock).
func names(up *configv1alpha1.Upstream, pr *porchv1alpha1.PackageRevision) bool {
	if up.Repo != pr.Spec.Repository || up.Package != pr.Spec.PackageName {
		return false
	}
	switch {
	case up.WorkspaceName != "":
		return up.WorkspaceName == pr.Spec.WorkspaceName
	case up.Revision.Latest():
		return pr.Labels[porchv1alpha1.LatestRevisionLabel] == "true"
	case up.Revision != "":
		n, err := up.Revision.Number()
		return err == nil && n == pr.Spec.Revision
	}
	return false
}

// refuseInUse is the refusal of a deletion (proposed, or approved) of a
// revision something uses, naming the first users and how many more;
// nil when nothing uses it.
func (u *usage) refuseInUse(ctx context.Context, pr *porchv1alpha1.PackageRevision, what string) error {
	users, err := u.users(ctx, pr)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("finding what uses PackageRevision %s: %w", pr.Name, err))
	}
	if len(users) == 0 {
		return nil
	}
	named := strings.Join(users[:min(len(users), maxUsersNamed)], ", ")
	if len(users) > maxUsersNamed {
		named += fmt.Sprintf(" and %d more", len(users)-maxUsersNamed)
	}
	return apierrors.NewForbidden(porchv1alpha1.GroupVersion.WithResource("packagerevisions").GroupResource(), pr.Name,
		fmt.Errorf("%s: it is in use as an upstream by %s; move them to another revision first", what, named))
}

// refuseDirectDelete refuses deleting a Published revision (one whose
// approval git has not carried out yet is Proposed there, and may be
// deleted), for everyone: it is proposed for deletion first.
func refuseDirectDelete(pr *porchv1alpha1.PackageRevision) error {
	if pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished || pr.GitLifecycle() == porchv1alpha1.LifecycleProposed {
		return nil
	}
	return apierrors.NewForbidden(porchv1alpha1.GroupVersion.WithResource("packagerevisions").GroupResource(), pr.Name,
		fmt.Errorf("PackageRevision %s is Published and is not deleted directly, by anyone: %s", pr.Name, pkgservice.DeleteAdvice(pr.Name)))
}
