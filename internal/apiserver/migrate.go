package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// ErrAlreadyServed is matched when porch.kpt.dev is served by Scion's API
// server already: the objects of an earlier version's
// CustomResourceDefinition can no longer be read.
var ErrAlreadyServed = errors.New("porch.kpt.dev is served by Scion's API server already")

// Migrated counts what Migrate did.
type Migrated struct {
	// Copied objects were created in the storage; Present ones were there
	// already (a second run copies nothing).
	Copied, Present int
}

// Migrate copies the PackageRevisions of an earlier Scion version (the
// porch.kpt.dev CustomResourceDefinition, read with porch while it still
// serves them) into Scion's storage (written with storage, a client of
// scheme.NewStorage): name, labels, annotations, owners, finalizers, spec
// and status. PackageRevisions are projections of git, which the
// controllers rebuild, except what only the object holds (what people
// set on it, conditions of published revisions, an approval git has not
// carried out yet): this keeps that. It is idempotent.
func Migrate(ctx context.Context, dc discovery.DiscoveryInterface, porch, storage client.Client) (Migrated, error) {
	var out Migrated
	served, err := servedByScion(dc)
	if err != nil {
		return out, err
	}
	if served {
		return out, ErrAlreadyServed
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := porch.List(ctx, list); err != nil {
		return out, fmt.Errorf("listing porch.kpt.dev PackageRevisions: %w", err)
	}
	for i := range list.Items {
		old := &list.Items[i]
		pr := &porchv1alpha1.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: old.Labels, Annotations: old.Annotations,
				OwnerReferences: old.OwnerReferences, Finalizers: old.Finalizers},
			Spec: old.Spec,
		}
		err := storage.Create(ctx, pr)
		if apierrors.IsAlreadyExists(err) {
			out.Present++
			continue
		}
		if err != nil {
			return out, fmt.Errorf("copying PackageRevision %s/%s: %w", old.Namespace, old.Name, err)
		}
		pr.Status = old.Status
		if err := storage.Status().Update(ctx, pr); err != nil {
			return out, fmt.Errorf("copying the status of PackageRevision %s/%s: %w", old.Namespace, old.Name, err)
		}
		out.Copied++
	}
	return out, nil
}

// servedByScion tells whether porch.kpt.dev/v1alpha1 lists
// packagerevisionresources, which only Scion's API server serves.
func servedByScion(dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(porchv1alpha1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, fmt.Errorf("%s is not served: nothing to migrate", porchv1alpha1.GroupVersion)
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "packagerevisionresources" }), nil
}
