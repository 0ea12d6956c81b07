package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

func testPackage() *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":         []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\ninfo:\n  description: the app\n"),
		"deployment.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n"),
		"sub/cm.yaml":     []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"),
	})
}

func ref(t *testing.T, s string) name.Reference {
	r, err := oci.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A package pushed to a registry with TLS and htpasswd, as the Docker
// config file's credentials allow, and pulled back whole: the same files,
// the manifest of Scion's media types with the Kptfile as an annotation,
// and the same digest for the same files pushed again.
func TestPushPull(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	o := oci.Options{Transport: reg.Transport}
	r := ref(t, "oci://"+reg.Host+"/platform/blueprints/app:v1")
	digest, err := oci.Push(ctx, r, "app", testPackage(), o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(HavePrefix("sha256:"))

	p, pkgName, got, err := oci.Pull(ctx, r, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(digest))
	g.Expect(pkgName).To(Equal("app"))
	g.Expect(p.Files()).To(Equal(testPackage().Files()))

	// What other tools see: the manifest as docs/oci-layout.md says.
	d, err := remote.Get(r, remote.WithTransport(reg.Transport), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	g.Expect(err).NotTo(HaveOccurred())
	var m struct {
		MediaType, ArtifactType string
		Config                  v1.Descriptor
		Layers                  []v1.Descriptor
		Annotations             map[string]string
	}
	g.Expect(json.Unmarshal(d.Manifest, &m)).To(Succeed())
	g.Expect(m.MediaType).To(Equal(string(types.OCIManifestSchema1)))
	g.Expect(m.ArtifactType).To(Equal(oci.ArtifactType))
	g.Expect(string(m.Config.MediaType)).To(Equal(oci.ConfigMediaType))
	g.Expect(m.Layers).To(HaveLen(1))
	g.Expect(string(m.Layers[0].MediaType)).To(Equal(oci.LayerMediaType))
	g.Expect(m.Layers[0].Annotations).To(HaveKeyWithValue(oci.TitleAnnotation, "app.tar.gz"))
	g.Expect(m.Annotations).To(HaveKeyWithValue(oci.PackageAnnotation, "app"))
	g.Expect(m.Annotations[oci.KptfileAnnotation]).To(ContainSubstring("description: the app"))

	// The same files are the same artifact (tags move, digests do not).
	again, err := oci.Push(ctx, ref(t, "oci://"+reg.Host+"/platform/blueprints/app:v1-copy"), "app", testPackage(), o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(digest))
	// And by digest.
	_, _, got, err = oci.Pull(ctx, ref(t, "oci://"+reg.Host+"/platform/blueprints/app@"+digest), o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(digest))
}

// Wrong credentials, no credentials and a registry that never answers
// fail with errors naming the reference; nothing is pushed.
func TestPushPull_faults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	r := ref(t, "oci://"+reg.Host+"/platform/app:v1")

	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, "wrong"))
	_, err := oci.Push(ctx, r, "app", testPackage(), oci.Options{Transport: reg.Transport})
	g.Expect(errors.Is(err, oci.ErrUnauthorized)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(And(ContainSubstring("pushing to " + reg.Host + "/platform/app: the registry refused the credentials (401 Unauthorized): log in"))))
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	_, _, _, err = oci.Pull(ctx, r, oci.Options{Transport: reg.Transport})
	g.Expect(errors.Is(err, oci.ErrUnauthorized)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("pulling " + reg.Host + "/platform/app:v1: the registry refused the credentials (401 Unauthorized)")))

	// A registry that accepts connections and never answers: the
	// timeout, not a hang.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }()
		}
	}()
	_, _, _, err = oci.Pull(ctx, ref(t, "oci://"+l.Addr().String()+"/platform/app:v1"), oci.Options{Transport: reg.Transport, Timeout: 2 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("pulling " + l.Addr().String() + "/platform/app:v1")))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "ended by the timeout: %v", err)
}

// What is not a reference, or not a package, is refused naming it.
func TestBadInput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, s := range []string{"registry.example.com/app:v1", "oci://", "oci://Registry.example.com/App:v1", "oci://r.example.com/app:bad tag"} {
		_, err := oci.ParseReference(s)
		g.Expect(err).To(MatchError(ContainSubstring("is not an OCI reference")), s)
	}
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	o := oci.Options{Transport: reg.Transport}
	opts := []remote.Option{remote.WithTransport(reg.Transport), remote.WithAuthFromKeychain(authn.DefaultKeychain)}

	// A container image.
	img, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	imgRef := ref(t, "oci://"+reg.Host+"/images/random:v1")
	g.Expect(remote.Write(imgRef, img, opts...)).To(Succeed())
	_, _, _, err = oci.Pull(ctx, imgRef, o)
	g.Expect(errors.Is(err, oci.ErrNotPackage)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring(reg.Host + "/images/random:v1 (sha256:")))

	// Layers that are not packages: pushed with Scion's media types.
	layer := func(files map[string]string, typ byte) []byte {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for path, data := range files {
			g.Expect(tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(len(data)), Typeflag: typ})).To(Succeed())
			_, _ = tw.Write([]byte(data))
		}
		g.Expect(tw.Close()).To(Succeed())
		g.Expect(gz.Close()).To(Succeed())
		return buf.Bytes()
	}
	pushRaw := func(tag string, data []byte) name.Reference {
		r := ref(t, "oci://"+reg.Host+"/bad/pkg:"+tag)
		cfg, l := static.NewLayer([]byte(`{"package":"pkg"}`), oci.ConfigMediaType), static.NewLayer(data, oci.LayerMediaType)
		for _, b := range []v1.Layer{cfg, l} {
			g.Expect(remote.WriteLayer(r.Context(), b, opts...)).To(Succeed())
		}
		cd, _ := cfg.Digest()
		ld, _ := l.Digest()
		m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": types.OCIManifestSchema1,
			"config": map[string]any{"mediaType": oci.ConfigMediaType, "digest": cd.String(), "size": 17},
			"layers": []any{map[string]any{"mediaType": oci.LayerMediaType, "digest": ld.String(), "size": len(data)}}})
		g.Expect(remote.Put(r, rawManifest(m), opts...)).To(Succeed())
		return r
	}
	kf := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
	for _, tc := range []struct {
		tag, want string
		data      []byte
		max       int64
	}{
		{"no-kptfile", "its layer has no Kptfile", layer(map[string]string{"cm.yaml": "a: 1\n"}, tar.TypeReg), 0},
		{"escaping", `"../../etc/passwd" in its layer: invalid package file path`, layer(map[string]string{"Kptfile": kf, "../../etc/passwd": "x"}, tar.TypeReg), 0},
		{"symlink", "in its layer is not a regular file", layer(map[string]string{"Kptfile": ""}, tar.TypeSymlink), 0},
		{"not-gzip", "its layer is not gzip", []byte("plain text"), 0},
		{"too-big", "its layer is ", layer(map[string]string{"Kptfile": kf, "big.yaml": strings.Repeat("x", 4096)}, tar.TypeReg), 64},
	} {
		r := pushRaw(tc.tag, tc.data)
		_, _, _, err := oci.Pull(ctx, r, oci.Options{Transport: reg.Transport, MaxLayerSize: tc.max})
		g.Expect(errors.Is(err, oci.ErrNotPackage)).To(BeTrue(), "%s: %v", tc.tag, err)
		g.Expect(err).To(MatchError(And(ContainSubstring(reg.Host+"/bad/pkg:"+tc.tag), ContainSubstring(tc.want))), tc.tag)
	}
	// A folder that is not a package is not pushed.
	_, err = oci.Push(ctx, ref(t, "oci://"+reg.Host+"/bad/nokptfile:v1"), "x", pkg.New(map[string][]byte{"a.yaml": []byte("a: 1\n")}), o)
	g.Expect(err).To(MatchError("the package has no Kptfile: not a package"))
	// Nor one over the size limit, which a pull would refuse: nothing is
	// written.
	big := pkg.New(map[string][]byte{"Kptfile": []byte(kf), "big.yaml": []byte(strings.Repeat("x", 4096))})
	_, err = oci.Push(ctx, ref(t, "oci://"+reg.Host+"/bad/big:v1"), "big", big, oci.Options{Transport: reg.Transport, MaxLayerSize: 1024})
	g.Expect(err).To(MatchError(ContainSubstring("package big: its files are 4")))
	_, err = remote.Head(ref(t, "oci://"+reg.Host+"/bad/big:v1"), opts...)
	g.Expect(err).To(HaveOccurred(), "nothing pushed")
}

type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
