package v1alpha1

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RepositoryType is the kind of storage behind a Repository.
// +kubebuilder:validation:Enum=git;oci
type RepositoryType string

// The kinds of storage.
const (
	// GitRepositoryType is a git repository (spec.git).
	GitRepositoryType RepositoryType = "git"
	// OCIRepositoryType is a prefix in an OCI registry (spec.oci): each
	// package an OCI repository under it, each revision an artifact
	// (docs/oci-layout.md).
	OCIRepositoryType RepositoryType = "oci"
)

// SyncRequestedAnnotation, when its value changes, makes the controller
// sync the Repository at once (scion rpkg push sets it).
const SyncRequestedAnnotation = "config.porch.kpt.dev/sync-requested"

// DefaultSyncPeriod is how often a Repository is re-read from git when its
// spec.sync.period is not set (the controller's --sync-period).
const DefaultSyncPeriod = 5 * time.Minute

// RepositorySpec describes a git repository or OCI registry holding
// packages.
// +kubebuilder:validation:XValidation:rule="self.type != 'git' || has(self.git)",message="spec.git is required when spec.type is git"
// +kubebuilder:validation:XValidation:rule="self.type != 'oci' || has(self.oci)",message="spec.oci is required when spec.type is oci"
// +kubebuilder:validation:XValidation:rule="!has(self.git) || !has(self.oci)",message="spec.git and spec.oci are exclusive: set the one spec.type names"
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || (has(self.deployment) && self.deployment)",message="spec.cluster is for deployment repositories: set spec.deployment: true",fieldPath=".cluster"
type RepositorySpec struct {
	// Description is a human-readable description of the repository.
	// +optional
	Description string `json:"description,omitempty"`

	// Type of the repository: git (spec.git) or oci (spec.oci).
	// +kubebuilder:default=git
	// +optional
	Type RepositoryType `json:"type,omitempty"`

	// Git locates the git repository.
	// +optional
	Git *GitRepository `json:"git,omitempty"`

	// OCI locates the packages in an OCI registry.
	// +optional
	OCI *OCIRepository `json:"oci,omitempty"`

	// Deployment marks a repository whose packages are deployed to a
	// cluster. Publishing into a deployment repository requires every
	// readiness gate of the package to be met.
	// +optional
	Deployment bool `json:"deployment,omitempty"`

	// Cluster says where a deployment repository's packages run and which
	// Flux Kustomizations apply them: the controller reads them there
	// (status.cluster), rollouts judge health by them (spec.health.engine:
	// Flux), and scion tree, scion rollout status and the console show
	// what the cluster runs beside what was published.
	// +optional
	Cluster *TargetCluster `json:"cluster,omitempty"`

	// RevisionHistoryLimit keeps, per package, that many published
	// revisions and deletes older ones from git (their commits stay in the
	// branch's history). Never deleted: the latest revision, one a floating
	// tag points at, one a PackageVariant of the namespace names as its
	// upstream revision. Not set: keep every revision.
	// +kubebuilder:validation:Minimum=1
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Sync controls how often the repository is re-read from git.
	// +optional
	Sync *RepositorySync `json:"sync,omitempty"`
}

// GitRepository locates packages in a git repository.
type GitRepository struct {
	// Repo is the URL of the repository: https://, http://, ssh://, git's
	// user@host:path, or file://. Over ssh, the Secret holds a private key
	// and known_hosts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://') || self.startsWith('ssh://') || self.startsWith('file://') || self.matches('^[A-Za-z0-9._~-]+@([A-Za-z0-9.-]+|[[][0-9A-Fa-f:.]+[]]):[^:]+$')",message="must be an https://, http://, ssh:// or file:// URL, or user@host:path"
	Repo string `json:"repo"`

	// Branch holds published packages.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-') && !self.contains('..') && !self.contains(' ')",message="must be a valid git branch name"
	// +optional
	Branch string `json:"branch,omitempty"`

	// Directory is the folder inside the repository that holds the
	// packages; empty or "/" means the repository root. A leading or
	// trailing slash is ignored ("/catalog" is "catalog", as Porch writes
	// it).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.contains('//')",message="must be a path without '..' or '//'"
	// +optional
	Directory string `json:"directory,omitempty"`

	// CreateBranch creates Branch when it does not exist yet.
	// +optional
	CreateBranch bool `json:"createBranch,omitempty"`

	// SecretRef names a Secret in the Repository's namespace with the
	// credentials: keys username and password (basic auth), or bearerToken.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`

	// Author is the commit author name for commits Scion writes.
	// +optional
	Author string `json:"author,omitempty"`

	// Email is the commit author e-mail for commits Scion writes.
	// +optional
	Email string `json:"email,omitempty"`
}

// OCIRepository locates packages in an OCI registry: package P is the
// OCI repository REGISTRY/P, its revisions tags there (vN published,
// draft.WS, proposed.WS, deletion-proposed.vN; docs/oci-layout.md).
type OCIRepository struct {
	// Registry is the registry host and the path the packages are under,
	// without a scheme: registry.example.com/platform/blueprints. The
	// registry must serve its catalog (GET /v2/_catalog) and allow
	// deletes (drafts and proposals are deleted as they move on).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$')",message="must be REGISTRY[:PORT]/PATH without a scheme, such as registry.example.com/platform/blueprints (lowercase path)"
	Registry string `json:"registry"`

	// SecretRef names a Secret in the Repository's namespace with the
	// registry's credentials: a kubernetes.io/dockerconfigjson Secret
	// (key .dockerconfigjson, the entry for the registry's host), or keys
	// username and password. Without one, the registry is read and
	// written anonymously.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret in the same namespace.
type SecretRef struct {
	// Name of the Secret; empty names none (porchctl repo reg writes
	// secretRef.name "" for a repository without credentials).
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretName is the name of the Secret ref names; "" for none.
func (ref *SecretRef) SecretName() string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// Dir is the folder that holds the packages, without leading or trailing
// slashes: "" for the repository root.
func (g *GitRepository) Dir() string { return strings.Trim(g.Directory, "/") }

// RemoteUnavailableReason is the reason of a Repository's Ready=False
// while its git server does not answer (or is left alone for a while
// after it did not).
const RemoteUnavailableReason = "RemoteUnavailable"

// RepositorySync controls periodic re-reading of a repository.
type RepositorySync struct {
	// Period between syncs, a Go duration such as 30s, 5m or 1h, from 1s
	// to 8760h. Defaults to the controller's sync period.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="sync.period must be from 1s to 8760h"
	// +optional
	Period *metav1.Duration `json:"period,omitempty"`

	// RunOnceAt asks for one sync at this time, besides the periodic ones
	// (what porchctl repo sync writes): a new value also makes the
	// controller sync at once.
	// +optional
	RunOnceAt *metav1.Time `json:"runOnceAt,omitempty"`
}

// RepositoryStatus is the observed state of a Repository.
type RepositoryStatus struct {
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=atomic
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Commit is the head of the branch at the last sync.
	// +optional
	Commit string `json:"commit,omitempty"`

	// PackageCount is the number of packages found at the last sync.
	// +kubebuilder:default=0
	// +optional
	PackageCount int `json:"packageCount"`

	// RevisionCount is the number of package revisions (drafts, proposals,
	// published revisions) found at the last sync.
	// +kubebuilder:default=0
	// +optional
	RevisionCount int `json:"revisionCount"`

	// LastSyncTime is when the repository was last read from git.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// PackageVariants counts the PackageVariants that read from or write
	// to the repository (kept as they come and go): deleting a Repository
	// in use warns with it.
	// +optional
	PackageVariants int `json:"packageVariants,omitempty"`

	// Cluster is what the target cluster (spec.cluster) runs of the
	// repository's packages, as its Flux Kustomizations report it.
	// +optional
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// Repository registers a git repository, or a prefix in an OCI registry,
// of packages.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=repo
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Deployment",type=boolean,JSONPath=`.spec.deployment`
// +kubebuilder:printcolumn:name="Packages",type=integer,JSONPath=`.status.packageCount`
// +kubebuilder:printcolumn:name="Revisions",type=integer,JSONPath=`.status.revisionCount`
// +kubebuilder:printcolumn:name="Variants",type=integer,JSONPath=`.status.packageVariants`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.git.repo`,priority=1
// +kubebuilder:printcolumn:name="Registry",type=string,JSONPath=`.spec.oci.registry`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RepositorySpec `json:"spec"`

	// Status is what the controller observed. Until its first write it
	// reads observedGeneration -1, so that kstatus-based tools (Flux, kpt,
	// Config Sync) see a new object in progress, not current.
	// +kubebuilder:default:={"observedGeneration":-1}
	Status RepositoryStatus `json:"status,omitempty"`
}

// RepositoryList is a list of Repositories.
//
// +kubebuilder:object:root=true
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Repository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Repository{}, &RepositoryList{})
}

// Reasons of the Ready condition of a Repository (and
// RemoteUnavailableReason, RepositoryNotFoundReason of porch v1alpha1).
const (
	SyncedReason               = "Synced"
	AuthenticationFailedReason = "AuthenticationFailed"
	BranchNotFoundReason       = "BranchNotFound"
	SecretErrorReason          = "SecretError"
	GitErrorReason             = "GitError"
	RegistryErrorReason        = "RegistryError"
	SyncFailedReason           = "SyncFailed"
	URLNotAllowedReason        = "URLNotAllowed"
)

// CredentialsInURLReason is the reason of the Warning event for a
// Repository whose URL carries credentials.
const CredentialsInURLReason = "CredentialsInURL"

// SyncWarningReason is the reason of the Warning event for a Repository
// whose sync found something it skipped or did not expect (another tool's
// artifact under an OCI prefix, a published tag moved behind Scion's
// back): recorded when the list of them changes, and kept in the Ready
// condition's message while it lasts.
const SyncWarningReason = "SyncWarning"
