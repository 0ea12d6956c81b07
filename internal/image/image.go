// Package image assembles Scion's container image without a daemon and
// without a base image: a root filesystem of a few files (the static
// scion binary, the CA certificates, a passwd naming the non-root user)
// and the image's configuration. `make image` pushes it to a registry;
// the Dockerfile builds the same root filesystem (`image rootfs`) and
// copies it onto scratch, so both ways give one layout
// (TestDockerfile_sameLayout says how they agree).
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user and group: non-root, as the Deployments'
// runAsNonRoot requires, with the number distroless images use.
const User = "65532:65532"

// BinaryPath is where the scion binary is in the image.
const BinaryPath = "/usr/local/bin/scion"

// CACertificates is where the image's CA certificates are: Go's
// crypto/x509 reads this path on Linux, and so does git.
const CACertificates = "/etc/ssl/certs/ca-certificates.crt"

// Env is the image's environment: the cache (repositories' mirrors) under
// /var/cache, which the Deployments mount as a volume; HOME for anything
// that writes a dot file.
var Env = []string{
	"PATH=/usr/local/bin",
	"XDG_CACHE_HOME=/var/cache",
	"HOME=/home/scion",
}

// Entrypoint and Cmd: `scion controller --leader-elect` unless the
// Deployment gives other arguments (the API server's does).
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"controller", "--leader-elect"}
)

// File is one entry of the root filesystem: a directory when Data is nil
// and Dir is true.
type File struct {
	Path string
	Mode os.FileMode
	Dir  bool
	Data []byte
}

// RootFS is the image's root filesystem: the binary, the CA certificates,
// passwd and group naming the user, and the directories a read-only root
// filesystem needs as mount points (/tmp, /var/cache, world-writable as a
// volume is, so that `docker run` without volumes works too).
func RootFS(binary, caCerts []byte) []File {
	return []File{
		{Path: "etc", Dir: true, Mode: 0o755},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nscion:x:65532:65532:scion:/home/scion:/sbin/nologin\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nscion:x:65532:\n")},
		{Path: "etc/ssl", Dir: true, Mode: 0o755},
		{Path: "etc/ssl/certs", Dir: true, Mode: 0o755},
		{Path: CACertificates[1:], Mode: 0o644, Data: caCerts},
		{Path: "home", Dir: true, Mode: 0o755},
		{Path: "home/scion", Dir: true, Mode: 0o1777},
		{Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: "usr", Dir: true, Mode: 0o755},
		{Path: "usr/local", Dir: true, Mode: 0o755},
		{Path: "usr/local/bin", Dir: true, Mode: 0o755},
		{Path: BinaryPath[1:], Mode: 0o755, Data: binary},
		{Path: "var", Dir: true, Mode: 0o755},
		{Path: "var/cache", Dir: true, Mode: 0o1777},
	}
}

// WriteDir writes files under dir (the Dockerfile's build stage does, for
// `COPY --from=build /rootfs/ /`).
func WriteDir(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if f.Dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return err
		}
		// Chmod after: the umask does not apply, and sticky bits stay.
		if err := os.Chmod(p, f.Mode|stickyOf(f.Mode)); err != nil {
			return err
		}
	}
	return nil
}

// stickyOf turns the sticky bit of a Unix mode (0o1000), as File.Mode
// holds it, into Go's os.ModeSticky.
func stickyOf(m os.FileMode) os.FileMode {
	if m&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// epoch is every file's modification time: the same inputs make the same
// layer digest.
var epoch = time.Unix(0, 0)

// Layer is files as one layer, owned by root.
func Layer(files []File) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sorted := append([]File(nil), files...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		h := &tar.Header{Name: f.Path, Mode: int64(f.Mode), ModTime: epoch, Format: tar.FormatPAX}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, f.Path+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Config is the image's configuration besides its layers.
func Config(labels map[string]string) v1.Config {
	return v1.Config{
		User:       User,
		Env:        append([]string(nil), Env...),
		Entrypoint: append([]string(nil), Entrypoint...),
		Cmd:        append([]string(nil), Cmd...),
		WorkingDir: "/",
		Labels:     labels,
	}
}

// Build makes an image of files with the configuration cfg (Config for
// Scion's), for this machine's architecture (the binary's, which `make
// image` builds with GOARCH unset).
func Build(files []File, cfg v1.Config) (v1.Image, error) {
	layer, err := Layer(files)
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// DefaultCACertificates is the CA bundle of a Debian machine, which the
// image takes from the machine that builds it.
const DefaultCACertificates = "/etc/ssl/certs/ca-certificates.crt"

// ForBinary is Scion's image of the scion binary at binPath, with the CA
// certificates of caFile, labelled with version when it is not empty:
// what make image pushes.
func ForBinary(binPath, caFile, version string) (v1.Image, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	certs, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates for the image: %w", err)
	}
	labels := map[string]string{}
	if version != "" {
		labels["org.opencontainers.image.version"] = version
	}
	return Build(RootFS(bin, certs), Config(labels))
}

// Push writes img to ref (registry/repository:tag), over plain HTTP when
// insecure, with the credentials of the Docker config (DOCKER_CONFIG) for
// the registry, and opts (a transport trusting a private CA). It returns
// the reference by digest.
func Push(img v1.Image, ref string, insecure bool, opts ...remote.Option) (string, error) {
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Digest(d.String()).String(), nil
}

// BuildBinary builds the scion command of the module in src into out as
// the image holds it: static (no cgo, so it runs FROM scratch), for
// linux on this machine's architecture, without paths of the building
// machine, stamped with version when it is not empty.
func BuildBinary(ctx context.Context, src, out, version string) error {
	ldflags := "-s -w"
	if version != "" {
		ldflags += " -X github.com/scion-dev/scion/internal/version.Version=" + version
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags="+ldflags, "-o", out, "./cmd/scion")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building scion in %s: %w\n%s", src, err, b)
	}
	return nil
}

// FunctionBinaryPath is where a KRM function's executable is in the
// images ForFunction makes.
const FunctionBinaryPath = "/usr/local/bin/function"

// ForFunction is the image of a KRM function: the static executable at
// path (speaking a ResourceList on stdin and stdout) on nothing else but
// an empty world-writable /tmp, run as User: how the tests and
// hack/catalog-functions.sh make images of the kpt catalog's functions
// and of their own.
func ForFunction(path string) (v1.Image, error) {
	function, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	files := []File{
		{Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: "usr", Dir: true, Mode: 0o755},
		{Path: "usr/local", Dir: true, Mode: 0o755},
		{Path: "usr/local/bin", Dir: true, Mode: 0o755},
		{Path: FunctionBinaryPath[1:], Mode: 0o755, Data: function},
	}
	return Build(files, v1.Config{User: User, Entrypoint: []string{FunctionBinaryPath}, WorkingDir: "/", Env: []string{"PATH=/usr/local/bin"}})
}
