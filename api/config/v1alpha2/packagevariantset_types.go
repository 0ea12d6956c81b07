package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// PackageVariantSetLabel is set on every PackageVariant a set generates; its
// value is the UID of the owning PackageVariantSet.
const PackageVariantSetLabel = "config.porch.kpt.dev/packagevariantset"

// PackageVariantSetFinalizer keeps a PackageVariantSet until the
// PackageVariants it generated are gone, so deleting a set deletes its
// variants whether or not a garbage collector runs.
const PackageVariantSetFinalizer = "config.porch.kpt.dev/packagevariantsets"

// VariantsReadyCondition is True when every PackageVariant the set
// generates exists with its current spec and is Ready for its current
// generation: what `kubectl wait --for=condition=VariantsReady` waits for.
// (Ready says the set itself is reconciled: its variants exist.)
const VariantsReadyCondition = "VariantsReady"

// NoTargetsCondition is True while a target of the set selects nothing
// (its message says which): the set can be Ready with nothing to do, and
// this says so. It is removed once every target selects something.
const NoTargetsCondition = configv1alpha1.NoTargetsCondition

// Condition reasons of a PackageVariantSet.
const (
	// AllVariantsReadyReason: VariantsReady is True.
	AllVariantsReadyReason = "AllVariantsReady"
	// VariantsNotReadyReason: some generated PackageVariants are not Ready
	// yet; the message names them.
	VariantsNotReadyReason  = "VariantsNotReady"
	NoMatchingTargetsReason = "NoMatchingTargets"
	// KindNotAllowedReason: an objectSelector selects a kind the
	// controller may not read (--readable-kinds).
	KindNotAllowedReason = "KindNotAllowed"
	// VariantNameTakenReason: a PackageVariant the set generates has the
	// name of one the set does not own; the set leaves it alone and looks
	// again every minute.
	VariantNameTakenReason = "VariantNameTaken"
	// VariantDeletingReason: a PackageVariant the set wants is still
	// being deleted (deleted by hand, or undesired a moment ago); the set
	// creates it again once it is gone.
	VariantDeletingReason = "VariantDeleting"
	// NoTargetsReason: a target's selector or list matches nothing.
	NoTargetsReason = configv1alpha1.NoTargetsReason
	// DuplicateDownstreamReason: two targets generate the same downstream
	// repository and package; nothing is written until they differ.
	DuplicateDownstreamReason = "DuplicateDownstream"
	// ExpressionFailedReason: a CEL expression failed when evaluated (a
	// missing key, a wrong type, the cost limit); the message names it.
	ExpressionFailedReason = "ExpressionFailed"
	UnexpectedErrorReason  = "UnexpectedError"
	ReconciledReason       = "Reconciled"
)

// MaxUpstreams bounds spec.upstreams: a group of packages, not a catalog.
const MaxUpstreams = 20

// PackageVariantSetSpec fans one upstream package, or a group of them, out
// over many targets.
// +kubebuilder:validation:XValidation:rule="has(self.upstream) != has(self.upstreams)",message="exactly one of upstream and upstreams must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.upstreams) || self.targets.all(t, !(has(t.repositorySelector) && has(t.repositorySelector.packageNames)) && !(has(t.objectSelector) && has(t.objectSelector.packageNames)) && !(has(t.repositories) && t.repositories.exists(r, has(r.packageNames))))",message="with upstreams, targets set no packageNames: each variant's downstream package is its upstream's package name (or template.downstream.packageExpr)"
type PackageVariantSetSpec struct {
	// Upstream is the package revision every generated variant derives
	// from. Exactly one of upstream and upstreams is set.
	// +optional
	Upstream *configv1alpha1.Upstream `json:"upstream,omitempty"`

	// Upstreams is a group of packages that get the same mutations: every
	// target gets one PackageVariant per upstream, from the same template,
	// whose downstream package defaults to that upstream's package name.
	// Each package appears once (the downstream packages of two upstreams
	// of one name would be one package). Exactly one of upstream and
	// upstreams is set.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=package
	// +optional
	Upstreams []configv1alpha1.Upstream `json:"upstreams,omitempty"`

	// Targets generate one PackageVariant per repository and package name.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +required
	Targets []Target `json:"targets"`
}

// Target is one way of listing downstreams, plus the template that turns
// each of them into a PackageVariant. Exactly one of repositories,
// repositorySelector and objectSelector is set.
// +kubebuilder:validation:XValidation:rule="[has(self.repositories), has(self.repositorySelector), has(self.objectSelector)].exists_one(x, x)",message="exactly one of repositories, repositorySelector and objectSelector must be set"
type Target struct {
	// Repositories lists downstream repositories and package names.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Repositories []RepositoryTarget `json:"repositories,omitempty"`

	// RepositorySelector selects Repository objects in this namespace by
	// label.
	// +optional
	RepositorySelector *RepositorySelector `json:"repositorySelector,omitempty"`

	// ObjectSelector selects arbitrary objects in this namespace by kind
	// and label; each object's name is the default downstream repository.
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`

	// Template shapes the generated PackageVariants.
	// +optional
	Template *PackageVariantTemplate `json:"template,omitempty"`
}

// RepositoryTarget is one downstream repository with package names.
type RepositoryTarget struct {
	// Name of the downstream Repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// PackageNames are the downstream package names; empty means the
	// upstream package name.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// RepositorySelector is a label selector over Repositories plus package
// names.
type RepositorySelector struct {
	metav1.LabelSelector `json:",inline"`

	// PackageNames are the downstream package names; empty means the
	// upstream package name.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// ObjectSelector selects objects of one kind by label (and optionally by
// name). Secrets cannot be selected.
// +kubebuilder:validation:XValidation:rule="!(self.apiVersion == 'v1' && self.kind == 'Secret')",message="Secrets cannot be selected: their labels and annotations may carry what they protect"
type ObjectSelector struct {
	metav1.LabelSelector `json:",inline"`

	// APIVersion of the selected objects, such as v1 or example.com/v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// Kind of the selected objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name restricts the selection to the object of this name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name *string `json:"name,omitempty"`

	// PackageNames are the downstream package names; empty means the
	// upstream package name.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// PackageVariantTemplate shapes the PackageVariants generated from a
// target. Each field has a static form and, where values vary per target, a
// CEL expression form.
type PackageVariantTemplate struct {
	// Downstream sets the downstream repository and package.
	// +optional
	Downstream *DownstreamTemplate `json:"downstream,omitempty"`

	// +optional
	AdoptionPolicy *configv1alpha1.AdoptionPolicy `json:"adoptionPolicy,omitempty"`

	// +optional
	DeletionPolicy *configv1alpha1.DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Labels for the downstream PackageRevisions.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// LabelExprs are overlaid on Labels.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	LabelExprs []MapExpr `json:"labelExprs,omitempty"`

	// Annotations for the downstream PackageRevisions.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// AnnotationExprs are overlaid on Annotations.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AnnotationExprs []MapExpr `json:"annotationExprs,omitempty"`

	// PackageContext edits the package context ConfigMap.
	// +optional
	PackageContext *PackageContextTemplate `json:"packageContext,omitempty"`

	// Pipeline lists functions prepended to the downstream pipeline.
	// +optional
	Pipeline *PipelineTemplate `json:"pipeline,omitempty"`

	// Injectors select in-cluster objects for configuration injection.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Injectors []InjectionSelectorTemplate `json:"injectors,omitempty"`

	// Dependencies is copied to each PackageVariant's spec.dependencies.
	// +optional
	Dependencies *configv1alpha1.Dependencies `json:"dependencies,omitempty"`
}

// DownstreamTemplate sets the downstream repository and package, statically
// or with CEL.
// +kubebuilder:validation:XValidation:rule="!(has(self.repo) && has(self.repoExpr))",message="only one of repo and repoExpr may be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.__package__) && has(self.packageExpr))",message="only one of package and packageExpr may be set"
type DownstreamTemplate struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Repo *string `json:"repo,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	// +optional
	Package *string `json:"package,omitempty"`
	// RepoExpr is a CEL expression; it cannot use the repository variable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	RepoExpr *string `json:"repoExpr,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	PackageExpr *string `json:"packageExpr,omitempty"`
}

// PackageContextTemplate edits the package context ConfigMap.
// +kubebuilder:validation:XValidation:rule="!has(self.data) || (!('name' in self.data) && !('package-path' in self.data))",message="data keys name and package-path are reserved"
// +kubebuilder:validation:XValidation:rule="!has(self.removeKeys) || (!('name' in self.removeKeys) && !('package-path' in self.removeKeys))",message="removeKeys must not list the reserved keys name and package-path"
type PackageContextTemplate struct {
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	DataExprs []MapExpr `json:"dataExprs,omitempty"`
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +optional
	RemoveKeyExprs []string `json:"removeKeyExprs,omitempty"`
}

// InjectionSelectorTemplate is an injection selector whose name may be a
// CEL expression.
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.nameExpr)",message="exactly one of name and nameExpr must be set"
type InjectionSelectorTemplate struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group *string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Version *string `json:"version,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind *string `json:"kind,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^/]+$`
	// +optional
	Name *string `json:"name,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	NameExpr *string `json:"nameExpr,omitempty"`
}

// MapExpr is one map entry whose key and value are each static or CEL.
// +kubebuilder:validation:XValidation:rule="has(self.key) != has(self.keyExpr)",message="exactly one of key and keyExpr must be set"
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.valueExpr)",message="exactly one of value and valueExpr must be set"
type MapExpr struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key *string `json:"key,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	KeyExpr *string `json:"keyExpr,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value *string `json:"value,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ValueExpr *string `json:"valueExpr,omitempty"`
}

// PipelineTemplate is a pipeline whose function configs may use CEL.
type PipelineTemplate struct {
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Mutators []FunctionTemplate `json:"mutators,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Validators []FunctionTemplate `json:"validators,omitempty"`
}

// FunctionTemplate is a pipeline function plus CEL entries overlaid on its
// configMap.
// +kubebuilder:validation:XValidation:rule="!has(self.name) || !self.name.contains('.')",message="function names must not contain '.'"
type FunctionTemplate struct {
	kptfilev1.Function `json:",inline"`

	// ConfigMapExprs are overlaid on configMap.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ConfigMapExprs []MapExpr `json:"configMapExprs,omitempty"`
}

// PackageVariantSetStatus is the observed state of a PackageVariantSet.
type PackageVariantSetStatus struct {
	// Conditions: Ready and Stalled (and Reconciling).
	// +listType=atomic
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Summary counts the generated PackageVariants.
	// +optional
	Summary *Summary `json:"summary,omitempty"`

	// Upstream names the set's upstream packages, comma-separated in the
	// order of the spec (spec.upstream's, or spec.upstreams'): what
	// kubectl get's UPSTREAM column shows.
	// +optional
	Upstream string `json:"upstream,omitempty"`
}

// Summary counts the PackageVariants of a set at the last reconcile.
type Summary struct {
	// Desired is the number of PackageVariants the targets generate.
	Desired int `json:"desired"`
	// Created, Updated and Deleted count the PackageVariants written since
	// the spec last changed (its generation), over every reconcile it
	// took: after applying a set of nine targets, created is 9. Each
	// reconcile that writes also says what it wrote in a Reconciled event.
	Created int `json:"created"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
	// Ready is the number of generated PackageVariants that are Ready for
	// their current generation.
	Ready int `json:"ready"`
	// NotReady names the first ten generated PackageVariants (by name)
	// that are not Ready, the ones the VariantsReady condition names:
	// what scion tree shows of a set too big to show whole.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	NotReady []string `json:"notReady,omitempty"`
	// Upstreams counts the variants of each upstream of spec.upstreams,
	// in the order of the spec (absent for a set of one upstream).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Upstreams []UpstreamSummary `json:"upstreams,omitempty"`
	// Generation is the set's generation whose writes created, updated
	// and deleted count (a reconcile that wrote and then failed counts
	// too, though it did not observe the generation).
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// UpstreamSummary counts the generated PackageVariants of one upstream of
// spec.upstreams.
type UpstreamSummary struct {
	// Repo and Package name the upstream, as spec.upstreams does.
	Repo    string `json:"repo"`
	Package string `json:"package"`
	// Desired is the number of PackageVariants of this upstream the
	// targets generate; Ready how many of them are Ready.
	Desired int `json:"desired"`
	Ready   int `json:"ready"`
}

// AllUpstreams is the set's upstreams in the order of the spec: spec.upstream
// alone, or spec.upstreams.
func (s *PackageVariantSetSpec) AllUpstreams() []configv1alpha1.Upstream {
	if s.Upstream != nil {
		return []configv1alpha1.Upstream{*s.Upstream}
	}
	return s.Upstreams
}

// UpstreamPath is the field of the i-th of AllUpstreams.
func (s *PackageVariantSetSpec) UpstreamPath(i int) *field.Path {
	if s.Upstream != nil {
		return field.NewPath("spec", "upstream")
	}
	return field.NewPath("spec", "upstreams").Index(i)
}

// PackageVariantSet generates PackageVariants from targets and a template.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=pvs
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.status.upstream`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.summary.desired`
// +kubebuilder:printcolumn:name="Ready PVs",type=integer,JSONPath=`.status.summary.ready`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PackageVariantSetSpec `json:"spec"`

	// Status is what the controller observed. Until its first write it
	// reads observedGeneration -1, so that kstatus-based tools (Flux, kpt,
	// Config Sync) see a new object in progress, not current.
	// +kubebuilder:default:={"observedGeneration":-1}
	Status PackageVariantSetStatus `json:"status,omitempty"`
}

// PackageVariantSetList is a list of PackageVariantSets.
//
// +kubebuilder:object:root=true
type PackageVariantSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageVariantSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageVariantSet{}, &PackageVariantSetList{})
}
