package packagevariantset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/variantset"
)

// clusterSource is the variantset.Source of the cluster, read from the
// manager's cache. Objects of selected kinds (those the administrator
// allows) are cached per namespace, as metadata only: templates see no
// more, and a fleet's objects cost little memory.
type clusterSource struct {
	client client.Client
	// apiReader reads around the cache: a Repository the cache does not
	// have yet may exist.
	apiReader client.Reader
	kinds     *kindwatch.Watches
}

// repositoryType is the type of the Repositories the source returns.
var repositoryType = metav1.TypeMeta{APIVersion: variantset.RepositoryGVK.GroupVersion().String(), Kind: variantset.RepositoryGVK.Kind}

// Repository implements variantset.Source. A Repository the cache does
// not have is looked up in the API server before it is called missing
// (a missing Repository stalls the set, with a Warning): one created just
// before the set (kubectl apply of both, a GitOps sync) may not have
// reached the cache yet, and then the set is looked at again, not
// stalled.
func (s *clusterSource) Repository(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	repo := &configv1alpha1.Repository{}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if err := s.client.Get(ctx, key, repo); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, readError(err)
		}
		switch err := s.apiReader.Get(ctx, key, &metav1.PartialObjectMetadata{TypeMeta: repositoryType}); {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, readError(err)
		default:
			return nil, readError(fmt.Errorf("the Repository %q exists but is not in the controller's cache yet", name))
		}
	}
	return &metav1.PartialObjectMetadata{TypeMeta: repositoryType, ObjectMeta: repo.ObjectMeta}, nil
}

// List implements variantset.Source.
func (s *clusterSource) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]metav1.PartialObjectMetadata, error) {
	if gvk == variantset.RepositoryGVK {
		list := &configv1alpha1.RepositoryList{}
		if err := s.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, readError(err)
		}
		out := make([]metav1.PartialObjectMetadata, 0, len(list.Items))
		for _, r := range list.Items {
			out = append(out, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, ObjectMeta: r.ObjectMeta})
		}
		return variantset.SortByName(out), nil
	}
	if err := s.kinds.Caches.Kinds.Check(gvk.GroupKind()); err != nil {
		return nil, err
	}
	mapping, err := s.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, err
	}
	if err != nil {
		return nil, readError(err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("%s is cluster-scoped: only objects of the set's namespace are selected", gvk.Kind)
	}
	objects, err := s.kinds.Caches.For(ctx, namespace)
	if err != nil {
		return nil, readError(err)
	}
	// The list's kind is the item kind: the namespaced cache maps the
	// list's kind as it is, and the informer drops a "List" suffix only
	// when there is one.
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	if err := objects.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, readError(err)
	}
	// The kind exists: watch it, so its objects' changes reach the sets
	// selecting it.
	if err := s.watchKind(ctx, gvk, namespace); err != nil {
		return nil, readError(err)
	}
	return variantset.SortByName(list.Items), nil
}

// watchKind watches the metadata of gvk's objects in namespace, mapping
// each event to the sets selecting that kind (through KindIndex).
func (s *clusterSource) watchKind(ctx context.Context, gvk schema.GroupVersionKind, namespace string) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return s.kinds.Ensure(ctx, obj, namespace, reconciler.WithPriority(handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return setsFor(ctx, s.client, o.GetNamespace(), KindIndex, kindKey(gvk))
	}), reconciler.Fixed(reconciler.PriorityFanOut)))
}

// errReadingCluster is matched by errors reading the cluster during an
// expansion: nothing the set's author can fix, retried with backoff.
var errReadingCluster = errors.New("reading the cluster")

// clusterReadError is an error of the API server or the cache; its text is
// the cause's.
type clusterReadError struct{ err error }

func (e *clusterReadError) Error() string        { return e.err.Error() }
func (e *clusterReadError) Unwrap() error        { return e.err }
func (e *clusterReadError) Is(target error) bool { return target == errReadingCluster }

func readError(err error) error { return &clusterReadError{err: err} }

// setsFor lists the sets of namespace whose index holds one of values.
func setsFor(ctx context.Context, c client.Client, namespace, index string, values ...string) []reconcile.Request {
	var out []reconcile.Request
	seen := map[string]bool{}
	for _, v := range values {
		list := &configv1alpha2.PackageVariantSetList{}
		if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index: v}); err != nil {
			continue
		}
		for _, s := range list.Items {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
			}
		}
	}
	return out
}
