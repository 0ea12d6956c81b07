package apiserver

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// approval serves packagerevisions/approval, Porch's way to publish a
// Proposed revision, to send it back to Draft, and to keep a revision
// whose deletion was proposed. Only spec.lifecycle is taken from what is
// sent; a publication records the authenticated user as the approver
// (porch.kpt.dev/approved-by), which the lifecycle policy requires. RBAC
// grants it as update on packagerevisions/approval.
type approval struct{ storage *storage }

var _ rest.Patcher = &approval{}

// New returns an empty PackageRevision.
func (a *approval) New() runtime.Object { return &porchv1alpha1.PackageRevision{} }

// Destroy releases nothing.
func (a *approval) Destroy() {}

// Get reads a revision.
func (a *approval) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return get(ctx, a.storage, name, opts)
}

// approvals are the moves the approval subresource makes, from the
// lifecycle requested now.
var approvals = map[porchv1alpha1.Lifecycle][]porchv1alpha1.Lifecycle{
	porchv1alpha1.LifecycleProposed:         {porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDraft},
	porchv1alpha1.LifecycleDeletionProposed: {porchv1alpha1.LifecyclePublished},
}

// Update moves a revision's lifecycle as an approver.
func (a *approval) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return change(ctx, a.storage, name, objInfo, validate, opts, changeTarget{asStored: true}, func(cur, in *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
		return approve(ctx, name, cur, in)
	})
}

// approve is the revision an approval makes of cur, from the lifecycle
// in asks for (nil: nothing to change).
func approve(ctx context.Context, name string, cur, in *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	from, to := cur.Spec.Lifecycle, in.Spec.Lifecycle
	if from == to {
		return nil, nil
	}
	allowed := approvals[from]
	if !slices.Contains(allowed, to) {
		return nil, apierrors.NewInvalid(porchv1alpha1.GroupVersion.WithKind("PackageRevision").GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "lifecycle"), string(to), fmt.Sprintf("the approval subresource moves a %s revision to %v only", from, allowed)),
		})
	}
	next := cur.DeepCopy()
	next.Spec.Lifecycle = to
	if in.ResourceVersion != "" && in.Generation != cur.Generation {
		// The spec changed since the approver read it: approving
		// what they did not see is a conflict.
		next.ResourceVersion = in.ResourceVersion
	}
	switch {
	case from == porchv1alpha1.LifecycleProposed && to == porchv1alpha1.LifecyclePublished:
		u, ok := request.UserFrom(ctx)
		if !ok {
			return nil, apierrors.NewBadRequest("no user to record as the approver")
		}
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[porchv1alpha1.ApprovedByAnnotation] = u.GetName()
	case to == porchv1alpha1.LifecycleDraft:
		delete(next.Annotations, porchv1alpha1.ApprovedByAnnotation)
	}
	return next, nil
}
