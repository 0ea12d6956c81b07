package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default periods of the reads of target clusters (spec.cluster).
const (
	// DefaultClusterPoll is how often a cluster is read while something
	// of it moves or changed lately (the controller's --cluster-poll).
	DefaultClusterPoll = 5 * time.Second
	// DefaultClusterIdle is how often a cluster is read once everything
	// is settled.
	DefaultClusterIdle = time.Minute
)

// TargetCluster says where the packages a deployment repository
// publishes run, and which Flux Kustomizations apply them there.
type TargetCluster struct {
	// KubeConfig reaches the cluster: a Secret in the Repository's
	// namespace holding a kubeconfig. It needs no more than get on the
	// Kustomizations of flux.namespace (config/target-cluster has the
	// Role); its credentials are never logged.
	// +required
	KubeConfig KubeConfigReference `json:"kubeConfig"`

	// Flux names the Kustomizations that apply the repository's packages
	// in that cluster.
	// +optional
	Flux FluxDeployment `json:"flux,omitempty"`
}

// KubeConfigReference names a kubeconfig in a Secret, as Flux's
// Kustomization spec.kubeConfig does.
type KubeConfigReference struct {
	// SecretRef names the Secret, in the Repository's namespace.
	// +required
	SecretRef KubeConfigSecretRef `json:"secretRef"`
}

// KubeConfigSecretRef names a Secret and its key holding a kubeconfig.
type KubeConfigSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// Key of the kubeconfig in the Secret: value, value.yaml or
	// kubeconfig; when not set, value, then value.yaml (as Flux reads
	// them).
	// +kubebuilder:validation:Enum=value;value.yaml;kubeconfig
	// +optional
	Key string `json:"key,omitempty"`
}

// KubeConfigKeys are the keys of a Secret a kubeconfig is read from.
var KubeConfigKeys = []string{"value", "value.yaml", "kubeconfig"}

// DefaultFluxNamespace is where Flux keeps its Kustomizations when a
// Repository does not say.
const DefaultFluxNamespace = "flux-system"

// FluxDeployment names the Flux Kustomizations that deploy a repository.
type FluxDeployment struct {
	// Namespace of the Kustomizations in the target cluster.
	// +kubebuilder:default=flux-system
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Kustomizations that apply the repository's packages, each with the
	// packages it applies (every package when it names none). Without
	// any, one Kustomization named like the Repository applies every
	// package.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Kustomizations []FluxKustomization `json:"kustomizations,omitempty"`
}

// FluxKustomization is one Kustomization deploying packages of a
// repository.
type FluxKustomization struct {
	// Name of the Kustomization.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// Packages it applies (their paths in the repository); all when
	// empty.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=set
	// +optional
	Packages []string `json:"packages,omitempty"`
}

// KustomizationFor returns the Kustomization that deploys pkg of the
// Repository repo ("" when none does).
func (c *TargetCluster) KustomizationFor(repo, pkg string) string {
	if len(c.Flux.Kustomizations) == 0 {
		return repo
	}
	for _, k := range c.Flux.Kustomizations {
		if len(k.Packages) == 0 {
			return k.Name
		}
		for _, p := range k.Packages {
			if p == pkg {
				return k.Name
			}
		}
	}
	return ""
}

// FluxNamespace is the namespace of the cluster's Kustomizations.
func (c *TargetCluster) FluxNamespace() string {
	if c.Flux.Namespace == "" {
		return DefaultFluxNamespace
	}
	return c.Flux.Namespace
}

// DeployState is how what a cluster runs of a package compares with what
// Scion published.
// +kubebuilder:validation:Enum=Current;Progressing;Behind;Failed;Drifted;NotDeployed;Unknown
type DeployState string

// Deploy states.
const (
	// DeployCurrent: the cluster runs the newest published revision, and
	// its Kustomization is Ready.
	DeployCurrent DeployState = "Current"
	// DeployProgressing: the Kustomization is applying or waiting for
	// what it applied to become healthy.
	DeployProgressing DeployState = "Progressing"
	// DeployBehind: the cluster runs an older published revision, and its
	// Kustomization is Ready (it has not fetched the newest yet).
	DeployBehind DeployState = "Behind"
	// DeployFailed: the Kustomization is not Ready (it failed to apply,
	// or what it applied is not healthy).
	DeployFailed DeployState = "Failed"
	// DeployDrifted: the cluster runs content Scion never published
	// (another branch, a commit pushed outside Scion, a revision
	// deleted), or the Kustomization is suspended.
	DeployDrifted DeployState = "Drifted"
	// DeployNotDeployed: no Kustomization applies the package, or it has
	// applied nothing yet.
	DeployNotDeployed DeployState = "NotDeployed"
	// DeployUnknown: the cluster could not be read.
	DeployUnknown DeployState = "Unknown"
)

// ClusterStatus is what the target cluster of a Repository runs, as its
// Flux Kustomizations report it.
type ClusterStatus struct {
	// ObservedAt is when the cluster was last read.
	// +optional
	ObservedAt *metav1.Time `json:"observedAt,omitempty"`
	// Error says why the cluster could not be read, when it could not.
	// +optional
	Error string `json:"error,omitempty"`
	// Packages are the repository's published packages and what the
	// cluster runs of each.
	// +listType=map
	// +listMapKey=package
	// +optional
	Packages []DeployedPackage `json:"packages,omitempty"`
}

// Package is what the cluster runs of pkg (nil when the status does
// not say, or s is nil).
func (s *ClusterStatus) Package(pkg string) *DeployedPackage {
	if s == nil {
		return nil
	}
	for i := range s.Packages {
		if s.Packages[i].Package == pkg {
			return &s.Packages[i]
		}
	}
	return nil
}

// DeployedPackage is what a cluster runs of one package.
type DeployedPackage struct {
	// Package is the package's path in the repository.
	Package string `json:"package"`
	// Kustomization is the Kustomization that applies it
	// (namespace/name), when one does.
	// +optional
	Kustomization string `json:"kustomization,omitempty"`
	// State compares what runs with what was published.
	State DeployState `json:"state"`
	// Revision is the published revision the cluster runs (0: none, or
	// content Scion never published).
	// +optional
	Revision int `json:"revision,omitempty"`
	// Latest is the newest published revision of the package.
	// +optional
	Latest int `json:"latest,omitempty"`
	// AppliedRevision is the source revision the Kustomization last
	// applied, as Flux writes it (main@sha1:..., v3@sha256:...).
	// +optional
	AppliedRevision string `json:"appliedRevision,omitempty"`
	// HealthChecked: the Kustomization waits for what it applied to be
	// healthy (spec.wait or spec.healthChecks), so its Ready says the
	// workloads are healthy, not only applied.
	// +optional
	HealthChecked bool `json:"healthChecked,omitempty"`
	// Message says why, when the state is not Current (the
	// Kustomization's Ready message, say).
	// +optional
	Message string `json:"message,omitempty"`
	// LastFailure is the Kustomization's last failure (its Ready=False
	// message) while it keeps trying the same revision: Flux retries a
	// failed apply or health check and reads Progressing meanwhile.
	// +optional
	LastFailure string `json:"lastFailure,omitempty"`
	// Since is when the state last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}
