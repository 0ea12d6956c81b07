package deployed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// DefaultTimeout bounds each request to a target cluster.
const DefaultTimeout = 10 * time.Second

// ErrKubeConfig is matched by errors about a Repository's kubeconfig
// Secret: missing, without the key, or a kubeconfig Scion refuses.
var ErrKubeConfig = errors.New("kubeconfig")

// Clusters reads the Kustomizations of target clusters. A client per
// kubeconfig Secret is kept while the Secret is unchanged. It is safe for
// concurrent use.
type Clusters struct {
	// Secrets reads the kubeconfig Secrets (in the Repositories'
	// namespaces).
	Secrets client.Reader
	// Timeout bounds each request to a cluster (DefaultTimeout when 0).
	Timeout time.Duration

	mu sync.Mutex
	// clients are by Repository: a Repository that names another Secret
	// replaces its client.
	clients map[types.NamespacedName]cached
}

type cached struct {
	version string
	client  dynamic.Interface
}

// Kustomization reads one Kustomization of a Repository's target cluster
// (nil when it does not exist).
func (c *Clusters) Kustomization(ctx context.Context, repo *configv1alpha1.Repository, name string) (*Kustomization, error) {
	dyn, err := c.client(ctx, repo)
	if err != nil {
		return nil, err
	}
	ns := repo.Spec.Cluster.FluxNamespace()
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	u, err := dyn.Resource(KustomizationGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Kustomization %s/%s in the cluster of repository %s: %w", ns, name, repo.Name, shorten(err))
	}
	return KustomizationFrom(u), nil
}

func (c *Clusters) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// client returns the client of a Repository's cluster, made anew when its
// Secret changed or it names another.
func (c *Clusters) client(ctx context.Context, repo *configv1alpha1.Repository) (dynamic.Interface, error) {
	ref := repo.Spec.Cluster.KubeConfig.SecretRef
	key := types.NamespacedName{Namespace: repo.Namespace, Name: ref.Name}
	own := types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}
	s := &corev1.Secret{}
	if err := c.Secrets.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %s named by spec.cluster.kubeConfig.secretRef does not exist: %w", key, ErrKubeConfig)
		}
		return nil, fmt.Errorf("reading secret %s: %w", key, err)
	}
	version := ref.Name + "\x00" + s.ResourceVersion + "\x00" + ref.Key
	c.mu.Lock()
	got, ok := c.clients[own]
	c.mu.Unlock()
	if ok && got.version == version {
		return got.client, nil
	}
	data, err := kubeConfigData(s, ref.Key)
	if err != nil {
		return nil, fmt.Errorf("secret %s named by spec.cluster.kubeConfig.secretRef: %w", key, err)
	}
	cfg, err := RESTConfig(data)
	if err != nil {
		return nil, fmt.Errorf("secret %s named by spec.cluster.kubeConfig.secretRef: %w", key, err)
	}
	cfg.Timeout = c.timeout()
	cfg.QPS, cfg.Burst = 5, 10
	cfg.UserAgent = "scion-controller"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("secret %s named by spec.cluster.kubeConfig.secretRef: %w: %w", key, ErrKubeConfig, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = map[types.NamespacedName]cached{}
	}
	c.clients[own] = cached{version: version, client: dyn}
	return dyn, nil
}

// Forget drops the client of a Repository (it is gone).
func (c *Clusters) Forget(repo types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clients, repo)
}

// kubeConfigData is the kubeconfig of a Secret: under key, or value then
// value.yaml when key is empty.
func kubeConfigData(s *corev1.Secret, key string) ([]byte, error) {
	keys := []string{key}
	if key == "" {
		keys = []string{"value", "value.yaml"}
	}
	for _, k := range keys {
		if v := s.Data[k]; len(v) > 0 {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no kubeconfig under %q: %w", keys, ErrKubeConfig)
}

// RESTConfig reads a kubeconfig a tenant wrote, for its current context,
// refusing what would make the controller run a program, read its own
// files or skip verifying the server: exec and auth-provider plugins,
// paths to files (certificate authority, client certificate and key,
// token file), insecure-skip-tls-verify. Credentials go inline
// (certificate-authority-data, token, client-certificate-data).
func RESTConfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %w", ErrKubeConfig)
	}
	name := cfg.CurrentContext
	ctxt := cfg.Contexts[name]
	if ctxt == nil {
		return nil, fmt.Errorf("the kubeconfig has no current context %q: %w", name, ErrKubeConfig)
	}
	cluster, user := cfg.Clusters[ctxt.Cluster], cfg.AuthInfos[ctxt.AuthInfo]
	if cluster == nil {
		return nil, fmt.Errorf("the kubeconfig's context %q names cluster %q, which it does not have: %w", name, ctxt.Cluster, ErrKubeConfig)
	}
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	var refused []string
	if user.Exec != nil {
		refused = append(refused, "users[].user.exec (a program to run)")
	}
	if user.AuthProvider != nil {
		refused = append(refused, "users[].user.auth-provider")
	}
	if user.TokenFile != "" || user.ClientCertificate != "" || user.ClientKey != "" || cluster.CertificateAuthority != "" {
		refused = append(refused, "paths to files (tokenFile, client-certificate, client-key, certificate-authority: put the data inline)")
	}
	if cluster.InsecureSkipTLSVerify {
		refused = append(refused, "insecure-skip-tls-verify")
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("the kubeconfig uses what Scion refuses: %s: %w", strings.Join(refused, "; "), ErrKubeConfig)
	}
	only := clientcmdapi.NewConfig()
	only.Clusters["c"], only.AuthInfos["u"] = cluster, user
	only.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	only.CurrentContext = "c"
	rc, err := clientcmd.NewDefaultClientConfig(*only, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig: %w: %w", ErrKubeConfig, err)
	}
	return rc, nil
}

// shorten keeps a cluster's error short: what a remote server says may
// be anything.
func shorten(err error) error {
	return errors.New(store.Shorten(err.Error(), 400))
}
