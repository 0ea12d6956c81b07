package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// revisions serves packagerevisions from the storage.
type revisions struct {
	storage *storage
	table   rest.TableConvertor
	// authz decides whether the user may read the Secrets a clone
	// from a git URL names (see checkSecrets).
	authz authorizer.Authorizer
	// usage finds what uses a revision whose deletion is asked for.
	usage *usage
	// egress is the policy the git URLs of clones are checked against
	// (their hosts that are addresses; names when fetched).
	egress *egress.Policy
	// v1alpha2 is set on the storage serving porch.kpt.dev/v1alpha2,
	// whose writes are completed from the stored revision (fromV1alpha2)
	// and which approves by an update of spec.lifecycle.
	v1alpha2 bool
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

// ConvertToTable shows the storage's printer columns (revisionTable).
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
	return s.shown(ctx, pr), nil
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
// resourceVersion semantics: from the server's copy when it can answer
// them (listCache), else from the storage.
func (r *revisions) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := request.NamespaceFrom(ctx)
	list, err := r.storage.listShown(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		r.storage.upstreams.show(ctx, &list.Items[i])
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
			if e.Type != watch.Bookmark {
				// (A bookmark's resourceVersion may be of other kinds'
				// writes: the copy need not wait for it.)
				r.storage.cache.saw(pr)
			}
			r.storage.show(ctx, pr)
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
	if err := refusedField(pr); err != nil {
		return nil, err
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
	stored, err := toStorage(pr, nil)
	if err != nil {
		return nil, err
	}
	if err := r.checkSecrets(ctx, nil, stored); err != nil {
		return nil, err
	}
	if err := r.checkEgress(stored); err != nil {
		return nil, err
	}
	if err := r.checkNewPackage(ctx, stored); err != nil {
		return nil, err
	}
	out, err := r.storage.create(ctx, stored, opts)
	if err != nil {
		return nil, err
	}
	return r.storage.shown(ctx, out), nil
}

// Update updates a revision (its spec and metadata; the status is the
// status subresource's).
func (r *revisions) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, validate rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, created, err := r.update(ctx, name, objInfo, validate, opts)
	var status apierrors.APIStatus
	if forceAllowCreate && apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name == name {
		// A server-side apply of a revision that does not exist
		// (kubectl apply --server-side, GitOps tools) creates it.
		obj, err := objInfo.UpdatedObject(ctx, r.New())
		if err != nil {
			return nil, false, err
		}
		out, err := r.Create(ctx, obj, createValidation, &metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager})
		return out, err == nil, err
	}
	return out, created, err
}

// update changes an existing revision (Update).
func (r *revisions) update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return change(ctx, r.storage, name, objInfo, validate, opts, changeTarget{}, func(cur, next *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
		if r.v1alpha2 {
			if err := fromV1alpha2(cur, next); err != nil {
				return nil, err
			}
			if cur.Spec.Lifecycle == porchv1alpha1.LifecycleProposed && next.Spec.Lifecycle != porchv1alpha1.LifecycleProposed {
				// v1alpha2 has no approval subresource: publishing
				// or rejecting a proposal is an update of the
				// lifecycle, made as the subresource makes it.
				return approve(ctx, name, cur, next)
			}
		}
		if err := recordProposal(ctx, cur, next); err != nil {
			return nil, err
		}
		if next.Spec.Lifecycle == porchv1alpha1.LifecycleDeletionProposed && cur.Spec.Lifecycle != porchv1alpha1.LifecycleDeletionProposed {
			if err := r.usage.refuseInUse(ctx, cur, "PackageRevision "+cur.Name+" cannot be proposed for deletion"); err != nil {
				return nil, err
			}
		}
		return next, r.checkSecrets(ctx, cur, next)
	})
}

// recordProposal records the user proposing a Draft (who and when); any
// other change keeps the record as it was, whatever the request sent in
// it.
func recordProposal(ctx context.Context, cur, next *porchv1alpha1.PackageRevision) error {
	if cur.Spec.Lifecycle == porchv1alpha1.LifecycleDraft && next.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
		u, ok := request.UserFrom(ctx)
		if !ok {
			return apierrors.NewBadRequest("no user to record as the proposer")
		}
		next.RecordProposal(u.GetName(), time.Now())
		return nil
	}
	for _, k := range []string{porchv1alpha1.ProposedByAnnotation, porchv1alpha1.ProposedAtAnnotation} {
		if v, ok := cur.Annotations[k]; ok {
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[k] = v
		} else {
			delete(next.Annotations, k)
		}
	}
	return nil
}

// checkSecrets refuses a revision whose clone from a git URL names a
// Secret (spec.tasks[i].clone.upstreamRef.git.secretRef) the user may not
// read: the controller would otherwise send that Secret's credentials to
// any URL the user chose. A Secret old already named at the same task is
// not checked again.
func (r *revisions) checkSecrets(ctx context.Context, old, pr *porchv1alpha1.PackageRevision) error {
	for i, t := range pr.Spec.Tasks {
		name := gitSecret(t)
		if name == "" || old != nil && i < len(old.Spec.Tasks) && gitSecret(old.Spec.Tasks[i]) == name {
			continue
		}
		u, ok := request.UserFrom(ctx)
		if !ok {
			return apierrors.NewUnauthorized("no user")
		}
		decision, reason, err := r.authz.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: "get", Namespace: pr.Namespace, APIVersion: "v1", Resource: "secrets", Name: name, ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			continue
		}
		why := fmt.Sprintf("spec.tasks[%d].clone.upstreamRef.git.secretRef: %s may not get Secret %s/%s, so cannot have the controller use its credentials", i, u.GetName(), pr.Namespace, name)
		if reason != "" {
			why += ": " + reason
		}
		if err != nil {
			why += ": " + err.Error()
		}
		return apierrors.NewForbidden(porchv1alpha1.GroupVersion.WithResource("packagerevisions").GroupResource(), pr.Name, errors.New(why))
	}
	return nil
}

// checkNewPackage refuses, as Porch does, an init or a clone into a
// package the repository already has: its next revision is made from one
// of its own (copy, an edit task, or upgrade), so that two unrelated
// sources never take turns in one package's history.
func (r *revisions) checkNewPackage(ctx context.Context, pr *porchv1alpha1.PackageRevision) error {
	if len(pr.Spec.Tasks) == 0 || pr.Spec.Tasks[0].Type != porchv1alpha1.TaskTypeInit && pr.Spec.Tasks[0].Type != porchv1alpha1.TaskTypeClone {
		return nil
	}
	existing, err := r.storage.list(ctx, pr.Namespace, &metav1.ListOptions{
		FieldSelector: fields.SelectorFromSet(fields.Set{"spec.repository": pr.Spec.Repository, "spec.packageName": pr.Spec.PackageName}).String(),
		Limit:         1,
	})
	if err != nil {
		return err
	}
	if len(existing.Items) == 0 {
		return nil
	}
	return apierrors.NewInvalid(porchv1alpha1.GroupVersion.WithKind("PackageRevision").GroupKind(), pr.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "tasks").Index(0).Child("type"), pr.Spec.Tasks[0].Type,
			fmt.Sprintf("package %s already exists in repository %s (%s): %s makes a new package; make its next revision with copy (an edit task of one of its revisions) or upgrade",
				pr.Spec.PackageName, pr.Spec.Repository, existing.Items[0].Name, pr.Spec.Tasks[0].Type)),
	})
}

// gitSecret is the Secret a clone from a git URL names, if any.
func gitSecret(t porchv1alpha1.Task) string {
	if t.Clone == nil || t.Clone.UpstreamRef.Git == nil || t.Clone.UpstreamRef.Git.SecretRef == nil {
		return ""
	}
	return t.Clone.UpstreamRef.Git.SecretRef.Name
}

// Delete deletes a revision (the controller removes it from git): never
// a Published one (it is proposed for deletion first), nor one in use as
// an upstream.
func (r *revisions) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	ns, _ := request.NamespaceFrom(ctx)
	cur, err := r.storage.get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	r.storage.show(ctx, cur)
	if validate != nil {
		if err := validate(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	if err := refuseDirectDelete(cur); err != nil {
		return nil, false, err
	}
	if err := r.usage.refuseInUse(ctx, cur, "PackageRevision "+cur.Name+" cannot be deleted"); err != nil {
		return nil, false, err
	}
	if err := r.storage.delete(ctx, ns, name, opts); err != nil {
		return nil, false, err
	}
	return cur, false, nil
}

// change reads a revision, has objInfo change it (shaped by shape when
// set: nil from shape means there is nothing to write), and writes it as
// the user, to target. When the storage changed meanwhile and the change
// was not made against a resourceVersion of its own (a patch, an apply:
// the object carries the version read here), it starts again from a
// fresh read, as the generic registry's updates do, until the request's
// deadline; an update sent with an older resourceVersion is a conflict.
func change(ctx context.Context, s *storage, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc, opts *metav1.UpdateOptions, target changeTarget,
	shape func(cur, in *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error)) (runtime.Object, bool, error) {
	subresource := target.subresource
	for {
		cur, next, synthesized, err := updated(ctx, s, name, objInfo, validate, !target.asStored)
		if err != nil {
			return nil, false, err
		}
		// Judged on what the client sent, before the server's own
		// shaping (the proposal's record) changes it.
		statusOnly := subresource == "" && next.ResourceVersion != cur.ResourceVersion && onlyStatusMoved(cur, next)
		if shape != nil {
			if next, err = shape(cur, next); err != nil {
				return nil, false, err
			}
			if next == nil {
				return cur, false, nil
			}
		}
		read := next.ResourceVersion == cur.ResourceVersion
		if statusOnly {
			// The client read an older version, but since then only
			// the status moved (the controllers write it): its change
			// applies to the current version as it would have to the
			// one it read. Porch's clients (porchctl propose) update
			// the whole object and do not retry.
			next.ResourceVersion, read = cur.ResourceVersion, true
		}
		stored, err := toStorage(next, synthesized)
		if err != nil {
			return nil, false, err
		}
		out, err := s.update(ctx, stored, subresource, opts)
		if apierrors.IsConflict(err) && read && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return s.shown(ctx, out), false, nil
	}
}

// changeTarget is what a change writes: the revision (subresource "") or
// its status, from the revision as shown (with the task show synthesises:
// a client sends it back, or patches it) or, asStored, as the storage
// holds it (an approval takes the lifecycle alone from what it is sent;
// its answer is shown).
type changeTarget struct {
	subresource string
	asStored    bool
}

// onlyStatusMoved tells whether cur differs from the version next was
// made from in its status only: the same generation (the spec did not
// change) and the same labels, annotations, finalizers and owners as
// next carries (so none of those is overwritten unseen).
func onlyStatusMoved(cur, next *porchv1alpha1.PackageRevision) bool {
	return next.Generation != 0 && next.Generation == cur.Generation &&
		equality.Semantic.DeepEqual(next.Labels, cur.Labels) && equality.Semantic.DeepEqual(next.Annotations, cur.Annotations) &&
		equality.Semantic.DeepEqual(next.Finalizers, cur.Finalizers) && equality.Semantic.DeepEqual(next.OwnerReferences, cur.OwnerReferences)
}

// updated reads a revision, shows it (show; with dress false, in
// porch.kpt.dev's shape only, without synthesised tasks) and returns it
// with the change objInfo describes, validated; synthesized are the tasks
// show gave it (nil: none).
func updated(ctx context.Context, s *storage, name string, objInfo rest.UpdatedObjectInfo, validate rest.ValidateObjectUpdateFunc, dress bool) (cur, next *porchv1alpha1.PackageRevision, synthesized []porchv1alpha1.Task, err error) {
	ns, _ := request.NamespaceFrom(ctx)
	cur, err = s.get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	if dress {
		synthesized = s.show(ctx, cur)
	} else {
		porchShape(cur)
	}
	obj, err := objInfo.UpdatedObject(ctx, cur.DeepCopy())
	if err != nil {
		return nil, nil, nil, err
	}
	next, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("not a PackageRevision: %T", obj))
	}
	if err := refusedField(next); err != nil {
		return nil, nil, nil, err
	}
	if validate != nil {
		if err := validate(ctx, next, cur); err != nil {
			return nil, nil, nil, err
		}
	}
	return cur, next, synthesized, nil
}

// revisionStatus serves packagerevisions/status.
type revisionStatus struct {
	storage *storage
	// v1alpha2 is set on the one serving porch.kpt.dev/v1alpha2.
	v1alpha2 bool
}

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
	var shape func(cur, next *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error)
	if r.v1alpha2 {
		shape = func(cur, next *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
			return next, fromV1alpha2(cur, next)
		}
	}
	return change(ctx, r.storage, name, objInfo, validate, opts, changeTarget{subresource: "status"}, shape)
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

// checkEgress refuses a clone from a git URL whose host the egress
// policy denies, naming the field.
func (r *revisions) checkEgress(pr *porchv1alpha1.PackageRevision) error {
	var errs field.ErrorList
	for i, t := range pr.Spec.Tasks {
		if t.Clone == nil || t.Clone.UpstreamRef.Git == nil {
			continue
		}
		if err := r.egress.CheckURL(t.Clone.UpstreamRef.Git.Repo); err != nil {
			path := field.NewPath("spec", "tasks").Index(i).Child("clone", "upstreamRef", "git", "repo")
			errs = append(errs, field.Forbidden(path, err.Error()))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(porchv1alpha1.GroupVersion.WithKind("PackageRevision").GroupKind(), pr.Name, errs)
	}
	return nil
}
