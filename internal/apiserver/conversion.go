package apiserver

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// This file is the server's one conversion between the revisions it
// stores (internal.scion.dev) and the ones it shows (porch.kpt.dev):
// show on the way out, toStorage on the way in. What show synthesises
// (the task of a revision Scion wrote without one) is added to responses
// only: show returns it, and toStorage drops it when a client sends it
// back as it was shown. porch.kpt.dev/v1alpha2's own conversion is the
// scheme's (api/porch/v1alpha2); fromV1alpha2 completes what it cannot
// carry from the stored revision.

// show makes a revision read from the storage a porch.kpt.dev one
// (porchShape) and gives one Scion wrote without a task the task Porch
// would show (upstreamNames: the clone task of its upstream, or init). It
// returns the tasks it synthesised (nil: none), which the storage does
// not hold.
func (s *storage) show(ctx context.Context, pr *porchv1alpha1.PackageRevision) (synthesized []porchv1alpha1.Task) {
	porchShape(pr)
	if len(pr.Spec.Tasks) > 0 {
		return nil
	}
	s.upstreams.show(ctx, pr)
	return pr.Spec.Tasks
}

// shown is show for a response: the revision itself.
func (s *storage) shown(ctx context.Context, pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	s.show(ctx, pr)
	return pr
}

// porchShape makes an object read from the storage porch.kpt.dev's in
// what does not change with time: its managed fields name porch.kpt.dev,
// and its tasks carry Porch's names too (clone.upstreamRef.upstreamRef,
// upgrade.oldUpstreamRef and newUpstreamRef), which Porch's clients read.
func porchShape(pr *porchv1alpha1.PackageRevision) {
	pr.TypeMeta = metav1.TypeMeta{}
	for i := range pr.ManagedFields {
		if pr.ManagedFields[i].APIVersion == porchv1alpha1.StorageGroupVersion.String() {
			pr.ManagedFields[i].APIVersion = porchv1alpha1.GroupVersion.String()
		}
	}
	for i := range pr.Spec.Tasks {
		t := &pr.Spec.Tasks[i]
		if t.Clone != nil && t.Clone.UpstreamRef.Name != "" {
			t.Clone.UpstreamRef.UpstreamRef = &porchv1alpha1.PackageRevisionRef{Name: t.Clone.UpstreamRef.Name}
		}
		if u := t.Upgrade; u != nil {
			if u.OldUpstream.Name != "" {
				u.OldUpstreamRef = &porchv1alpha1.PackageRevisionRef{Name: u.OldUpstream.Name}
			}
			if u.NewUpstream.Name != "" {
				u.NewUpstreamRef = &porchv1alpha1.PackageRevisionRef{Name: u.NewUpstream.Name}
			}
		}
	}
}

// toStorage makes a revision to write the storage's: its tasks in
// Scion's shape (Porch's names taken, and dropped), its managed fields
// naming the storage's group. synthesized are the tasks show gave the
// revision the change was made from: sent back as shown, they are not
// stored.
func toStorage(pr *porchv1alpha1.PackageRevision, synthesized []porchv1alpha1.Task) (*porchv1alpha1.PackageRevision, error) {
	if synthesized != nil && equality.Semantic.DeepEqual(pr.Spec.Tasks, synthesized) {
		pr.Spec.Tasks = nil
	}
	pr.TypeMeta = metav1.TypeMeta{APIVersion: porchv1alpha1.StorageGroupVersion.String(), Kind: "PackageRevision"}
	for i := range pr.ManagedFields {
		if pr.ManagedFields[i].APIVersion == porchv1alpha1.GroupVersion.String() {
			pr.ManagedFields[i].APIVersion = porchv1alpha1.StorageGroupVersion.String()
		}
	}
	var errs field.ErrorList
	for i := range pr.Spec.Tasks {
		t := &pr.Spec.Tasks[i]
		path := field.NewPath("spec", "tasks").Index(i)
		if c := t.Clone; c != nil {
			up := &c.UpstreamRef
			if g := up.Git; g != nil {
				errs = append(errs, normalizeGit(path.Child("clone", "upstreamRef", "git"), g)...)
			}
			errs = append(errs, alias(path.Child("clone", "upstreamRef"), &up.Name, &up.UpstreamRef)...)
			up.Type = ""
		}
		if u := t.Upgrade; u != nil {
			errs = append(errs, alias(path.Child("upgrade", "oldUpstream"), &u.OldUpstream.Name, &u.OldUpstreamRef)...)
			errs = append(errs, alias(path.Child("upgrade", "newUpstream"), &u.NewUpstream.Name, &u.NewUpstreamRef)...)
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(porchv1alpha1.GroupVersion.WithKind("PackageRevision").GroupKind(), pr.Name, errs)
	}
	return pr, nil
}

// fromV1alpha2 completes next, a change of cur sent as v1alpha2, with
// what v1alpha2 does not carry: the tasks (v1alpha2 shows the first as
// spec.source, which cannot change), the revision number (in v1alpha2's
// status), the commit and the lifecycle git has, and the transition
// times of conditions whose status did not change.
func fromV1alpha2(cur, next *porchv1alpha1.PackageRevision) error {
	if len(next.Spec.Tasks) > 0 {
		var was *porchv1alpha2.PackageSource
		if len(cur.Spec.Tasks) > 0 {
			was = porchv1alpha2.SourceOf(cur.Spec.Tasks[0])
		}
		if !equality.Semantic.DeepEqual(was, porchv1alpha2.SourceOf(next.Spec.Tasks[0])) {
			return apierrors.NewInvalid(porchv1alpha2.GroupVersion.WithKind("PackageRevision").GroupKind(), cur.Name, field.ErrorList{
				field.Forbidden(field.NewPath("spec", "source"), "the source of a revision cannot change: make a new revision (copy or upgrade) instead"),
			})
		}
	}
	next.Spec.Tasks = cur.Spec.Tasks
	next.Spec.Revision = cur.Spec.Revision
	next.Status.Commit = cur.Status.Commit
	next.Status.Lifecycle = cur.Status.Lifecycle
	for i := range next.Status.Conditions {
		c := &next.Status.Conditions[i]
		j := slices.IndexFunc(cur.Status.Conditions, func(o porchv1alpha1.Condition) bool { return o.Type == c.Type })
		if j >= 0 && c.LastTransitionTime == nil && cur.Status.Conditions[j].Status == c.Status {
			c.LastTransitionTime = cur.Status.Conditions[j].LastTransitionTime
		}
	}
	return nil
}

// refusedField refuses, naming the field, a revision sent as v1alpha2
// with a field Scion cannot hold (porchv1alpha2.Refused; the mark is
// never stored).
func refusedField(pr *porchv1alpha1.PackageRevision) error {
	fe := porchv1alpha2.Refused(pr)
	if fe == nil {
		return nil
	}
	parts := strings.Split(fe.Field, ".")
	return apierrors.NewInvalid(porchv1alpha2.GroupVersion.WithKind("PackageRevision").GroupKind(), pr.Name, field.ErrorList{
		field.Forbidden(field.NewPath(parts[0], parts[1:]...), fe.Detail),
	})
}

// normalizeGit checks a clone's git source and takes Porch's shapes of
// it: a directory of "/" (the root), a secretRef without a name (none).
func normalizeGit(path *field.Path, g *porchv1alpha1.GitPackage) field.ErrorList {
	var errs field.ErrorList
	if err := store.ValidateURL(g.Repo); err != nil {
		errs = append(errs, field.Invalid(path.Child("repo"), store.Redact(g.Repo), err.Error()))
	}
	if store.HasCredentials(g.Repo) {
		errs = append(errs, field.Invalid(path.Child("repo"), store.Redact(g.Repo), "credentials do not belong in a URL: name a Secret in secretRef"))
	}
	g.Directory = porchv1alpha1.GitDirectory(g.Directory)
	if g.Directory != "" {
		if err := pkg.ValidatePackagePath(g.Directory); err != nil {
			errs = append(errs, field.Invalid(path.Child("directory"), g.Directory, err.Error()))
		}
	}
	if g.SecretRef != nil && g.SecretRef.Name == "" {
		g.SecretRef = nil
	}
	return errs
}

// alias takes Porch's reference (porch) into Scion's name, refusing the
// two when they differ, and drops Porch's.
func alias(path *field.Path, name *string, porch **porchv1alpha1.PackageRevisionRef) field.ErrorList {
	if *porch == nil {
		return nil
	}
	ref := (*porch).Name
	*porch = nil
	switch {
	case *name == "":
		*name = ref
	case *name != ref:
		return field.ErrorList{field.Invalid(path, ref, "names "+*name+" in Scion's shape and "+ref+" in Porch's: give one")}
	}
	return nil
}
