// Package oci stores package revisions as OCI artifacts: one manifest whose
// config is Scion's package metadata and whose one layer is the package's
// files as a gzipped tar, with the Kptfile and the metadata also as
// annotations (docs/oci-layout.md). It reads and writes registries with
// go-containerregistry.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/scion-dev/scion/internal/pkg"
)

// Media types of a package revision stored as an OCI artifact.
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.scion.package.v1"
	// ConfigMediaType is the config blob's: Metadata as JSON.
	ConfigMediaType = "application/vnd.scion.package.config.v1+json"
	// LayerMediaType is the one layer's: the package's files as a tar,
	// gzipped.
	LayerMediaType = "application/vnd.scion.package.layer.v1.tar+gzip"
)

// Annotations of the manifest.
const (
	// PackageAnnotation is the package's name (its path in a repository).
	PackageAnnotation = "dev.scion.package.name"
	// KptfileAnnotation is the package's Kptfile, whole (so tools can read
	// a package's metadata without its layer).
	KptfileAnnotation = "dev.scion.package.kptfile"
	// TitleAnnotation names the layer's file (ORAS shows it).
	TitleAnnotation = "org.opencontainers.image.title"
)

// Scheme prefixes a reference Scion reads as an OCI artifact.
const Scheme = "oci://"

// DefaultMaxLayerSize bounds the layer of a package pulled (compressed,
// and each of its files and all of them uncompressed): a package is
// configuration, and a bigger layer is refused before it is read.
const DefaultMaxLayerSize = 100 << 20

// Metadata is the config blob: what the package is.
type Metadata struct {
	// Package is the package's name.
	Package string `json:"package"`
	// Files is the number of files in the layer.
	Files int `json:"files"`
}

// Options configure a registry client.
type Options struct {
	// Keychain finds credentials for a registry (authn.DefaultKeychain:
	// the Docker config file, DOCKER_CONFIG, credential helpers).
	Keychain authn.Keychain
	// Transport carries the requests (http.DefaultTransport when nil):
	// the place for a private CA.
	Transport http.RoundTripper
	// Timeout bounds each push or pull (1 minute when 0).
	Timeout time.Duration
	// MaxLayerSize is DefaultMaxLayerSize when 0.
	MaxLayerSize int64
}

func (o Options) remote(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain())}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	return opts
}

// keychain is Keychain, authn.DefaultKeychain when nil.
func (o Options) keychain() authn.Keychain {
	if o.Keychain != nil {
		return o.Keychain
	}
	return authn.DefaultKeychain
}

// session bounds one push, pull or mirror by the timeout, and returns
// the registry client's options for it.
func (o Options) session(ctx context.Context) (context.Context, []remote.Option, context.CancelFunc) {
	t := o.Timeout
	if t == 0 {
		t = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	return ctx, o.remote(ctx), cancel
}

func (o Options) maxLayer() int64 {
	if o.MaxLayerSize > 0 {
		return o.MaxLayerSize
	}
	return DefaultMaxLayerSize
}

// ParseReference reads oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]; without a
// tag it is :latest.
func ParseReference(s string) (name.Reference, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return nil, fmt.Errorf("%q is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG", s)
	}
	ref, err := name.ParseReference(rest, name.StrictValidation)
	if err != nil {
		if ref, err2 := name.ParseReference(rest); err2 == nil && !strings.ContainsAny(rest, ":@") {
			return ref, nil // no tag: latest
		}
		return nil, fmt.Errorf("%q is not an OCI reference: %w", s, err)
	}
	return ref, nil
}

// artifact is a package made into an OCI artifact: its blobs (config,
// layer) and its manifest.
type artifact struct {
	blobs    []v1.Layer
	layer    []byte // the package's layer, gzipped (nil: a relabelled manifest, whose blobs the registry has)
	manifest []byte
	digest   string
	parsed   v1.Manifest // manifest, decoded
}

// build makes p into an artifact: the same files always make the same
// manifest and digest.
// A package over max bytes (its files, or its layer) is refused, as a
// pull would refuse it.
func build(packageName string, p *pkg.Package, max int64) (*artifact, error) {
	return buildAnnotated(packageName, p, nil, max)
}

// buildAnnotated is build with more manifest annotations (a Store's
// revision metadata; empty values are left out).
func buildAnnotated(packageName string, p *pkg.Package, extra map[string]string, max int64) (*artifact, error) {
	kf, ok := p.File("Kptfile")
	if !ok {
		return nil, fmt.Errorf("the package has no Kptfile: not a package")
	}
	var total int64
	for _, path := range p.Paths() {
		data, _ := p.File(path)
		total += int64(len(data))
	}
	if total > max {
		return nil, fmt.Errorf("package %s: its files are %d bytes, over the limit of %d a package may have in a registry", packageName, total, max)
	}
	layer, err := tarGz(p)
	if err != nil {
		return nil, err
	}
	if int64(len(layer)) > max {
		return nil, fmt.Errorf("package %s: its layer is %d bytes, over the limit of %d", packageName, len(layer), max)
	}
	cfg, err := json.Marshal(Metadata{Package: packageName, Files: p.Len()})
	if err != nil {
		return nil, err
	}
	a := &artifact{blobs: []v1.Layer{static.NewLayer(cfg, ConfigMediaType), static.NewLayer(layer, LayerMediaType)}, layer: layer}
	desc := func(l v1.Layer, ann map[string]string) (v1.Descriptor, error) {
		d, err := l.Digest()
		if err != nil {
			return v1.Descriptor{}, err
		}
		n, err := l.Size()
		if err != nil {
			return v1.Descriptor{}, err
		}
		mt, err := l.MediaType()
		return v1.Descriptor{MediaType: mt, Digest: d, Size: n, Annotations: ann}, err
	}
	cd, err := desc(a.blobs[0], nil)
	if err != nil {
		return nil, err
	}
	ld, err := desc(a.blobs[1], map[string]string{TitleAnnotation: packageTitle(packageName)})
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: ArtifactType, Config: cd, Layers: []v1.Descriptor{ld},
		Annotations: map[string]string{PackageAnnotation: packageName, KptfileAnnotation: string(kf)}}
	for k, v := range extra {
		if v != "" {
			m.Annotations[k] = v
		}
	}
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	a.parsed = m
	h, _, err := v1.SHA256(bytes.NewReader(a.manifest))
	if err != nil {
		return nil, err
	}
	a.digest = h.String()
	return a, nil
}

// Push stores p at ref and returns the manifest's digest.
func Push(ctx context.Context, ref name.Reference, packageName string, p *pkg.Package, o Options) (string, error) {
	a, err := build(packageName, p, o.maxLayer())
	if err != nil {
		return "", err
	}
	_, opts, cancel := o.session(ctx)
	defer cancel()
	return a.digest, a.push(ref, opts)
}

// push uploads the artifact's blobs, then its manifest at ref.
func (a *artifact) push(ref name.Reference, opts []remote.Option) error {
	repo := ref.Context()
	for _, b := range a.blobs {
		if err := remote.WriteLayer(repo, b, opts...); err != nil {
			return fmt.Errorf("pushing to %s: %w", repo, describe(err))
		}
	}
	if err := remote.Put(ref, rawManifest{a.manifest}, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, describe(err))
	}
	return nil
}

// packageTitle is the layer's file name.
func packageTitle(packageName string) string {
	return strings.ReplaceAll(packageName, "/", "-") + ".tar.gz"
}

// rawManifest is a manifest as bytes, for remote.Put.
type rawManifest struct{ raw []byte }

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// ErrNotPackage is returned for an artifact that is not a Scion package
// (another media type, or a layer that is not a package).
var ErrNotPackage = errors.New("not a Scion package")

// Pull reads the package at ref; it returns its files, its name and the
// manifest's digest. An artifact of another media type, a layer bigger
// than the limit, a path that escapes the package, a layer without a
// Kptfile are refused with ErrNotPackage, naming the reference.
func Pull(ctx context.Context, ref name.Reference, o Options) (*pkg.Package, string, string, error) {
	_, opts, cancel := o.session(ctx)
	defer cancel()
	d, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, "", "", fmt.Errorf("pulling %s: %w", ref, describe(err))
	}
	m := &v1.Manifest{}
	max := o.maxLayer()
	if err := checkManifest(d.MediaType, d.Manifest, m, max); err != nil {
		return nil, "", "", fmt.Errorf("%s (%s): %w: %s", ref, d.Digest, ErrNotPackage, err)
	}
	layer, err := remote.Layer(ref.Context().Digest(m.Layers[0].Digest.String()), opts...)
	if err != nil {
		return nil, "", "", fmt.Errorf("pulling %s: %w", ref, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, "", "", fmt.Errorf("pulling %s: %w", ref, err)
	}
	defer func() { _ = rc.Close() }()
	p, err := readPackageLayer(ref, d.Digest.String(), rc, max)
	if err != nil {
		return nil, "", "", err
	}
	return p, m.Annotations[PackageAnnotation], d.Digest.String(), nil
}

// checkManifest reads a manifest into m and says why it is not a
// package's: another media type, config or number of layers, a layer
// over max bytes.
func checkManifest(mt types.MediaType, raw []byte, m *v1.Manifest, max int64) error {
	if mt != types.OCIManifestSchema1 {
		return fmt.Errorf("its manifest is %s, not an OCI image manifest", mt)
	}
	if err := json.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("its manifest cannot be read: %v", err)
	}
	if m.Config.MediaType != ConfigMediaType {
		return fmt.Errorf("its config is %s, not %s", m.Config.MediaType, ConfigMediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		return fmt.Errorf("it has %d layers; a package has one, of %s", len(m.Layers), LayerMediaType)
	}
	if m.Layers[0].Size > max {
		return fmt.Errorf("its layer is %d bytes, over the limit of %d", m.Layers[0].Size, max)
	}
	return nil
}

// readPackageLayer reads a package's layer, gzipped (of the manifest
// digest at ref): at most max bytes, package paths only, a Kptfile
// required.
func readPackageLayer(ref name.Reference, digest string, gzipped io.Reader, max int64) (*pkg.Package, error) {
	notPkg := func(format string, args ...any) error {
		return fmt.Errorf("%s (%s): %w: %s", ref, digest, ErrNotPackage, fmt.Sprintf(format, args...))
	}
	p, err := untarGz(io.LimitReader(gzipped, max+1), max)
	if err != nil {
		return nil, notPkg("%v", err)
	}
	if _, ok := p.File("Kptfile"); !ok {
		return nil, notPkg("its layer has no Kptfile")
	}
	return p, nil
}

// tarGz writes p's files as a gzipped tar, in path order, with fixed
// modes and times, so a package's layer (and digest) depends on its files
// alone.
func tarGz(p *pkg.Package) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, path := range p.Paths() {
		data, _ := p.File(path)
		if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// untarGz reads a package's layer: regular files (and directories, which
// are skipped) at valid package paths, at most max bytes in all.
func untarGz(r io.Reader, max int64) (*pkg.Package, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("its layer is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("its layer is not a tar: %v", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("%s in its layer is not a regular file", h.Name)
		}
		path := strings.TrimPrefix(h.Name, "./")
		if err := pkg.ValidPath(path); err != nil {
			return nil, fmt.Errorf("%q in its layer: %v", h.Name, err)
		}
		if total += h.Size; total > max {
			return nil, fmt.Errorf("its files are over the limit of %d bytes", max)
		}
		data, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, fmt.Errorf("reading %s from its layer: %v", path, err)
		}
		files[path] = data
	}
	return pkg.New(files), nil
}

// ErrUnauthorized is returned when the registry refuses the credentials
// (or their absence).
var ErrUnauthorized = errors.New("the registry refused the credentials")

// describe says what a registry's refusal means to the person at the
// keyboard, keeping the error.
func describe(err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("%w (%d %s): log in (docker login, or the config file DOCKER_CONFIG names) with an account that may: %w",
			ErrUnauthorized, terr.StatusCode, http.StatusText(terr.StatusCode), err)
	}
	return err
}

// TransportWithCA is a transport that trusts the system's certificate
// authorities and those of the PEM file caFile (a registry with a private
// CA, as air-gapped sites have); http.DefaultTransport's settings
// otherwise. nil when caFile is empty.
func TransportWithCA(caFile string) (http.RoundTripper, error) {
	if caFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the registry CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("the registry CA file %s holds no PEM certificate", caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// catalogPage is how many repositories one catalog request asks for (the
// distribution registry's default maximum).
var catalogPage = 1000

// catalog lists the registry's repositories, a page at a time, each page
// asked for after the last name of the one before until one comes back
// empty: a registry that returns fewer than asked is still read to the
// end, and its Link headers are not followed (go-containerregistry
// refuses those whose scheme differs from the one it guessed, as for a
// registry on loopback with TLS). opts carry the exchange's context (its
// deadline).
func catalog(reg name.Registry, opts []remote.Option) ([]string, error) {
	var all []string
	last := ""
	for {
		page, err := remote.CatalogPage(reg, last, catalogPage, opts...)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 || (last != "" && page[0] <= last) {
			return all, nil // the end, or a registry that ignores last
		}
		all = append(all, page...)
		last = page[len(page)-1]
	}
}
