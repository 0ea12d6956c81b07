package v1

import "strings"

const (
	// KptFileName is the file name of the Kptfile inside a package.
	KptFileName = "Kptfile"
	// KptFileAPIVersion is the apiVersion of a Kptfile.
	KptFileAPIVersion = "kpt.dev/v1"
	// KptFileKind is the kind of a Kptfile.
	KptFileKind = "Kptfile"
	// SaveOnRenderFailureAnnotation, set to "true" on the Kptfile, keeps the
	// output of a failed render instead of discarding it.
	SaveOnRenderFailureAnnotation = "kpt.dev/save-on-render-failure"
)

// KptFile is the Kptfile of a package.
type KptFile struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata,omitempty"`

	// Upstream is where the package was cloned from.
	Upstream *Upstream `json:"upstream,omitempty"`
	// UpstreamLock pins the exact upstream commit the package was cloned or
	// last updated from.
	UpstreamLock *UpstreamLock `json:"upstreamLock,omitempty"`
	// Info is human-oriented metadata about the package, including its
	// readiness gates.
	Info *PackageInfo `json:"info,omitempty"`
	// Pipeline lists the KRM functions rendering runs.
	Pipeline *Pipeline `json:"pipeline,omitempty"`
	// Inventory identifies the package's inventory object when applied.
	Inventory *Inventory `json:"inventory,omitempty"`
	// Status holds package conditions and the outcome of the last render.
	Status *Status `json:"status,omitempty"`
}

// ObjectMeta is the subset of Kubernetes object metadata a Kptfile carries.
type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// OriginType is the kind of source a package was cloned from.
type OriginType string

// The origin types Scion writes.
const (
	// GitOrigin is a package in a git repository.
	GitOrigin OriginType = "git"
	// OCIOrigin is a package stored as an OCI artifact.
	OCIOrigin OriginType = "oci"
)

// UpdateStrategy is how a package is updated from its upstream.
// +kubebuilder:validation:Enum=resource-merge;fast-forward;force-delete-replace;copy-merge
type UpdateStrategy string

// The update strategies of kpt.
const (
	ResourceMerge      UpdateStrategy = "resource-merge"
	FastForward        UpdateStrategy = "fast-forward"
	ForceDeleteReplace UpdateStrategy = "force-delete-replace"
	CopyMerge          UpdateStrategy = "copy-merge"
)

// Upstream is the source a package was cloned from.
type Upstream struct {
	Type           OriginType     `json:"type,omitempty"`
	Git            *Git           `json:"git,omitempty"`
	OCI            *OCI           `json:"oci,omitempty"`
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`
}

// OCI locates a package stored as an OCI artifact.
type OCI struct {
	// Image is REGISTRY/REPOSITORY:TAG.
	Image string `json:"image,omitempty"`
}

// Git locates a package in a git repository.
type Git struct {
	Repo      string `json:"repo,omitempty"`
	Directory string `json:"directory,omitempty"`
	Ref       string `json:"ref,omitempty"`
}

// UpstreamLock records the resolved upstream a package was derived from.
type UpstreamLock struct {
	Type OriginType `json:"type,omitempty"`
	Git  *GitLock   `json:"git,omitempty"`
	OCI  *OCILock   `json:"oci,omitempty"`
}

// OCILock is an OCI artifact resolved to its manifest's digest.
type OCILock struct {
	// Image is REGISTRY/REPOSITORY:TAG, the tag read.
	Image string `json:"image,omitempty"`
	// Digest is the manifest's digest (sha256:...) at the time.
	Digest string `json:"digest,omitempty"`
}

// Commit is what the lock pins: the git commit, or the OCI manifest's
// digest ("" when neither is recorded).
func (l *UpstreamLock) Commit() string {
	switch {
	case l == nil:
		return ""
	case l.Git != nil:
		return l.Git.Commit
	case l.OCI != nil:
		return l.OCI.Digest
	}
	return ""
}

// Ref is the ref the lock was read at: a git ref, or the OCI tag.
func (l *UpstreamLock) Ref() string {
	switch {
	case l == nil:
		return ""
	case l.Git != nil:
		return l.Git.Ref
	case l.OCI != nil:
		if i := strings.LastIndex(l.OCI.Image, ":"); i > strings.LastIndex(l.OCI.Image, "/") {
			return l.OCI.Image[i+1:]
		}
	}
	return ""
}

// Source names where the lock points: the git URL, or oci://IMAGE.
func (l *UpstreamLock) Source() string {
	switch {
	case l == nil:
		return ""
	case l.Git != nil:
		return l.Git.Repo
	case l.OCI != nil:
		return "oci://" + l.OCI.Image
	}
	return ""
}

// GitLock is a Git location resolved to a commit.
type GitLock struct {
	Repo      string `json:"repo,omitempty"`
	Directory string `json:"directory,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// PackageInfo is descriptive metadata about a package.
type PackageInfo struct {
	Site        string   `json:"site,omitempty"`
	Emails      []string `json:"emails,omitempty"`
	License     string   `json:"license,omitempty"`
	LicenseFile string   `json:"licenseFile,omitempty"`
	Description string   `json:"description,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	Man         string   `json:"man,omitempty"`
	// ReadinessGates lists the condition types that must be True before
	// the package may be published to a deployment repository.
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
}

// ReadinessGate names a condition type that gates readiness.
type ReadinessGate struct {
	// ConditionType is the type of the condition that must be True.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	ConditionType string `json:"conditionType"`
}

// Pipeline is the list of KRM functions that render a package.
type Pipeline struct {
	// Mutators run first, in order, and may change resources.
	// +kubebuilder:validation:MaxItems=64
	Mutators []Function `json:"mutators,omitempty"`
	// Validators run after the mutators and must not change resources.
	// +kubebuilder:validation:MaxItems=64
	Validators []Function `json:"validators,omitempty"`
}

// Function is one KRM function of a pipeline.
// +kubebuilder:validation:XValidation:rule="has(self.image) != has(self.exec)",message="exactly one of image and exec must be set"
type Function struct {
	// Image is the container image of the function; builtin functions are
	// matched by its name regardless of registry and tag.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// Exec is the path of a local executable implementing the function.
	// +kubebuilder:validation:MaxLength=512
	Exec string `json:"exec,omitempty"`
	// ConfigPath is the package-relative path of the function config file.
	// +kubebuilder:validation:MaxLength=512
	ConfigPath string `json:"configPath,omitempty"`
	// ConfigMap is an inline function config, passed as a ConfigMap.
	ConfigMap map[string]string `json:"configMap,omitempty"`
	// Name identifies the function within the pipeline.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// Selectors restrict the function to matching resources; a resource
	// matching any selector is selected.
	// +kubebuilder:validation:MaxItems=32
	Selectors []Selector `json:"selectors,omitempty"`
	// Exclusions remove resources from the selection.
	// +kubebuilder:validation:MaxItems=32
	Exclusions []Selector `json:"exclude,omitempty"`
}

// Selector matches resources; all fields that are set must match.
type Selector struct {
	APIVersion  string            `json:"apiVersion,omitempty"`
	Kind        string            `json:"kind,omitempty"`
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Inventory identifies the inventory object of an applied package.
type Inventory struct {
	Namespace   string            `json:"namespace,omitempty"`
	Name        string            `json:"name,omitempty"`
	InventoryID string            `json:"inventoryID,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Status is the status block of a Kptfile.
type Status struct {
	Conditions   []Condition   `json:"conditions,omitempty"`
	RenderStatus *RenderStatus `json:"renderStatus,omitempty"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is a package condition stored in the Kptfile.
type Condition struct {
	Type    string          `json:"type"`
	Status  ConditionStatus `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
}

// RenderStatus is the outcome of the last pipeline render.
type RenderStatus struct {
	MutationSteps   []StepResult `json:"mutationSteps,omitempty"`
	ValidationSteps []StepResult `json:"validationSteps,omitempty"`
	// ErrorSummary is empty when the render succeeded.
	ErrorSummary string `json:"errorSummary,omitempty"`
}

// StepResult is the outcome of one function of a render.
type StepResult struct {
	Name     string       `json:"name,omitempty"`
	Image    string       `json:"image,omitempty"`
	Exec     string       `json:"exec,omitempty"`
	ExitCode int          `json:"exitCode"`
	Stderr   string       `json:"stderr,omitempty"`
	Error    string       `json:"error,omitempty"`
	Results  []ResultItem `json:"results,omitempty"`
}

// ResultItem is one entry of a function's results.
type ResultItem struct {
	Message  string `json:"message,omitempty"`
	Severity string `json:"severity,omitempty"`
	// ResourceRef names the resource the result is about, as
	// "apiVersion/kind/namespace/name".
	ResourceRef string `json:"resourceRef,omitempty"`
	Field       string `json:"field,omitempty"`
	File        string `json:"file,omitempty"`
}
