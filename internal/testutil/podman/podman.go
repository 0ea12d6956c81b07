// Package podman sets up Debian's podman (make podman installs it) for a
// test: the project's settings (hack/podman/containers.conf), with every
// file podman writes (images, containers, its run state, its network
// configuration) in the test's temporary folder, and the test's plain-HTTP
// registries trusted, so that the machine's configuration and storage are
// neither read nor changed.
package podman

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/scion-dev/scion/internal/fn"
)

// Setup points podman at a configuration of the test's own (through
// CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF and
// fn.RuntimeEnv, for the rest of the test) trusting the plain-HTTP
// registries (host:port), and returns podman's path. The test's
// containers are removed when it ends.
func Setup(t testing.TB, insecureRegistries ...string) string {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal("podman is not installed: make test installs it (make podman: hack/install-podman.sh)")
	}
	// A short folder: the sockets conmon makes under the run root carry
	// the container's 64-character id, and a path past a socket's 108
	// bytes (t.TempDir's names carry the test's) leaves podman waiting
	// out conmon's 20 s timeout on every run.
	dir, err := os.MkdirTemp("", "podman")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	base, err := os.ReadFile(ProjectConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The project's file, with podman's own state moved into dir: its
	// [engine] and [network] tables gain the keys (TOML allows a table
	// once, so they are written into it). Not static_dir, which follows
	// the graph root: podman's exit command (`podman container cleanup`,
	// which conmon runs) is not told it, looks in another database, and
	// every run then waits out conmon's 20 s timeout.
	conf := strings.Replace(string(base), "[engine]\n", fmt.Sprintf("[engine]\ntmp_dir = %q\nvolume_path = %q\n",
		filepath.Join(dir, "libpod"), filepath.Join(dir, "volumes")), 1)
	conf += fmt.Sprintf("\n[network]\nnetwork_config_dir = %q\n", filepath.Join(dir, "networks"))
	write(t, filepath.Join(dir, "containers.conf"), conf)
	write(t, filepath.Join(dir, "storage.conf"), fmt.Sprintf("[storage]\ndriver = \"vfs\"\nrunroot = %q\ngraphroot = %q\n",
		filepath.Join(dir, "run"), filepath.Join(dir, "storage")))
	var reg bytes.Buffer
	reg.WriteString("unqualified-search-registries = []\n")
	for _, r := range insecureRegistries {
		fmt.Fprintf(&reg, "\n[[registry]]\nlocation = %q\ninsecure = true\n", r)
	}
	write(t, filepath.Join(dir, "registries.conf"), reg.String())
	t.Setenv("CONTAINERS_CONF", filepath.Join(dir, "containers.conf"))
	t.Setenv("CONTAINERS_STORAGE_CONF", filepath.Join(dir, "storage.conf"))
	t.Setenv("CONTAINERS_REGISTRIES_CONF", filepath.Join(dir, "registries.conf"))
	t.Setenv(fn.RuntimeEnv, bin)
	// What podman writes outside its configured folders, whatever its
	// configuration: its network backend's run folder and the blob info
	// cache of c/image (root's). Removed when the test made them.
	var made []string
	for _, p := range []string{"/run/containers", "/var/lib/containers"} {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			made = append(made, p)
		}
	}
	t.Cleanup(func() {
		for _, p := range made {
			_ = os.RemoveAll(p)
		}
	})
	t.Cleanup(func() {
		// vfs layers are plain folders, which TempDir's cleanup removes;
		// a container still running (a test that failed mid-run) is
		// stopped first.
		_ = exec.Command(bin, "rm", "-af", "-t", "0").Run()
	})
	return bin
}

// ProjectConfig is the path of hack/podman/containers.conf.
func ProjectConfig() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "podman", "containers.conf")
}

// Containers lists the names of the containers podman knows (running or
// not), for tests that check none is left behind.
func Containers(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("podman", "ps", "-a", "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("podman ps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
