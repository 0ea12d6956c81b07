package repocache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/store"
)

// openOCI is Open for a Repository of type oci.
func (c *Cache) openOCI(ctx context.Context, r *configv1alpha1.Repository) (store.Store, error) {
	o := r.Spec.OCI
	if o == nil {
		return nil, fmt.Errorf("repository %s/%s has type oci and no spec.oci", r.Namespace, r.Name)
	}
	host, _, _ := strings.Cut(o.Registry, "/")
	secret := o.SecretRef.SecretName()
	auth, ca, secretVersion, err := c.registryCredentials(ctx, r.Namespace, secret, host, "spec.oci.secretRef")
	if err != nil {
		return nil, err
	}
	transport := c.transports().registry
	if len(ca) > 0 {
		if transport, err = store.WithCA(transport, ca); err != nil {
			return nil, fmt.Errorf("secret %s/%s named by spec.oci.secretRef: %w", r.Namespace, secret, err)
		}
	}
	key := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
	e := c.entry(key)
	h := sha256.Sum256([]byte(fmt.Sprintf("oci\x00%s\x00%s", o.Registry, secretVersion)))
	hash := hex.EncodeToString(h[:8])
	url := oci.Scheme + o.Registry
	if err := c.acquire(ctx, e); err != nil {
		return nil, fmt.Errorf("repository %s/%s is being opened by another reconcile (its registry %s is slow): %w", r.Namespace, r.Name, url, err)
	}
	defer func() { <-e.lock }()
	if e.repo != nil && e.hash == hash {
		return e.repo, nil
	}
	if err := c.Egress.CheckURL(o.Registry); err != nil {
		return nil, fmt.Errorf("spec.oci.registry: %w", err)
	}
	if e.gate == nil || e.gateURL != url {
		e.gate, e.gateURL = &store.Gate{}, url
	}
	start := time.Now()
	st, err := oci.OpenStore(ctx, oci.StoreOptions{
		Prefix: o.Registry, Gate: e.gate,
		Options: oci.Options{Keychain: registryKeychain{host: host, auth: auth}, Transport: transport, Timeout: c.Timeout},
		// Repositories read with the same credentials (and CA) share
		// the reads of the registry's catalog.
		Catalogs: &c.catalogs, CatalogKey: catalogKey(auth, ca),
		// The package layers written and read, kept for the process.
		Blobs: &c.blobs,
		// A Repository lists what its prefix held when it was made.
		Since: r.CreationTimestamp.Time,
	})
	metrics.ObserveGit("open", start, &err)
	if err != nil {
		return nil, err
	}
	e.repo, e.hash = st, hash
	return st, nil
}

// catalogKey identifies the credentials and the CA a registry is read
// with (a digest: no secret is kept in it); "" when anonymous.
func catalogKey(auth authn.Authenticator, ca []byte) string {
	h := sha256.New()
	if auth != nil {
		if cfg, err := auth.Authorization(); err == nil {
			data, _ := json.Marshal(cfg)
			h.Write(data)
		}
	}
	h.Write([]byte{0})
	h.Write(ca)
	return hex.EncodeToString(h.Sum(nil))
}

// entry returns the cache's entry of a Repository, made when missing.
func (c *Cache) entry(key types.NamespacedName) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repos == nil {
		c.repos = map[types.NamespacedName]*entry{}
	}
	e, ok := c.repos[key]
	if !ok {
		e = &entry{lock: make(chan struct{}, 1)}
		c.repos[key] = e
	}
	return e
}

// registryKeychain gives one registry host its credentials and every
// other host none: the controller never uses credentials of its own (a
// Docker config file of the process) for a tenant's Repository.
type registryKeychain struct {
	host string
	auth authn.Authenticator
}

// Resolve implements authn.Keychain.
func (k registryKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if k.auth != nil && target.RegistryStr() == k.host {
		return k.auth, nil
	}
	return authn.Anonymous, nil
}

// registryCredentials reads the credentials of a registry host from the
// Secret name in namespace (field names it in errors): a
// kubernetes.io/dockerconfigjson Secret's entry for the host, or keys
// username and password, and the CA bundle of a registry whose
// certificate a private authority signed (caFile or ca.crt). None when
// name is empty. The version returned changes whenever the Secret does.
func (c *Cache) registryCredentials(ctx context.Context, namespace, name, host, field string) (authn.Authenticator, []byte, string, error) {
	if name == "" {
		return nil, nil, "", nil
	}
	s := &corev1.Secret{}
	if err := c.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, "", fmt.Errorf("secret %s/%s named by %s does not exist: %w", namespace, name, field, ErrSecret)
		}
		return nil, nil, "", fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	ca := caBundle(s)
	if raw, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
		cfg, err := dockerConfigEntry(raw, host)
		if err != nil {
			return nil, nil, "", fmt.Errorf("secret %s/%s named by %s: %w: %w", namespace, name, field, err, ErrSecret)
		}
		return authn.FromConfig(cfg), ca, s.ResourceVersion, nil
	}
	user, pass := string(s.Data[SecretUsernameKey]), string(s.Data[SecretPasswordKey])
	switch {
	case pass != "":
		return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), ca, s.ResourceVersion, nil
	case len(ca) > 0:
		return nil, ca, s.ResourceVersion, nil // anonymous, with a private CA
	}
	return nil, nil, "", fmt.Errorf("secret %s/%s named by %s has none of %q, %q and %q: %w", namespace, name, field, corev1.DockerConfigJsonKey, SecretPasswordKey, SecretCAFileKey, ErrSecret)
}

// dockerConfigEntry reads the entry of host from a Docker config file's
// JSON ({"auths": {HOST: {username, password, auth, identitytoken,
// registrytoken}}}); hosts may be written with a scheme or a path, as
// docker login writes them.
func dockerConfigEntry(raw []byte, host string) (authn.AuthConfig, error) {
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return authn.AuthConfig{}, fmt.Errorf("%s is not a Docker config file: %v", corev1.DockerConfigJsonKey, err)
	}
	for k, v := range cfg.Auths {
		h := strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		h, _, _ = strings.Cut(h, "/")
		if h == host {
			return v, nil
		}
	}
	hosts := make([]string, 0, len(cfg.Auths))
	for k := range cfg.Auths {
		hosts = append(hosts, k)
	}
	return authn.AuthConfig{}, fmt.Errorf("%s has no entry for %s (it has: %s)", corev1.DockerConfigJsonKey, host, strings.Join(hosts, ", "))
}
