// Package sshserver runs Debian's OpenSSH server for tests of git over
// ssh: on a free loopback port, for the current user, with public key
// authentication only and host and client keys made for the test; git's
// own git-upload-pack and git-receive-pack serve the repositories.
package sshserver

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Binary is where Debian's openssh-server puts sshd (make sshd installs
// it: hack/install-sshd.sh).
const Binary = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Port is its loopback port; User the account keys log in as.
	Port int
	User string
	// Key is a private key (OpenSSH format, no passphrase) the server
	// authorizes; KnownHosts the known_hosts line of the server's host
	// key ([127.0.0.1]:PORT).
	Key        []byte
	KnownHosts []byte
	dir        string
}

// Start runs sshd until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("no sshd at %s: make test installs it (make sshd: hack/install-sshd.sh)", Binary)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{User: u.Username, dir: dir}
	keygen(t, filepath.Join(dir, "host"), "")
	s.Key = keygen(t, filepath.Join(dir, "client"), "")
	s.Authorize(t, filepath.Join(dir, "client.pub"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	if err != nil {
		t.Fatal(err)
	}
	s.KnownHosts = []byte(fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, hostPub))
	cfg := filepath.Join(dir, "sshd_config")
	write(t, cfg, fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
LogLevel VERBOSE
`, s.Port, filepath.Join(dir, "host"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys")))
	// As root, sshd wants its privilege separation folder.
	if os.Getuid() == 0 {
		if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove("/run/sshd") })
		}
	}
	log, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = log.Close()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		if err == nil {
			_ = c.Close()
			return s
		}
		select {
		case <-done:
			t.Fatalf("sshd exited: %s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen on %d: %s", s.Port, s.Log())
		}
	}
}

// URL is the ssh:// URL of a repository at an absolute path.
func (s *Server) URL(path string) string {
	return fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", s.User, s.Port, path)
}

// Log is what sshd logged so far.
func (s *Server) Log() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "sshd.log"))
	return string(data)
}

// Authorize lets the key of a public key file log in.
func (s *Server) Authorize(t testing.TB, pubFile string) {
	t.Helper()
	pub, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "authorized_keys"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(pub); err != nil {
		t.Fatal(err)
	}
}

// NewKey makes a key pair in the server's folder (encrypted with
// passphrase unless empty) and returns the private key; name.pub is the
// public one.
func (s *Server) NewKey(t testing.TB, name, passphrase string) (private []byte, pubFile string) {
	t.Helper()
	file := filepath.Join(s.dir, name)
	return keygen(t, file, passphrase), file + ".pub"
}

// NewHostKeyLine is a known_hosts line for this server with a host key
// of another machine: what known_hosts says after the server is replaced.
func (s *Server) NewHostKeyLine(t testing.TB) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "other-host")
	keygen(t, file, "")
	pub, err := os.ReadFile(file + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return []byte(fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, pub))
}

// keygen makes an ed25519 key pair at file and file.pub with ssh-keygen
// and returns the private key.
func keygen(t testing.TB, file, passphrase string) []byte {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", filepath.Base(file), "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, bytes.TrimSpace(out))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func write(t testing.TB, file, content string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
