package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
)

// Options configure the server.
type Options struct {
	// Config reaches the cluster's API server: the storage, Repositories
	// and their Secrets.
	Config *restclient.Config
	// Kubeconfig is the file the delegated authentication and
	// authorization read to reach the cluster's API server ("": in the
	// cluster, the pod's service account).
	Kubeconfig string
	// Listener, when set, is where the server serves (tests); otherwise
	// BindAddress and Port.
	Listener    net.Listener
	BindAddress net.IP
	Port        int
	// CertFile and KeyFile are the serving certificate; when empty, a
	// self-signed one is made in CertDir.
	CertFile, KeyFile, CertDir string
	// Repositories opens git repositories (with their Repository's
	// credentials); Limits bound what a write may hold.
	Repositories *repocache.Cache
	Limits       store.Limits
	// FunctionImages are the images a pushed package's pipeline may run
	// as containers when it is rendered (builtin.ServerRuntime); only
	// builtin functions run when empty.
	FunctionImages []string
	// FunctionRunner runs the allowed images (as Pods) instead of a
	// container CLI on this machine, when set.
	FunctionRunner fn.ImageRunner
}

// Server is Scion's aggregated API server.
type Server struct {
	generic *genericapiserver.GenericAPIServer
	storage *storage
}

// New builds the server.
func New(o Options) (*Server, error) {
	if o.Config == nil || o.Repositories == nil {
		return nil, errors.New("apiserver: Config and Repositories are required")
	}
	rec := genericoptions.NewRecommendedOptions("", apiCodecs.LegacyCodec(porchv1alpha1.GroupVersion))
	rec.Etcd = nil
	rec.Admission = nil
	rec.EgressSelector = nil
	rec.Traces = nil
	rec.Features.EnablePriorityAndFairness = false
	rec.CoreAPI.CoreAPIKubeconfigPath = o.Kubeconfig
	rec.Authentication.RemoteKubeConfigFile = o.Kubeconfig
	rec.Authorization.RemoteKubeConfigFile = o.Kubeconfig
	// Health and discovery need no user.
	rec.Authorization.AlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}
	ss := rec.SecureServing
	ss.Listener = o.Listener
	if o.Listener == nil {
		ss.BindAddress = o.BindAddress
		ss.BindPort = o.Port
	}
	if o.CertFile != "" {
		ss.ServerCert.CertKey.CertFile, ss.ServerCert.CertKey.KeyFile = o.CertFile, o.KeyFile
	} else {
		ss.ServerCert.CertDirectory = o.CertDir
		if err := ss.MaybeDefaultWithSelfSignedCerts("localhost", []string{"scion-apiserver", "scion-apiserver.scion-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
			return nil, fmt.Errorf("making a serving certificate: %w", err)
		}
	}
	cfg := genericapiserver.NewRecommendedConfig(apiCodecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	defs, err := openAPIDefinitions()
	if err != nil {
		return nil, err
	}
	namer := openapinamer.NewDefinitionNamer(apiScheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, namer)
	cfg.OpenAPIConfig.Info.Title = "Scion (porch.kpt.dev)"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	cfg.OpenAPIV3Config.Info.Title = "Scion (porch.kpt.dev)"
	if err := rec.ApplyTo(cfg); err != nil {
		return nil, fmt.Errorf("configuring the API server: %w", err)
	}
	// A push carries a whole package (nothing is stored in etcd): its
	// body may be as large as the package limit (and the object around
	// the files), not the generic server's 3 MiB; one declared larger is
	// refused unread, and the pushes read at once are bounded.
	pushes := newPushLimit(o.Limits)
	cfg.MaxRequestBodyBytes = pushes.max
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(pushes.wrap(h), c)
	}
	generic, err := cfg.Complete().New("scion-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	st, err := newStorage(o.Config)
	if err != nil {
		return nil, err
	}
	c, err := client.New(o.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	sc, err := client.New(o.Config, client.Options{Scheme: scheme.NewStorage()})
	if err != nil {
		return nil, err
	}
	st.upstreams = &upstreamNames{reader: sc}
	table, err := newRevisionTable()
	if err != nil {
		return nil, err
	}
	st.cache = newListCache()
	revs := &revisions{storage: st, table: table, authz: cfg.Authorization.Authorizer, usage: &usage{api: c, storage: st}, egress: o.Repositories.Egress}
	group := genericapiserver.NewDefaultAPIGroupInfo(porchv1alpha1.GroupVersion.Group, apiScheme, metav1.ParameterCodec, apiCodecs)
	group.VersionedResourcesStorageMap[porchv1alpha1.GroupVersion.Version] = map[string]rest.Storage{
		"packagerevisions":          revs,
		"packagerevisions/status":   &revisionStatus{storage: st},
		"packagerevisions/approval": &approval{storage: st},
		"packagerevisionresources": &resources{storage: st, client: c, repos: o.Repositories, limits: o.Limits, functionImages: o.FunctionImages, functionRunner: o.FunctionRunner,
			service: &pkgservice.Service{Client: c, APIReader: c}, table: rest.NewDefaultTableConvertor(porchv1alpha1.GroupVersion.WithResource("packagerevisionresources").GroupResource())},
	}
	// Porch's next version, over the same stored revisions (the scheme
	// converts, porchv1alpha2.RegisterConversions); PackageRevisionResources
	// stay v1alpha1, as in Porch.
	revs2 := *revs
	revs2.v1alpha2 = true
	group.VersionedResourcesStorageMap[porchv1alpha2.GroupVersion.Version] = map[string]rest.Storage{
		"packagerevisions":        &revs2,
		"packagerevisions/status": &revisionStatus{storage: st, v1alpha2: true},
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	return &Server{generic: generic, storage: st}, nil
}

// Run serves until ctx is done, keeping the copy lists are served from
// (listCache) meanwhile.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.storage.cache.run(ctx, cache.NewListWatchFromClient(s.storage.rc, revisionsResource, metav1.NamespaceAll, fields.Everything()))
	return s.generic.PrepareRun().RunWithContext(ctx)
}
