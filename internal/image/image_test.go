package image_test

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/image"
	"github.com/scion-dev/scion/internal/testutil/registry"
)

// The image make image pushes: pulled back from a real registry, it holds
// the static binary (which runs), the CA certificates and the user, and
// its configuration runs scion controller as 65532.
func TestBuild_pushedAndPulledBack(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "scion")
	g.Expect(image.BuildBinary(context.Background(), "../..", bin, "v9.8.7")).To(Succeed())
	binData, err := os.ReadFile(bin)
	g.Expect(err).NotTo(HaveOccurred())
	img, err := image.Build(image.RootFS(binData, []byte("CERTS\n")), image.Config(map[string]string{"org.opencontainers.image.version": "v9.8.7"}))
	g.Expect(err).NotTo(HaveOccurred())

	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	ref, err := image.Push(img, reg.Host+"/scion/scion:test", false, remote.WithTransport(reg.Transport))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(HavePrefix(reg.Host + "/scion/scion@sha256:"))

	// Pulled by digest, as a node would.
	r, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	pulled, err := remote.Image(r, remote.WithTransport(reg.Transport), remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: reg.Username, Password: reg.Password})))
	g.Expect(err).NotTo(HaveOccurred())
	cf, err := pulled.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cf.OS).To(Equal("linux"))
	g.Expect(cf.Config.User).To(Equal("65532:65532"))
	g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/usr/local/bin/scion"}))
	g.Expect(cf.Config.Cmd).To(Equal([]string{"controller", "--leader-elect"}))
	g.Expect(cf.Config.Env).To(ContainElement("XDG_CACHE_HOME=/var/cache"))
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "v9.8.7"))

	layers, err := pulled.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(1))
	rc, err := layers[0].Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	extracted := filepath.Join(dir, "from-image")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		entries[h.Name] = h
		if h.Name == "usr/local/bin/scion" {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = io.Copy(f, tr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.Close()).To(Succeed())
		}
	}
	g.Expect(entries).To(HaveKey("etc/ssl/certs/ca-certificates.crt"))
	g.Expect(entries).To(HaveKey("etc/passwd"))
	g.Expect(entries["tmp/"].Mode&0o1777).To(Equal(int64(0o1777)), "/tmp is writable by the non-root user")
	g.Expect(entries["usr/local/bin/scion"].Mode).To(Equal(int64(0o755)))
	g.Expect(entries["usr/local/bin/scion"].Uid).To(Equal(0), "the binary is root's: the user cannot change it")

	// The binary in the image is static and stamped.
	out, err := exec.Command(extracted, "version").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("v9.8.7"))
	file, err := exec.Command("go", "version", "-m", extracted).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(file))
	g.Expect(string(file)).To(ContainSubstring("CGO_ENABLED=0"))
	g.Expect(string(file)).To(ContainSubstring("-trimpath=true"))
}

// The same inputs make the same image: a rebuild of one commit pushes
// nothing new.
func TestBuild_reproducible(t *testing.T) {
	g := NewWithT(t)
	files := image.RootFS([]byte("binary"), []byte("certs"))
	a, err := image.Build(files, image.Config(nil))
	g.Expect(err).NotTo(HaveOccurred())
	b, err := image.Build(files, image.Config(nil))
	g.Expect(err).NotTo(HaveOccurred())
	da, _ := a.Digest()
	db, _ := b.Digest()
	g.Expect(da).To(Equal(db))
}

// The Dockerfile builds the same image as make image: the same root
// filesystem (hack/image rootfs, built with BuildBinary's flags) onto
// scratch, with the same configuration. What can differ: the CA
// certificates (the golang image's Debian bundle there, the building
// machine's here) and the Go toolchain that built the binary.
func TestDockerfile_sameLayout(t *testing.T) {
	g := NewWithT(t)
	f, err := os.Open("../../Dockerfile")
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var stages [][]string // the instructions of each stage, continuation lines joined
	sc := bufio.NewScanner(f)
	cont := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cont += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line, cont = cont+line, ""
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], line)
	}
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	g.Expect(stages).To(HaveLen(2))

	build := strings.Join(stages[0], "\n")
	g.Expect(build).To(ContainSubstring("CGO_ENABLED=0 GOOS=linux go build -trimpath"))
	g.Expect(build).To(ContainSubstring(`-ldflags="-s -w -X github.com/scion-dev/scion/internal/version.Version=`))
	g.Expect(build).To(ContainSubstring("go run ./hack/image rootfs --binary /out/scion /rootfs"))

	final := stages[1]
	cfg := image.Config(nil)
	env := strings.Join(cfg.Env, " ")
	entrypoint, _ := json.Marshal(cfg.Entrypoint)
	cmd, _ := json.Marshal(cfg.Cmd)
	g.Expect(final).To(Equal([]string{
		"FROM scratch",
		"COPY --from=build /rootfs/ /",
		"USER " + cfg.User,
		"ENV " + env,
		"WORKDIR " + cfg.WorkingDir,
		"ENTRYPOINT " + strings.ReplaceAll(string(entrypoint), ",", ", "),
		"CMD " + strings.ReplaceAll(string(cmd), ",", ", "),
	}))
}

// WriteDir writes the files the layer holds, with their modes (sticky
// bits included).
func TestWriteDir(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(image.WriteDir(dir, image.RootFS([]byte("bin"), []byte("certs")))).To(Succeed())
	st, err := os.Stat(filepath.Join(dir, "tmp"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode() & os.ModeSticky).NotTo(BeZero())
	g.Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o777)))
	st, err = os.Stat(filepath.Join(dir, "usr/local/bin/scion"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	b, err := os.ReadFile(filepath.Join(dir, "etc/ssl/certs/ca-certificates.crt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("certs"))
}
