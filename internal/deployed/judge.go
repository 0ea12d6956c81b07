package deployed

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// Published is a published revision of a package.
type Published struct {
	// Package is the package's path.
	Package string
	// Revision is its number.
	Revision int
	// ID identifies its content: the commit that published it (git), or
	// its manifest's digest (OCI).
	ID string
}

// ErrUnknownSource is matched by a Matcher's error when the applied
// revision is not in the repository at all.
var ErrUnknownSource = errors.New("not in the repository")

// Matcher says whether a package's content at an applied source
// revision (a commit, or a digest) is that of a published revision.
type Matcher func(ctx context.Context, applied SourceRevision, rev Published) (bool, error)

// Verdict is what a cluster runs of one package.
type Verdict struct {
	State configv1alpha1.DeployState
	// Revision is the published revision the cluster runs (0: none).
	Revision int
	// Latest is the newest published revision.
	Latest int
	// Applied is the source revision the Kustomization last applied,
	// Attempted the one it last tried.
	Applied, Attempted string
	// Waits: its Ready covers the health of what it applied.
	Waits bool
	// Message says why, when the state is not Current.
	Message string
}

// Judge compares what a Kustomization (nil: not found) applied of a
// package with the package's published revisions, newest first.
func Judge(ctx context.Context, k *Kustomization, published []Published, match Matcher) (Verdict, error) {
	v := Verdict{}
	if len(published) > 0 {
		v.Latest = published[0].Revision
	}
	if k == nil {
		v.State, v.Message = configv1alpha1.DeployNotDeployed, "no Kustomization applies it"
		return v, nil
	}
	v.Applied, v.Attempted, v.Waits = k.LastAppliedRevision, k.LastAttemptedRevision, k.Waits
	if k.LastAppliedRevision != "" {
		applied, err := ParseRevision(k.LastAppliedRevision)
		if err != nil {
			v.State, v.Message = configv1alpha1.DeployDrifted, fmt.Sprintf("Kustomization %s: %v", k.Key(), err)
			return v, nil
		}
		for _, p := range published {
			ok, err := match(ctx, applied, p)
			if errors.Is(err, ErrUnknownSource) {
				v.State, v.Message = configv1alpha1.DeployDrifted, fmt.Sprintf("Kustomization %s applied %s, which is not in the repository: something other than Scion published it", k.Key(), k.LastAppliedRevision)
				return v, nil
			}
			if err != nil {
				return v, err
			}
			if ok {
				v.Revision = p.Revision
				break
			}
		}
		if v.Revision == 0 {
			v.State, v.Message = configv1alpha1.DeployDrifted, fmt.Sprintf("Kustomization %s applied %s, whose content of the package Scion never published (or has deleted)", k.Key(), k.LastAppliedRevision)
			return v, nil
		}
	}
	switch {
	case k.Suspended:
		v.State, v.Message = configv1alpha1.DeployDrifted, fmt.Sprintf("Kustomization %s is suspended: Flux applies nothing", k.Key())
	case k.ObservedGeneration != k.Generation:
		v.State, v.Message = configv1alpha1.DeployProgressing, fmt.Sprintf("Kustomization %s has not acted on its latest spec yet", k.Key())
	case k.Ready == metav1.ConditionFalse:
		v.State, v.Message = configv1alpha1.DeployFailed, readyMessage(k)
	case k.Ready != metav1.ConditionTrue:
		v.State, v.Message = configv1alpha1.DeployProgressing, readyMessage(k)
	case v.Revision == 0:
		v.State, v.Message = configv1alpha1.DeployNotDeployed, fmt.Sprintf("Kustomization %s has applied nothing yet", k.Key())
	case v.Revision < v.Latest:
		v.State, v.Message = configv1alpha1.DeployBehind, fmt.Sprintf("runs revision %d; revision %d is published and Flux has not applied it yet", v.Revision, v.Latest)
	default:
		v.State = configv1alpha1.DeployCurrent
		if !k.Waits {
			v.Message = fmt.Sprintf("Kustomization %s is Ready once applied: it does not wait for what it applied to be healthy (spec.wait)", k.Key())
		}
	}
	return v, nil
}

// readyMessage is a Kustomization's Ready condition in a few words.
func readyMessage(k *Kustomization) string {
	if k.Ready == "" {
		return fmt.Sprintf("Kustomization %s has no Ready condition yet", k.Key())
	}
	msg := fmt.Sprintf("Kustomization %s is Ready=%s", k.Key(), k.Ready)
	if k.ReadyReason != "" {
		msg += " " + k.ReadyReason
	}
	if k.ReadyText != "" {
		msg += ": " + store.Shorten(k.ReadyText, 512)
	}
	return msg
}
