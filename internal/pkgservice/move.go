package pkgservice

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
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
func (s *Service) Move(ctx context.Context, repo store.Store, repoName string, deployment bool, pr *porchv1alpha1.PackageRevision, rev store.Revision) (store.Revision, error) {
	want, have := pr.Spec.Lifecycle, rev.Lifecycle
	if want == "" {
		want = porchv1alpha1.LifecycleDraft
	}
	switch {
	case want == have:
		return rev, nil
	case have == porchv1alpha1.LifecycleDraft && want == porchv1alpha1.LifecycleProposed:
		return repo.Propose(ctx, rev.Package, rev.Workspace, rev.Commit, proposalOf(pr))
	case have == porchv1alpha1.LifecycleProposed && want == porchv1alpha1.LifecycleDraft:
		return repo.RejectProposal(ctx, rev.Package, rev.Workspace, rev.Commit)
	case have == porchv1alpha1.LifecycleProposed && want == porchv1alpha1.LifecyclePublished:
		if deployment {
			if unmet := UnmetGates(pr.Spec.ReadinessGates, pr.Status.Conditions); len(unmet) > 0 {
				return rev, &GatesError{Repository: repoName, Unmet: unmet}
			}
		}
		return repo.Publish(ctx, rev.Package, rev.Workspace, rev.Commit, pr.Annotations[porchv1alpha1.ApprovedByAnnotation], store.WriterPackageRevision)
	case have == porchv1alpha1.LifecyclePublished && want == porchv1alpha1.LifecycleDeletionProposed:
		return repo.ProposeDeletion(ctx, rev.Package, rev.Revision)
	case have == porchv1alpha1.LifecycleDeletionProposed && want == porchv1alpha1.LifecyclePublished:
		return repo.RejectDeletion(ctx, rev.Package, rev.Revision)
	case have == porchv1alpha1.LifecycleDraft && want == porchv1alpha1.LifecyclePublished:
		// The spec moved on twice before git followed (proposed, then
		// approved): carry the moves out in order.
		proposed, err := repo.Propose(ctx, rev.Package, rev.Workspace, rev.Commit, proposalOf(pr))
		if err != nil {
			return rev, err
		}
		return s.Move(ctx, repo, repoName, deployment, pr, proposed)
	default:
		return rev, invalid("spec.lifecycle: a %s revision cannot become %s", have, want)
	}
}

// proposalOf is the record of pr's proposal its annotations hold (who
// proposed it, and when: now if they do not say), for git to keep.
func proposalOf(pr *porchv1alpha1.PackageRevision) store.Proposal {
	by := pr.Annotations[porchv1alpha1.ProposedByAnnotation]
	if by == "" {
		return store.Proposal{}
	}
	at, err := time.Parse(time.RFC3339, pr.Annotations[porchv1alpha1.ProposedAtAnnotation])
	if err != nil {
		at = time.Now()
	}
	return store.Proposal{By: by, At: at}
}

// HandOverLatest takes the latest-revision label from the other
// PackageRevisions of a package just published as rev: the repository's
// next sync would, but until then two revisions would say they are the
// latest. Call it before the new revision is shown.
func (s *Service) HandOverLatest(ctx context.Context, repoObj *configv1alpha1.Repository, rev store.Revision) error {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := s.Client.List(ctx, list, client.InNamespace(repoObj.Namespace), client.MatchingLabels{
		porchv1alpha1.RepositoryLabel:     LabelValue(repoObj.Name),
		porchv1alpha1.PackageLabel:        LabelValue(rev.Package),
		porchv1alpha1.LatestRevisionLabel: "true",
	}); err != nil {
		return fmt.Errorf("handing over the latest revision of %s: %w", rev.Package, err)
	}
	var errs []error
	for i := range list.Items {
		pr := &list.Items[i]
		if pr.Spec.PackageName != rev.Package || pr.Spec.Revision == rev.Revision {
			continue
		}
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		delete(pr.Labels, porchv1alpha1.LatestRevisionLabel)
		errs = append(errs, client.IgnoreNotFound(s.Client.Patch(ctx, pr, patch)))
	}
	return errors.Join(errs...)
}

// DeleteAdvice is how a Published revision is deleted: its deletion
// proposed, then approved.
func DeleteAdvice(name string) string {
	return fmt.Sprintf("propose its deletion first (scion rpkg propose-delete %s), then approve it (scion rpkg delete %s)", name, name)
}
