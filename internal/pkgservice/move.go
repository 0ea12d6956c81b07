package pkgservice

import (
	"context"
	"fmt"
	"strings"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// GatesError is returned when publishing into a deployment repository is
// refused because readiness gates are not met.
type GatesError struct {
	Repository string
	Unmet      []string
}

func (e *GatesError) Error() string {
	return fmt.Sprintf("cannot publish into deployment repository %s: readiness gates not met: %s", e.Repository, strings.Join(e.Unmet, ", "))
}

// Move makes git's lifecycle of rev what pr's spec asks for: Draft and
// Proposed both ways, Proposed to Published (refused with a *GatesError in
// a deployment repository while a readiness gate is unmet), Published and
// DeletionProposed both ways, and Draft to Published through Proposed
// (the spec moved twice before git followed). Other moves are invalid.
func (s *Service) Move(ctx context.Context, repo *store.Repository, repoName string, deployment bool, pr *porchv1alpha1.PackageRevision, rev store.Revision) (store.Revision, error) {
	want, have := pr.Spec.Lifecycle, rev.Lifecycle
	if want == "" {
		want = porchv1alpha1.LifecycleDraft
	}
	switch {
	case want == have:
		return rev, nil
	case have == porchv1alpha1.LifecycleDraft && want == porchv1alpha1.LifecycleProposed:
		return repo.Propose(ctx, rev.Package, rev.Workspace, rev.Commit)
	case have == porchv1alpha1.LifecycleProposed && want == porchv1alpha1.LifecycleDraft:
		return repo.RejectProposal(ctx, rev.Package, rev.Workspace, rev.Commit)
	case have == porchv1alpha1.LifecycleProposed && want == porchv1alpha1.LifecyclePublished:
		if deployment {
			if unmet := UnmetGates(pr.Spec.ReadinessGates, pr.Status.Conditions); len(unmet) > 0 {
				return rev, &GatesError{Repository: repoName, Unmet: unmet}
			}
		}
		return repo.Publish(ctx, rev.Package, rev.Workspace, rev.Commit, pr.Annotations[porchv1alpha1.ApprovedByAnnotation])
	case have == porchv1alpha1.LifecyclePublished && want == porchv1alpha1.LifecycleDeletionProposed:
		return repo.ProposeDeletion(ctx, rev.Package, rev.Revision)
	case have == porchv1alpha1.LifecycleDeletionProposed && want == porchv1alpha1.LifecyclePublished:
		return repo.RejectDeletion(ctx, rev.Package, rev.Revision)
	case have == porchv1alpha1.LifecycleDraft && want == porchv1alpha1.LifecyclePublished:
		// The spec moved on twice before git followed (proposed, then
		// approved): carry the moves out in order.
		proposed, err := repo.Propose(ctx, rev.Package, rev.Workspace, rev.Commit)
		if err != nil {
			return rev, err
		}
		return s.Move(ctx, repo, repoName, deployment, pr, proposed)
	default:
		return rev, invalid("spec.lifecycle: a %s revision cannot become %s", have, want)
	}
}
