package content

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/scheme"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// CommitMessageAnnotation, on a PackageRevisionResources sent in an
// update, is the message of the commit the update makes (one line, at
// most MaxCommitMessage characters); without it the message says who
// updated. It is Scion's: Porch's clients do not send it.
const CommitMessageAnnotation = "config.porch.kpt.dev/commit-message"

// MaxCommitMessage is the longest commit message an update may give.
const MaxCommitMessage = 1000

// PackageRevisionResources is the content of a package revision: every
// file of the package (the Kptfile included) by its path in the package.
// Scion's API server serves it from git (it is not stored in etcd); its
// resourceVersion is the commit the content was read from, and an update
// of a Draft's files is one new commit on the draft, made only when the
// draft is still at that commit. It has the name of its PackageRevision.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PackageRevisionResources struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageRevisionResourcesSpec   `json:"spec,omitempty"`
	Status PackageRevisionResourcesStatus `json:"status,omitempty"`
}

// PackageRevisionResourcesList is a list of PackageRevisionResources.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PackageRevisionResourcesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageRevisionResources `json:"items"`
}

// PackageRevisionResourcesSpec is a revision's identity and files.
type PackageRevisionResourcesSpec struct {
	// PackageName is the package's path in its repository.
	PackageName string `json:"packageName,omitempty"`
	// WorkspaceName is the revision's workspace.
	WorkspaceName string `json:"workspaceName,omitempty"`
	// Revision is the revision number of a published revision.
	Revision int `json:"revision,omitempty"`
	// RepositoryName is the Repository holding the package.
	RepositoryName string `json:"repository,omitempty"`
	// Resources holds the package's files: path in the package to content.
	Resources map[string]string `json:"resources,omitempty"`
}

// PackageRevisionResourcesStatus is what became of the files written.
type PackageRevisionResourcesStatus struct {
	// RenderStatus is the result of rendering the package (running its
	// Kptfile pipeline) after an update.
	RenderStatus RenderStatus `json:"renderStatus,omitempty"`
}

// RenderStatus is the result of rendering a package, in the shape kpt
// and Porch report it.
type RenderStatus struct {
	// Result is what each function of the pipeline reported.
	Result ResultList `json:"result,omitempty"`
	// Err is the error rendering stopped with ("" when it succeeded).
	Err string `json:"error"`
}

// ResultList is kpt's FunctionResultList (kpt.dev/v1): the results of
// the functions of one render, in order.
type ResultList struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// ExitCode is 0 when every function succeeded, 1 otherwise.
	ExitCode int `json:"exitCode"`
	// Items has one entry per function run.
	Items []*Result `json:"items,omitempty"`
}

// Result is what one function reported.
type Result struct {
	// Image is the function's image (or ExecPath its executable).
	Image    string `json:"image,omitempty"`
	ExecPath string `json:"exec,omitempty"`
	// Stderr is what the function wrote to its standard error.
	Stderr string `json:"stderr,omitempty"`
	// ExitCode is the function's exit code.
	ExitCode int `json:"exitCode"`
	// Results are the function's structured results.
	Results []ResultItem `json:"results,omitempty"`
}

// ResultItem is one structured result of a function.
type ResultItem struct {
	Message  string `json:"message,omitempty"`
	Severity string `json:"severity,omitempty"`
	// ResourceRef names the resource the result is about.
	ResourceRef *ResourceIdentifier `json:"resourceRef,omitempty"`
	// Field is the field the result is about.
	Field *Field `json:"field,omitempty"`
	// File is the file the result is about.
	File *File `json:"file,omitempty"`
	// Tags are the function's labels for the result.
	Tags map[string]string `json:"tags,omitempty"`
}

// ResourceIdentifier names a resource.
type ResourceIdentifier struct {
	metav1.TypeMeta `json:",inline"`
	Name            string `json:"name,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
}

// Field names a field of a resource.
type Field struct {
	Path          string `json:"path,omitempty"`
	CurrentValue  string `json:"currentValue,omitempty"`
	ProposedValue string `json:"proposedValue,omitempty"`
}

// File names a file of the package.
type File struct {
	Path  string `json:"path,omitempty"`
	Index int    `json:"index,omitempty"`
}

func init() {
	SchemeBuilder.Register(&PackageRevisionResources{}, &PackageRevisionResourcesList{})
}

var (
	// SchemeBuilder registers the types of this package with a scheme,
	// in porch.kpt.dev/v1alpha1.
	SchemeBuilder = &scheme.Builder{GroupVersion: porchv1alpha1.GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
