// Package scheme builds the runtime scheme with every API Scion uses.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
)

// New returns the scheme of Scion's clients (the CLI, people's tools):
// the Kubernetes built-in types, CRDs (read to learn an injected kind's
// schema) and Scion's APIs, with PackageRevision and its content in
// porch.kpt.dev, as Scion's API server serves them.
func New() *runtime.Scheme {
	s := common()
	utilruntime.Must(porchv1alpha1.AddToScheme(s))
	utilruntime.Must(content.AddToScheme(s))
	return s
}

// NewStorage returns the scheme of Scion's controllers: as New, but with
// PackageRevision in Scion's storage group (internal.scion.dev), which
// the controllers read and write directly (no request of theirs goes
// through the API server Scion adds for people).
func NewStorage() *runtime.Scheme {
	s := common()
	utilruntime.Must(porchv1alpha1.AddToStorageScheme(s))
	return s
}

// common is what both schemes hold.
func common() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(configv1alpha1.AddToScheme(s))
	utilruntime.Must(configv1alpha2.AddToScheme(s))
	return s
}
