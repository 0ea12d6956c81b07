package repository

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/variant"
)

// usersReconciler keeps a Repository's status.packageVariants: the
// PackageVariants that read from or write to it (the warning on deleting
// a Repository in use quotes it). It is apart from the Repository's sync,
// and writes that one field only, so that a fleet's variants coming and
// going do not sync every repository they name.
type usersReconciler struct {
	client.Client
	Status *reconciler.StatusWriter
	Shard  reconciler.Shard
}

func (u *usersReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("repository-users").
		For(&configv1alpha1.Repository{}, builder.WithPredicates(u.Shard.Predicate(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		}))).
		// A variant that comes or goes, or whose spec moves it to other
		// Repositories, changes their counts (the old and the new ones
		// are both mapped; a burst makes one reconcile per Repository).
		Watches(&configv1alpha1.PackageVariant{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, name := range variant.Repositories(o.(*configv1alpha1.PackageVariant)) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
			}
			return out
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !slices.Equal(variant.Repositories(e.ObjectOld.(*configv1alpha1.PackageVariant)), variant.Repositories(e.ObjectNew.(*configv1alpha1.PackageVariant)))
		}})).
		Complete(u)
}

// Reconcile counts one Repository's PackageVariants (from the cache's
// index) and writes the count when it changed.
func (u *usersReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	repo := &configv1alpha1.Repository{}
	if err := u.Get(ctx, req.NamespacedName, repo); err != nil || !u.Shard.Owns(repo) || !repo.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	list := &configv1alpha1.PackageVariantList{}
	if err := u.List(ctx, list, client.InNamespace(repo.Namespace), client.MatchingFields{variant.RepositoryIndex: repo.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("counting the PackageVariants of %s: %w", repo.Name, err)
	}
	_, err := reconciler.PatchStatus(ctx, u.Status, repo, func(r *configv1alpha1.Repository) (bool, error) {
		r.Status.PackageVariants = len(list.Items)
		return true, nil
	})
	return ctrl.Result{}, client.IgnoreNotFound(err)
}
