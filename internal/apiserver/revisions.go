package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// revisions serves packagerevisions from the storage.
type revisions struct {
	storage *storage
	table   rest.TableConvertor
}

var (
	_ rest.Storage              = &revisions{}
	_ rest.Scoper               = &revisions{}
	_ rest.SingularNameProvider = &revisions{}
	_ rest.ShortNamesProvider   = &revisions{}
	_ rest.CategoriesProvider   = &revisions{}
	_ rest.Getter               = &revisions{}
	_ rest.Lister               = &revisions{}
	_ rest.Watcher              = &revisions{}
	_ rest.Creater              = &revisions{}
	_ rest.Updater              = &revisions{}
	_ rest.GracefulDeleter      = &revisions{}
)

// New returns an empty PackageRevision.
func (r *revisions) New() runtime.Object { return &porchv1alpha1.PackageRevision{} }

// NewList returns an empty PackageRevisionList.
func (r *revisions) NewList() runtime.Object { return &porchv1alpha1.PackageRevisionList{} }

// Destroy releases nothing: the storage is the cluster's API server.
func (r *revisions) Destroy() {}

// NamespaceScoped is true: revisions live in their Repository's namespace.
func (r *revisions) NamespaceScoped() bool { return true }

// GetSingularName returns packagerevision.
func (r *revisions) GetSingularName() string { return "packagerevision" }

// ShortNames returns pr, as Scion's PackageRevision has always had.
func (r *revisions) ShortNames() []string { return []string{"pr"} }

// Categories returns scion: kubectl get scion lists Scion's objects.
func (r *revisions) Categories() []string { return []string{"scion"} }

// ConvertToTable shows the storage's printer columns.
func (r *revisions) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, obj, opts)
}

// Get reads a revision.
func (r *revisions) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return get(ctx, r.storage, name, opts)
}

// get reads a revision of the request's namespace.
func get(ctx context.Context, s *storage, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	ns, _ := request.NamespaceFrom(ctx)
	pr, err := s.get(ctx, ns, name, opts)
	if err != nil {
		return nil, err
	}
	return toPorch(pr), nil
}

// nameFields says which fields a revision created without a name lacks.
func nameFields(pr *porchv1alpha1.PackageRevision) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for f, v := range map[string]string{"repository": pr.Spec.Repository, "packageName": pr.Spec.PackageName, "workspaceName": pr.Spec.WorkspaceName} {
		if v == "" {
			errs = append(errs, field.Required(spec.Child(f), "a PackageRevision created without metadata.name is named repository.package.workspace from these fields"))
		}
	}
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// List lists revisions, with label and field selectors, paging and
// resourceVersion semantics passed to the storage.
func (r *revisions) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := request.NamespaceFrom(ctx)
	v1opts, err := listOptions(opts)
	if err != nil {
		return nil, err
	}
	list, err := r.storage.list(ctx, ns, v1opts)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		toPorch(&list.Items[i])
	}
	return list, nil
}

// Watch watches revisions, with the storage's resourceVersions.
func (r *revisions) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	ns, _ := request.NamespaceFrom(ctx)
	v1opts, err := listOptions(opts)
	if err != nil {
		return nil, err
	}
	w, err := r.storage.watch(ctx, ns, v1opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if pr, ok := e.Object.(*porchv1alpha1.PackageRevision); ok {
			toPorch(pr)
		}
		return e, true
	}), nil
}

// Create creates a revision. One without a name (and without
// generateName) gets Porch's name, repository.package.workspace.
func (r *revisions) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a PackageRevision: %T", obj))
	}
	if pr.Name == "" && pr.GenerateName == "" {
		if pr.Spec.Repository == "" || pr.Spec.PackageName == "" || pr.Spec.WorkspaceName == "" {
			return nil, apierrors.NewInvalid(porchv1alpha1.GroupVersion.WithKind("PackageRevision").GroupKind(), "",
				nameFields(pr))
		}
		pr.Name = pkgservice.ObjectName(pr.Spec.Repository, pr.Spec.PackageName, pr.Spec.WorkspaceName)
	}
	if validate != nil {
		if err := validate(ctx, pr); err != nil {
			return nil, err
		}
	}
	out, err := r.storage.create(ctx, toStorage(pr), opts)
	if err != nil {
		return nil, err
	}
	return toPorch(out), nil
}

// Update updates a revision (its spec and metadata; the status is the
// status subresource's).
func (r *revisions) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return update(ctx, r.storage, name, objInfo, validate, opts, "")
}

// Delete deletes a revision (the controller removes it from git).
func (r *revisions) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	ns, _ := request.NamespaceFrom(ctx)
	cur, err := r.storage.get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	toPorch(cur)
	if validate != nil {
		if err := validate(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	if err := r.storage.delete(ctx, ns, name, opts); err != nil {
		return nil, false, err
	}
	return cur, false, nil
}

// update reads a revision, applies the change objInfo describes, and
// writes it (to subresource when set) as the user.
func update(ctx context.Context, s *storage, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc, opts *metav1.UpdateOptions, subresource string) (runtime.Object, bool, error) {
	return change(ctx, s, name, objInfo, validate, opts, subresource, nil)
}

// change reads a revision, has objInfo change it (shaped by shape when
// set: nil from shape means there is nothing to write), and writes it as
// the user. When the storage changed meanwhile and the change was not
// made against a resourceVersion of its own (a patch, an apply: the
// object carries the version read here), it starts again from a fresh
// read, as the generic registry's updates do, until the request's
// deadline; an update sent with an older resourceVersion is a conflict.
func change(ctx context.Context, s *storage, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc, opts *metav1.UpdateOptions, subresource string,
	shape func(cur, in *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error)) (runtime.Object, bool, error) {
	for {
		cur, next, err := updated(ctx, s, name, objInfo, validate)
		if err != nil {
			return nil, false, err
		}
		if shape != nil {
			if next, err = shape(cur, next); err != nil {
				return nil, false, err
			}
			if next == nil {
				return cur, false, nil
			}
		}
		read := next.ResourceVersion == cur.ResourceVersion
		out, err := s.update(ctx, toStorage(next), subresource, opts)
		if apierrors.IsConflict(err) && read && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return toPorch(out), false, nil
	}
}

// updated reads a revision and returns it with the change objInfo
// describes, validated.
func updated(ctx context.Context, s *storage, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc) (cur, next *porchv1alpha1.PackageRevision, err error) {
	ns, _ := request.NamespaceFrom(ctx)
	cur, err = s.get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	toPorch(cur)
	obj, err := objInfo.UpdatedObject(ctx, cur.DeepCopy())
	if err != nil {
		return nil, nil, err
	}
	next, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("not a PackageRevision: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, next, cur); err != nil {
			return nil, nil, err
		}
	}
	return cur, next, nil
}

// revisionStatus serves packagerevisions/status.
type revisionStatus struct{ storage *storage }

var _ rest.Patcher = &revisionStatus{}

// New returns an empty PackageRevision.
func (r *revisionStatus) New() runtime.Object { return &porchv1alpha1.PackageRevision{} }

// Destroy releases nothing.
func (r *revisionStatus) Destroy() {}

// Get reads a revision.
func (r *revisionStatus) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return get(ctx, r.storage, name, opts)
}

// Update writes a revision's status.
func (r *revisionStatus) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return update(ctx, r.storage, name, objInfo, validate, opts, "status")
}

// listOptions converts the server's list options to the storage's.
func listOptions(in *metainternalversion.ListOptions) (*metav1.ListOptions, error) {
	out := &metav1.ListOptions{}
	if in == nil {
		return out, nil
	}
	if err := metainternalversion.Convert_internalversion_ListOptions_To_v1_ListOptions(in, out, nil); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return out, nil
}

// toPorch makes an object read from the storage a porch.kpt.dev one.
func toPorch(pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	pr.TypeMeta = metav1.TypeMeta{}
	for i := range pr.ManagedFields {
		if pr.ManagedFields[i].APIVersion == porchv1alpha1.StorageGroupVersion.String() {
			pr.ManagedFields[i].APIVersion = porchv1alpha1.GroupVersion.String()
		}
	}
	return pr
}

// toStorage makes an object to write a storage one.
func toStorage(pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	pr.TypeMeta = metav1.TypeMeta{APIVersion: porchv1alpha1.StorageGroupVersion.String(), Kind: "PackageRevision"}
	for i := range pr.ManagedFields {
		if pr.ManagedFields[i].APIVersion == porchv1alpha1.GroupVersion.String() {
			pr.ManagedFields[i].APIVersion = porchv1alpha1.StorageGroupVersion.String()
		}
	}
	return pr
}
