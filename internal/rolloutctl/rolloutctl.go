// Package rolloutctl is the library behind `scion rollout`: what a person
// does to a PackageRollout on a cluster (approve a wave, pause, resume,
// abort, look at it), each an update of the rollout's spec the API server
// authorizes (the scion-packagerollout-approval policy).
package rolloutctl

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/suggest"
)

// Client acts on the PackageRollouts of a namespace.
type Client struct {
	client.Client
	Namespace string
}

// Get returns one rollout.
func (c *Client) Get(ctx context.Context, name string) (*configv1alpha1.PackageRollout, error) {
	ro := &configv1alpha1.PackageRollout{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, ro); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, suggest.NotFound(ctx, c.Client, &configv1alpha1.PackageRolloutList{}, "PackageRollout", c.Namespace, name)
		}
		return nil, err
	}
	return ro, nil
}

// Approve approves a wave of a rollout whose approval is Manual, recorded
// as the user the API server authenticates.
func (c *Client) Approve(ctx context.Context, name, wave string) error {
	me, err := (&rpkg.Client{Client: c.Client}).Whoami(ctx)
	if err != nil {
		return err
	}
	return c.update(ctx, name, func(ro *configv1alpha1.PackageRollout) error {
		if wave != configv1alpha1.RemainderWave && !slices.ContainsFunc(ro.Spec.Waves, func(w configv1alpha1.RolloutWave) bool { return w.Name == wave }) {
			return fmt.Errorf("PackageRollout %s has no wave %s", name, wave)
		}
		if ro.Spec.Approval != configv1alpha1.RolloutApprovalManual {
			return fmt.Errorf("PackageRollout %s approves its waves automatically (spec.approval: %s)", name, ro.Spec.Approval)
		}
		if slices.Contains(ro.Spec.ApprovedWaves, wave) {
			return nil
		}
		ro.Spec.ApprovedWaves = append(ro.Spec.ApprovedWaves, wave)
		if ro.Annotations == nil {
			ro.Annotations = map[string]string{}
		}
		ro.Annotations[configv1alpha1.WaveApprovedByAnnotation] = me
		ro.Annotations[configv1alpha1.WaveApprovalPrefix+wave] = me
		return nil
	})
}

// Pause pauses a rollout: nothing more is published.
func (c *Client) Pause(ctx context.Context, name string) error {
	return c.update(ctx, name, func(ro *configv1alpha1.PackageRollout) error {
		ro.Spec.Paused = true
		return nil
	})
}

// Resume resumes a paused rollout, or one that stopped on a failure
// without rolling back (spec.retries is incremented: its failed waves get
// a fresh progress deadline).
func (c *Client) Resume(ctx context.Context, name string) error {
	return c.update(ctx, name, func(ro *configv1alpha1.PackageRollout) error {
		if ro.Spec.Aborted {
			return fmt.Errorf("PackageRollout %s was aborted: it stays stopped; create a new rollout", name)
		}
		if ro.Spec.Paused {
			ro.Spec.Paused = false
			return nil
		}
		for _, w := range ro.Status.Waves {
			if w.State == configv1alpha1.WaveFailed {
				if w.RolledBack > 0 {
					return fmt.Errorf("PackageRollout %s rolled back what it published: it is finished; create a new rollout", name)
				}
				ro.Spec.Retries++
				return nil
			}
		}
		return fmt.Errorf("PackageRollout %s is neither paused nor stopped on a failure", name)
	})
}

// Abort stops a rollout for good (with rollbackOnFailure, it rolls back).
func (c *Client) Abort(ctx context.Context, name string) error {
	return c.update(ctx, name, func(ro *configv1alpha1.PackageRollout) error {
		ro.Spec.Aborted = true
		return nil
	})
}

// update changes a rollout with an optimistic lock, retried on conflict.
func (c *Client) update(ctx context.Context, name string, change func(*configv1alpha1.PackageRollout) error) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		ro, err := c.Get(ctx, name)
		if err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(ro.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if err := change(ro); err != nil {
			return err
		}
		return c.Patch(ctx, ro, patch)
	})
}
