package v1alpha2

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// RegisterConversions adds to s the conversions between this version and
// porch.kpt.dev/v1alpha1, the version Scion stores. Fields one version
// has and the other has not are left empty: a server writing a v1alpha2
// object keeps them from the stored one (the tasks after the first, the
// lifecycle git has, the commit).
func RegisterConversions(s *runtime.Scheme) error {
	for _, f := range []struct {
		a, b any
		fn   conversion.ConversionFunc
	}{
		{(*porchv1alpha1.PackageRevision)(nil), (*PackageRevision)(nil), func(a, b any, _ conversion.Scope) error {
			FromV1alpha1(a.(*porchv1alpha1.PackageRevision), b.(*PackageRevision))
			return nil
		}},
		{(*PackageRevision)(nil), (*porchv1alpha1.PackageRevision)(nil), func(a, b any, _ conversion.Scope) error {
			return carryRefusal(ToV1alpha1(a.(*PackageRevision), b.(*porchv1alpha1.PackageRevision)), b.(*porchv1alpha1.PackageRevision))
		}},
		{(*porchv1alpha1.PackageRevisionList)(nil), (*PackageRevisionList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*porchv1alpha1.PackageRevisionList), b.(*PackageRevisionList)
			out.ListMeta = in.ListMeta
			out.Items = make([]PackageRevision, len(in.Items))
			for i := range in.Items {
				FromV1alpha1(&in.Items[i], &out.Items[i])
			}
			return nil
		}},
		{(*PackageRevisionList)(nil), (*porchv1alpha1.PackageRevisionList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*PackageRevisionList), b.(*porchv1alpha1.PackageRevisionList)
			out.ListMeta = in.ListMeta
			out.Items = make([]porchv1alpha1.PackageRevision, len(in.Items))
			for i := range in.Items {
				if err := carryRefusal(ToV1alpha1(&in.Items[i], &out.Items[i]), &out.Items[i]); err != nil {
					return fmt.Errorf("items[%d]: %w", i, err)
				}
			}
			return nil
		}},
	} {
		if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
			return err
		}
	}
	return nil
}

// FieldError is a field of a v1alpha2 PackageRevision that v1alpha1,
// and so Scion, cannot hold.
type FieldError struct {
	// Field is the field's path, such as spec.packageMetadata.
	Field string
	// Detail says why, and what to do instead.
	Detail string
}

// Error names the field.
func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// RefusedAnnotation carries, on a v1alpha1 object converted from a
// v1alpha2 one, the FieldError the conversion met ("FIELD: DETAIL"), for
// Scion's API server to refuse the request naming the field (Refused): an
// error of a conversion function reaches the client wrapped in the whole
// object, not as a field error. The server removes it from every object
// it writes.
const RefusedAnnotation = "internal.scion.dev/v1alpha2-refused"

// carryRefusal records a FieldError on out (RefusedAnnotation); any other
// error is returned.
func carryRefusal(err error, out *porchv1alpha1.PackageRevision) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[RefusedAnnotation] = fe.Field + "\x00" + fe.Detail
	return nil
}

// Refused takes RefusedAnnotation off pr and returns the FieldError it
// carried, if any.
func Refused(pr *porchv1alpha1.PackageRevision) *FieldError {
	v, ok := pr.Annotations[RefusedAnnotation]
	if !ok {
		return nil
	}
	delete(pr.Annotations, RefusedAnnotation)
	if len(pr.Annotations) == 0 {
		pr.Annotations = nil
	}
	f, detail, _ := strings.Cut(v, "\x00")
	return &FieldError{Field: f, Detail: detail}
}

// FromV1alpha1 shows a v1alpha1 revision as v1alpha2: the revision
// number in the status, the first task as spec.source and
// status.creationSource, the controller's conditions (Ready, Reconciling,
// Stalled) apart from the package's.
func FromV1alpha1(in *porchv1alpha1.PackageRevision, out *PackageRevision) {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.Spec = PackageRevisionSpec{
		PackageName:    in.Spec.PackageName,
		RepositoryName: in.Spec.Repository,
		WorkspaceName:  in.Spec.WorkspaceName,
		Lifecycle:      in.Spec.Lifecycle,
		ReadinessGates: in.Spec.ReadinessGates,
	}
	if len(in.Spec.Tasks) > 0 {
		out.Spec.Source = SourceOf(in.Spec.Tasks[0])
	}
	st := in.Status
	out.Status = PackageRevisionStatus{
		ObservedGeneration: st.ObservedGeneration,
		Revision:           in.Spec.Revision,
		UpstreamLock:       st.UpstreamLock,
		PublishedBy:        st.PublishedBy,
		PublishedAt:        st.PublishTimestamp,
		Deployment:         st.Deployment,
	}
	if len(in.Spec.Tasks) > 0 {
		out.Status.CreationSource = creationSource[in.Spec.Tasks[0].Type]
	}
	for _, c := range st.Conditions {
		if !porchv1alpha1.IsControllerCondition(c.Type) {
			out.Status.PackageConditions = append(out.Status.PackageConditions, PackageCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
			continue
		}
		mc := metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
		if c.LastTransitionTime != nil {
			mc.LastTransitionTime = *c.LastTransitionTime
		}
		out.Status.Conditions = append(out.Status.Conditions, mc)
	}
}

// creationSource names Porch's v1alpha2 creation source of each task
// type (an edit task is v1alpha2's copy).
var creationSource = map[porchv1alpha1.TaskType]string{
	porchv1alpha1.TaskTypeInit:    "init",
	porchv1alpha1.TaskTypeClone:   "clone",
	porchv1alpha1.TaskTypeEdit:    "copy",
	porchv1alpha1.TaskTypeUpgrade: "upgrade",
}

// SourceOf is the v1alpha2 source of a revision whose first task is t.
func SourceOf(t porchv1alpha1.Task) *PackageSource {
	switch {
	case t.Init != nil:
		return &PackageSource{Init: &PackageInitSpec{Description: t.Init.Description, Keywords: t.Init.Keywords, Site: t.Init.Site}}
	case t.Type == porchv1alpha1.TaskTypeInit:
		return &PackageSource{Init: &PackageInitSpec{}}
	case t.Clone != nil:
		up := t.Clone.UpstreamRef
		if g := up.Git; g != nil {
			out := &GitPackage{Repo: g.Repo, Ref: g.Ref, Directory: g.Directory}
			if g.SecretRef != nil {
				out.SecretRef.Name = g.SecretRef.Name
			}
			return &PackageSource{CloneFrom: &UpstreamPackage{Type: "git", Git: out}}
		}
		return &PackageSource{CloneFrom: &UpstreamPackage{UpstreamRef: &PackageRevisionRef{Name: up.Revision()}}}
	case t.Edit != nil:
		return &PackageSource{CopyFrom: &PackageRevisionRef{Name: t.Edit.SourceRef.Name}}
	case t.Upgrade != nil:
		u := t.Upgrade
		return &PackageSource{Upgrade: &PackageUpgradeSpec{
			OldUpstream:    PackageRevisionRef{Name: refName(u.OldUpstream, u.OldUpstreamRef)},
			NewUpstream:    PackageRevisionRef{Name: refName(u.NewUpstream, u.NewUpstreamRef)},
			CurrentPackage: PackageRevisionRef{Name: u.LocalPackageRevisionRef.Name},
			Strategy:       u.Strategy,
		}}
	}
	return nil
}

// refName is the name of Scion's reference, or else Porch's.
func refName(scion porchv1alpha1.PackageRevisionRef, porch *porchv1alpha1.PackageRevisionRef) string {
	if scion.Name == "" && porch != nil {
		return porch.Name
	}
	return scion.Name
}

// ToV1alpha1 makes a v1alpha2 revision v1alpha1: spec.source becomes the
// one task, status.revision spec.revision, and the package's and the
// controller's conditions one list. What v1alpha1 cannot hold
// (spec.packageMetadata, spec.source.init.subpackage, other than one
// field of spec.source) is left out and returned as a *FieldError.
func ToV1alpha1(in *PackageRevision, out *porchv1alpha1.PackageRevision) error {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.Spec = porchv1alpha1.PackageRevisionSpec{
		PackageName:    in.Spec.PackageName,
		Repository:     in.Spec.RepositoryName,
		WorkspaceName:  in.Spec.WorkspaceName,
		Revision:       in.Status.Revision,
		Lifecycle:      in.Spec.Lifecycle,
		ReadinessGates: in.Spec.ReadinessGates,
	}
	var refused error
	if src := in.Spec.Source; src != nil {
		t, err := taskOf(src)
		if err != nil {
			refused = err
		} else {
			out.Spec.Tasks = []porchv1alpha1.Task{t}
		}
	}
	if in.Spec.PackageMetadata != nil && (len(in.Spec.PackageMetadata.Labels) > 0 || len(in.Spec.PackageMetadata.Annotations) > 0) {
		refused = &FieldError{Field: "spec.packageMetadata", Detail: "Scion does not set labels and annotations on a package's resources; leave it empty (a function in the package's pipeline, set-labels or set-annotations, does it)"}
	}
	st := in.Status
	out.Status = porchv1alpha1.PackageRevisionStatus{
		ObservedGeneration: st.ObservedGeneration,
		UpstreamLock:       st.UpstreamLock,
		PublishedBy:        st.PublishedBy,
		PublishTimestamp:   st.PublishedAt,
		Deployment:         st.Deployment,
	}
	for _, c := range st.PackageConditions {
		out.Status.Conditions = append(out.Status.Conditions, porchv1alpha1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	for _, c := range st.Conditions {
		pc := porchv1alpha1.Condition{Type: c.Type, Status: porchv1alpha1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration}
		if !c.LastTransitionTime.IsZero() {
			pc.LastTransitionTime = ptr.To(c.LastTransitionTime)
		}
		out.Status.Conditions = append(out.Status.Conditions, pc)
	}
	return refused
}

// taskOf is the v1alpha1 task of a v1alpha2 source.
func taskOf(src *PackageSource) (porchv1alpha1.Task, error) {
	var set []string
	var t porchv1alpha1.Task
	if i := src.Init; i != nil {
		set = append(set, "init")
		if i.Subpackage != "" {
			return t, &FieldError{Field: "spec.source.init.subpackage", Detail: "Scion makes the package itself, not a subpackage of it; init the subpackage as a package of its own"}
		}
		t = porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: i.Description, Keywords: i.Keywords, Site: i.Site}}
	}
	if c := src.CloneFrom; c != nil {
		set = append(set, "cloneFrom")
		up := porchv1alpha1.UpstreamPackage{Type: c.Type}
		if c.UpstreamRef != nil {
			up.UpstreamRef = &porchv1alpha1.PackageRevisionRef{Name: c.UpstreamRef.Name}
		}
		if g := c.Git; g != nil {
			up.Git = &porchv1alpha1.GitPackage{Repo: g.Repo, Ref: g.Ref, Directory: g.Directory}
			if g.SecretRef.Name != "" {
				up.Git.SecretRef = &porchv1alpha1.SecretRef{Name: g.SecretRef.Name}
			}
		}
		t = porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: up}}
	}
	if c := src.CopyFrom; c != nil {
		set = append(set, "copyFrom")
		t = porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{SourceRef: porchv1alpha1.PackageRevisionRef{Name: c.Name}}}
	}
	if u := src.Upgrade; u != nil {
		set = append(set, "upgrade")
		t = porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeUpgrade, Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{
			OldUpstream:             porchv1alpha1.PackageRevisionRef{Name: u.OldUpstream.Name},
			NewUpstream:             porchv1alpha1.PackageRevisionRef{Name: u.NewUpstream.Name},
			LocalPackageRevisionRef: porchv1alpha1.PackageRevisionRef{Name: u.CurrentPackage.Name},
			Strategy:                u.Strategy,
		}}
	}
	if len(set) != 1 {
		return t, &FieldError{Field: "spec.source", Detail: fmt.Sprintf("exactly one of init, cloneFrom, copyFrom and upgrade must be set, not %d %v", len(set), set)}
	}
	return t, nil
}
