package engine

import (
	"errors"
	"fmt"
	"path"
	"strings"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

// Origin identifies a package revision in git or in an OCI registry:
// what a downstream's Kptfile records in upstream and upstreamLock.
type Origin struct {
	// Repo is the repository URL, or oci://REGISTRY/PREFIX for a package
	// in an OCI registry (whose Directory is then the package, Ref its
	// tag and Commit its manifest's digest).
	Repo string
	// Directory is the package folder inside the repository.
	Directory string
	// Ref is the tag or branch the revision was read from, such as
	// "team/app/v3".
	Ref string
	// Commit is the commit the revision was read from.
	Commit string
}

// ociScheme starts the Repo of an origin in an OCI registry.
const ociScheme = "oci://"

// image is REGISTRY/PREFIX/PACKAGE:TAG for an origin in an OCI registry;
// ok is false for git.
func (o Origin) image() (string, bool) {
	prefix, ok := strings.CutPrefix(o.Repo, ociScheme)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(prefix, "/") + "/" + o.Directory + ":" + o.Ref, true
}

func (o Origin) upstream(strategy kptfilev1.UpdateStrategy) *kptfilev1.Upstream {
	if strategy == "" {
		strategy = kptfilev1.ResourceMerge
	}
	if image, ok := o.image(); ok {
		return &kptfilev1.Upstream{Type: kptfilev1.OCIOrigin, OCI: &kptfilev1.OCI{Image: image}, UpdateStrategy: strategy}
	}
	return &kptfilev1.Upstream{Type: kptfilev1.GitOrigin, Git: &kptfilev1.Git{Repo: o.Repo, Directory: o.Directory, Ref: o.Ref}, UpdateStrategy: strategy}
}

func (o Origin) lock() *kptfilev1.UpstreamLock {
	if image, ok := o.image(); ok {
		return &kptfilev1.UpstreamLock{Type: kptfilev1.OCIOrigin, OCI: &kptfilev1.OCILock{Image: image, Digest: o.Commit}}
	}
	return &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: o.Repo, Directory: o.Directory, Ref: o.Ref, Commit: o.Commit}}
}

// CloneOptions shape a clone.
type CloneOptions struct {
	// Name is the downstream package name (Kptfile metadata.name). When
	// empty, the last element of PackagePath is used.
	Name string
	// PackagePath is the downstream package path in its repository; a
	// nested path (with '/') is recorded as package-path in the package
	// context.
	PackagePath string
	// ForDeployment writes the package context ConfigMap.
	ForDeployment bool
	// Strategy is the update strategy recorded in the Kptfile
	// (resource-merge when empty).
	Strategy kptfilev1.UpdateStrategy
}

// Clone derives a downstream package from an upstream one: the Kptfile
// records the upstream and its lock and takes the downstream name, every
// resource gets a kpt-merge identity comment (so later updates match
// resources the downstream renames), and with ForDeployment the package
// context is generated. The upstream package is not modified.
func Clone(upstream *pkg.Package, origin Origin, opts CloneOptions) (*pkg.Package, error) {
	name := opts.Name
	if name == "" {
		name = path.Base(opts.PackagePath)
	}
	if name == "" || name == "." || name == "/" {
		return nil, errors.New("clone: the downstream package name is required")
	}
	if _, ok := upstream.File(kptfilev1.KptFileName); !ok {
		return nil, errors.New("clone: the upstream package has no Kptfile")
	}
	p := upstream.DeepCopy()
	err := p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		kf.Metadata.Name = name
		kf.Upstream = origin.upstream(opts.Strategy)
		kf.UpstreamLock = origin.lock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	nodes, err := p.Resources()
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	for _, n := range nodes {
		setKptMergeComment(n)
	}
	if opts.ForDeployment {
		if nodes, err = ensurePackageContext(p, nodes, name, opts.PackagePath); err != nil {
			return nil, fmt.Errorf("clone: %w", err)
		}
	}
	if err := p.SetResources(nodes); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	return p, nil
}
