package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
)

// The state kube-aggregator is in for a moment after an APIService is
// registered: its discovery document already lists the group's
// resources (it reads the server whether or not the APIService is
// Available), while requests to the group are answered 503 until the
// APIService is marked Available. A local API server is not ready then:
// the first Get of a test failed with 503 in CI when readiness was
// judged by the discovery document alone.
func TestWaitServed_notBeforeTheGroupIsProxied(t *testing.T) {
	g := NewWithT(t)
	var available atomic.Bool
	resources := map[string][]metav1.APIResource{
		porchv1alpha1.GroupVersion.Version: {{Name: "packagerevisions", Namespaced: true, Kind: "PackageRevision"},
			{Name: "packagerevisionresources", Namespaced: true, Kind: "PackageRevisionResources"}},
		porchv1alpha2.GroupVersion.Version: {{Name: "packagerevisions", Namespaced: true, Kind: "PackageRevision"}},
	}
	group := porchv1alpha1.GroupVersion.Group
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version := strings.TrimPrefix(r.URL.Path, "/apis/"+group+"/")
		switch {
		case r.URL.Path == "/api" || r.URL.Path == "/apis":
			doc := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
			if r.URL.Path == "/apis" {
				var versions []apidiscoveryv2.APIVersionDiscovery
				for _, sv := range servedVersions {
					v := apidiscoveryv2.APIVersionDiscovery{Version: sv.gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
					for _, res := range resources[sv.gv.Version] {
						v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: res.Name, Scope: apidiscoveryv2.ScopeNamespace,
							ResponseKind: &metav1.GroupVersionKind{Group: group, Version: sv.gv.Version, Kind: res.Kind},
							Verbs:        []string{"get", "list"}})
					}
					versions = append(versions, v)
				}
				doc.Items = []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: group}, Versions: versions}}
			}
			w.Header().Set("Content-Type", discovery.AcceptV2)
			_ = json.NewEncoder(w).Encode(doc)
		case resources[version] != nil:
			if !available.Load() {
				http.Error(w, "service unavailable", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: group + "/" + version, APIResources: resources[version]})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())

	err = waitServed(context.Background(), dc, time.Second)
	g.Expect(err).To(MatchError(ContainSubstring("the control plane does not proxy porch.kpt.dev/v1alpha1 yet")))

	available.Store(true)
	g.Expect(waitServed(context.Background(), dc, 10*time.Second)).To(Succeed())
}
