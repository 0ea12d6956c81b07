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
)

// New returns a scheme with the Kubernetes built-in types, CRDs (read to
// learn an injected kind's schema) and Scion's APIs.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(configv1alpha1.AddToScheme(s))
	utilruntime.Must(configv1alpha2.AddToScheme(s))
	utilruntime.Must(porchv1alpha1.AddToScheme(s))
	return s
}
