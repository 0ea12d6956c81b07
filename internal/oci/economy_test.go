package oci_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/requests"
	"github.com/scion-dev/scion/internal/testutil/storetest"
)

// registryKind names a request to a registry (registry.Kind).
func registryKind(req *http.Request) string { return registry.Kind(req.Method, req.URL.Path) }

// counted counts a store's requests to the registry by registryKind;
// take returns the counts since the last take.
type counted struct{ requests.Counter }

func newCounted() *counted { return &counted{requests.Counter{KindOf: registryKind}} }

func (c *counted) transport(next http.RoundTripper) http.RoundTripper { return c.Wrap(next) }

// countedRegistry starts a registry and logs in to it (DOCKER_CONFIG);
// open opens a store of opts (its prefix under the registry) whose
// requests counted counts.
func countedRegistry(t *testing.T) (reg *registry.Registry, counted *counted, open func(opts oci.StoreOptions) *oci.Store) {
	t.Helper()
	reg = registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	counted = newCounted()
	return reg, counted, func(opts oci.StoreOptions) *oci.Store {
		t.Helper()
		opts.Prefix = reg.Host + "/" + opts.Prefix
		opts.Options.Transport = counted.transport(reg.Transport)
		st, err := oci.OpenStore(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func (c *counted) take() map[string]int {
	out := map[string]int{}
	for k, n := range c.Kinds() {
		out[k] = int(n)
	}
	c.ResetKinds()
	return out
}

// The store's economy: a write is not followed by a read of the
// package's tags (the store applies what it wrote), what was written is
// read back without pulling its layer, a FetchIfOlder does not read the
// published tags again (they never move) while a Fetch does (and notices
// one moved behind Scion's back), and what the store holds does not grow
// with the writes: the manifests of the tags there are, a bounded cache
// of layers, and a warning only while its tag stays moved.
func TestStore_economy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg, counted, open := countedRegistry(t)
	prefix := reg.Host + "/economy"
	st := open(oci.StoreOptions{Prefix: "economy"})
	svc := &pkgservice.Service{}
	v1, err := svc.PublishDirect(ctx, st, "app", "one", storetest.Package("app", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())

	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 2), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	counted.take()
	for i := 3; i < 40; i++ {
		d, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: storetest.Package("app", i), Message: "m"})
		g.Expect(err).NotTo(HaveOccurred())
	}
	files, err := st.Read(ctx, d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(storetest.Package("app", 39))).To(BeTrue())
	sent := counted.take()
	g.Expect(sent).NotTo(HaveKey("GET tags"), "an update of a draft reads no tags list: %v", sent)
	g.Expect(sent).NotTo(HaveKey("GET blobs"), "what was written is read back without pulling it: %v", sent)
	g.Expect(sent).NotTo(HaveKey("GET manifests:digest"), "nor its manifest: %v", sent)
	g.Expect(sent["PUT manifests:draft.ws"]).To(Equal(37))
	// Each new layer in two requests (no check first, no PATCH); the
	// config, the same for every update, neither sent nor checked again;
	// the registry is not pinged again (for a delete, say).
	g.Expect(sent["POST blobs"]).To(Equal(37), "%v", sent)
	g.Expect(sent["PUT blobs"]).To(Equal(37), "%v", sent)
	g.Expect(sent).NotTo(HaveKey("HEAD blobs"), "%v", sent)
	g.Expect(sent).NotTo(HaveKey("PATCH blobs"), "%v", sent)
	g.Expect(sent).NotTo(HaveKey("GET other /v2/"), "%v", sent)
	g.Expect(sent["DELETE manifests:digest"]).To(Equal(37), "each update deletes the manifest it replaced")
	// The files parsed dropped (the controller trims every 30 s), the
	// draft is read from its layer kept, not pulled.
	g.Expect(st.Trim()).To(BeTrue())
	files, err = st.Read(ctx, d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(storetest.Package("app", 39))).To(BeTrue())
	g.Expect(counted.take()).To(BeEmpty(), "a read of what the store wrote, after a Trim")
	revs, err := st.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(2), "v1 and the draft, as the store wrote them")
	manifests, digests, _ := oci.Held(st)
	g.Expect(manifests).To(Equal(digests), "37 updates leave the manifests of the tags there are, no more")
	g.Expect(manifests).To(Equal(2), "v1 (with latest) and the draft")

	// Another process sees the same without having written it.
	other, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	otherRevs, err := other.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(otherRevs).To(Equal(revs))
	g.Expect(other.Head()).To(Equal(st.Head()), "the same tags make the same Head")

	// FetchIfOlder reads the draft's tag and latest, not v1's again.
	for i := 2; i <= 5; i++ {
		_, err := svc.PublishDirect(ctx, st, "app", fmt.Sprintf("p%d", i), storetest.Package("app", 100+i), "m", "me")
		g.Expect(err).NotTo(HaveOccurred())
	}
	counted.take()
	g.Expect(st.FetchIfOlder(ctx, 0)).To(Succeed())
	sent = counted.take()
	for i := 1; i <= 5; i++ {
		g.Expect(sent).NotTo(HaveKey(fmt.Sprintf("HEAD manifests:v%d", i)), "published tags are not read again: %v", sent)
	}
	g.Expect(sent).To(HaveKeyWithValue("HEAD manifests:draft.ws", 1))
	g.Expect(sent).To(HaveKeyWithValue("HEAD manifests:latest", 1))

	// A published tag moved behind Scion's back: a Fetch reads every tag
	// and says so; once the tag is deleted, the warning goes.
	moved, err := oci.Push(ctx, ref(t, "oci://"+prefix+"/app:v1"), "app", storetest.Package("app", 666), oci.Options{Transport: reg.Transport})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Fetch(ctx)).To(Succeed())
	sent = counted.take()
	g.Expect(sent).To(HaveKeyWithValue("HEAD manifests:v1", 1))
	g.Expect(st.Warnings()).To(ConsistOf(And(ContainSubstring(prefix+"/app:v1"), ContainSubstring(v1.Commit), ContainSubstring(moved))))
	g.Expect(st.Fetch(ctx)).To(Succeed())
	g.Expect(st.Warnings()).To(HaveLen(1), "said while the tag stays moved")
	rev1, err := st.Get(ctx, "app", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev1.Commit).To(Equal(moved), "shown as the registry has it")
	g.Expect(st.Delete(ctx, rev1, "me")).To(Succeed())
	g.Expect(st.Warnings()).To(BeEmpty(), "the moved tag was deleted")
	manifests, digests, contents := oci.Held(st)
	g.Expect(manifests).To(Equal(digests))
	g.Expect(contents).To(BeNumerically("<=", 256))
}

// Stores of one process that read a registry with the same credentials
// share its catalog (a walk of the registry's storage): a hundred
// Repositories' syncs read it once, not a hundred times. Another key
// (other credentials) reads its own; a read older than a Fetch allows is
// not used.
func TestStore_catalogShared(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg, counted, openStore := countedRegistry(t)
	catalogs := &oci.Catalogs{}
	open := func(prefix, key string) *oci.Store {
		return openStore(oci.StoreOptions{Prefix: prefix, Catalogs: catalogs, CatalogKey: key})
	}
	writer := open("shared/a", "tenant")
	_, err := (&pkgservice.Service{}).PublishDirect(ctx, writer, "app", "one", storetest.Package("app", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	counted.take()
	var stores []*oci.Store
	for i := range 10 {
		stores = append(stores, open(fmt.Sprintf("shared/s%d", i), "tenant"))
	}
	g.Expect(counted.take()).NotTo(HaveKey("GET other /v2/_catalog"), "ten stores opened: the writer's read shared, with the package it made added")
	// A store of the writer's prefix finds its package through the
	// shared read.
	reader := open("shared/a", "tenant")
	revs, err := reader.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))
	open("shared/other", "other-credentials")
	// One read is two requests: the page, and the empty page after it.
	g.Expect(counted.take()).To(HaveKeyWithValue("GET other /v2/_catalog", 2), "other credentials read their own")
	for _, st := range stores {
		g.Expect(st.Fetch(ctx)).To(Succeed())
	}
	g.Expect(counted.take()).NotTo(HaveKey("GET other /v2/_catalog"), "a Fetch takes a read a moment old")

	// Another process (its own Catalogs) read the catalog before the
	// package was made: it finds the package when it looks for it.
	other, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/shared/a", Catalogs: &oci.Catalogs{}, CatalogKey: "tenant",
		Options: oci.Options{Transport: counted.transport(reg.Transport)}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = (&pkgservice.Service{}).PublishDirect(ctx, writer, "later", "one", storetest.Package("later", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.Get(ctx, "later", "", 1)
	g.Expect(err).To(MatchError(store.ErrNotFound), "not in what it read when it opened")
	counted.take()
	g.Expect(other.FetchPackage(ctx, "later")).To(Succeed())
	rev, err := other.Get(ctx, "later", "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Lifecycle).To(BeEquivalentTo("Published"))
	took := counted.take()
	g.Expect(took).NotTo(HaveKey("GET other /v2/_catalog"), "one package read, not the catalog")
	g.Expect(took).To(HaveKeyWithValue("GET tags", 1))
	g.Expect(other.FetchPackage(ctx, "Not/A/Package")).To(MatchError(ContainSubstring("cannot be an OCI reference")))
}

// The layers a process's stores write and read are kept within the bytes
// Blobs allows, shared by the stores, each store finding only those of
// its own credentials; a layer not kept is pulled.
func TestStore_blobsBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, counted, openStore := countedRegistry(t)
	blobs := &oci.Blobs{MaxBytes: 8 << 10}
	open := func(key string) *oci.Store {
		return openStore(oci.StoreOptions{Prefix: "blobs", Blobs: blobs, CatalogKey: key})
	}
	st := open("tenant")
	var drafts []store.Revision
	for i := range 40 {
		d, err := st.WriteDraft(ctx, store.DraftWrite{Package: fmt.Sprintf("app-%d", i), Workspace: "ws", Contents: storetest.Package("app", i), Message: "m"})
		g.Expect(err).NotTo(HaveOccurred())
		drafts = append(drafts, d)
		g.Expect(blobs.Size()).To(BeNumerically("<=", 8<<10))
	}
	g.Expect(blobs.Size()).To(BeNumerically(">", 4<<10), "as many as fit are kept")
	st.Trim()
	counted.take()
	read := func(st *oci.Store, d store.Revision, i int) {
		files, err := st.Read(ctx, d)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(files.Equal(storetest.Package("app", i))).To(BeTrue())
	}
	read(st, drafts[39], 39)
	g.Expect(counted.take()).NotTo(HaveKey("GET blobs"), "the last written is kept")
	read(st, drafts[0], 0)
	g.Expect(counted.take()).To(HaveKeyWithValue("GET blobs", 1), "the first was dropped for the bound, and is pulled")

	// A store of other credentials over the same prefix pulls its own.
	other := open("other")
	counted.take()
	read(other, drafts[39], 39)
	g.Expect(counted.take()).To(HaveKeyWithValue("GET blobs", 1), "another key does not find the first's")
}

// A registry that lost a blob the store put before and does not send
// again (a draft's config) refuses the manifest; the store sends its
// blobs again and the write succeeds.
func TestStore_blobLostSentAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg, counted, open := countedRegistry(t)
	prefix := reg.Host + "/lost"
	st := open(oci.StoreOptions{Prefix: "lost"})
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())

	// The config blob deleted behind the store's back.
	m, err := remote.Get(ref(t, "oci://"+prefix+"/app@"+d.Commit), remote.WithTransport(reg.Transport), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	g.Expect(err).NotTo(HaveOccurred())
	var manifest v1.Manifest
	g.Expect(json.Unmarshal(m.Manifest, &manifest)).To(Succeed())
	deleteBlob(t, reg, "lost/app", manifest.Config.Digest.String())
	counted.take()

	d, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: storetest.Package("app", 2), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	sent := counted.take()
	g.Expect(sent).To(HaveKeyWithValue("PUT manifests:draft.ws", 2), "refused once, then put: %v", sent)
	g.Expect(sent).To(HaveKeyWithValue("PUT blobs", 3), "the layer, then the config and the layer again: %v", sent)
	other, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	files, err := other.Read(ctx, d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files.Equal(storetest.Package("app", 2))).To(BeTrue())
}

// deleteBlob deletes a blob from one of the registry's repositories.
func deleteBlob(t *testing.T, reg *registry.Registry, repo, digest string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, "https://"+reg.Host+"/v2/"+repo+"/blobs/"+digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(reg.Username, reg.Password)
	resp, err := (&http.Client{Transport: reg.Transport}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting blob %s of %s: %s", digest, repo, resp.Status)
	}
}

// A Resync (the periodic sync) does not read the tags of a package the
// store wrote since it last read them, once: an update another process
// made there meanwhile shows at the next Resync, or at once on a Fetch
// (a requested sync); packages the store did not write are read as by a
// Fetch.
func TestStore_resyncSkipsOwnWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg, counted, open := countedRegistry(t)
	st := open(oci.StoreOptions{Prefix: "resync"})
	other, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/resync", Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())

	// update writes version n of app's draft through w, which reads
	// the package first.
	update := func(w *oci.Store, expected string, n int) (store.Revision, error) {
		t.Helper()
		g.Expect(w.FetchPackage(ctx, "app")).To(Succeed())
		return w.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "mine", Expected: expected, Contents: storetest.Package("app", n), Message: "m"})
	}
	mine, err := update(st, "", 1)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.WriteDraft(ctx, store.DraftWrite{Package: "seen", Workspace: "theirs", Contents: storetest.Package("seen", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	theirs, err := update(other, mine.Commit, 2)
	g.Expect(err).NotTo(HaveOccurred())

	draftOf := func(p, ws string) string {
		t.Helper()
		rev, err := st.Get(ctx, p, ws, 0)
		g.Expect(err).NotTo(HaveOccurred())
		return rev.Commit
	}
	counted.take()
	g.Expect(st.Resync(ctx)).To(Succeed())
	sent := counted.take()
	g.Expect(sent).To(HaveKeyWithValue("GET tags", 1), "the package the store did not write, alone: %v", sent)
	g.Expect(sent).To(HaveKeyWithValue("HEAD manifests:draft.theirs", 1), "%v", sent)
	g.Expect(sent).NotTo(HaveKey("HEAD manifests:draft.mine"), "%v", sent)
	g.Expect(draftOf("seen", "theirs")).NotTo(BeEmpty(), "a package another process made is found")
	g.Expect(draftOf("app", "mine")).To(Equal(mine.Commit), "the package written is taken as written, this once")

	g.Expect(st.Resync(ctx)).To(Succeed())
	sent = counted.take()
	g.Expect(sent).To(HaveKeyWithValue("GET tags", 2), "the next Resync reads every package: %v", sent)
	g.Expect(draftOf("app", "mine")).To(Equal(theirs.Commit), "the other process's update, one Resync later")

	// A Fetch reads what the store wrote at once.
	mine, err = update(st, theirs.Commit, 3)
	g.Expect(err).NotTo(HaveOccurred())
	theirs, err = update(other, mine.Commit, 4)
	g.Expect(err).NotTo(HaveOccurred())
	counted.take()
	g.Expect(st.Fetch(ctx)).To(Succeed())
	g.Expect(counted.take()).To(HaveKeyWithValue("GET tags", 2))
	g.Expect(draftOf("app", "mine")).To(Equal(theirs.Commit), "a Fetch reads what the store wrote")

	// A write that found the registry other than the store knew reads
	// the package again: a Resync does not skip it on that write's word.
	mine, err = update(st, theirs.Commit, 5)
	g.Expect(err).NotTo(HaveOccurred())
	theirs, err = update(other, mine.Commit, 6)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "mine", Expected: mine.Commit, Contents: storetest.Package("app", 7), Message: "m"})
	g.Expect(err).To(MatchError(store.ErrConflict))
	counted.take()
	g.Expect(st.Resync(ctx)).To(Succeed())
	g.Expect(counted.take()).To(HaveKeyWithValue("GET tags", 2))
	g.Expect(draftOf("app", "mine")).To(Equal(theirs.Commit))
}

// A registry that asks for no token (htpasswd here) is pinged for the
// store's life, not for each package: its credentials are not scoped to
// an OCI repository, so one transport serves the reads and another the
// writes of every package. A token registry's transports stay scoped, a
// package each (TestStore_tokenScopes).
func TestStore_pingsOncePerRegistry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, counted, open := countedRegistry(t)
	st := open(oci.StoreOptions{Prefix: "pings"})
	opened := counted.take()
	g.Expect(opened["GET other /v2/"]).To(BeNumerically("<=", 3), "the ping that tells the scheme, and one for each transport: %v", opened)
	for i := range 20 {
		p := fmt.Sprintf("app-%d", i)
		d, err := st.WriteDraft(ctx, store.DraftWrite{Package: p, Workspace: "ws", Contents: storetest.Package(p, 1), Message: "m"})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = st.WriteDraft(ctx, store.DraftWrite{Package: p, Workspace: "ws", Expected: d.Commit, Contents: storetest.Package(p, 2), Message: "m"})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(st.Fetch(ctx)).To(Succeed())
	sent := counted.take()
	g.Expect(sent).NotTo(HaveKey("GET other /v2/"), "20 packages made, updated and read: %v", sent)
	g.Expect(sent["PUT manifests:draft.ws"]).To(Equal(40))
	g.Expect(sent["GET tags"]).To(BeNumerically(">=", 20), "%v", sent)
}

// A registry whose authentication changes behind the same address (put
// behind a token service: an upgrade, a new policy) refuses the
// transport of its former scheme once; the store pings it again and
// goes on with tokens, without being opened again.
func TestStore_registryAuthChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	before := registry.Start(t)
	after := registry.StartTokens(t)
	after.AddUser(before.Username, before.Password)
	t.Setenv("DOCKER_CONFIG", before.DockerConfig(t, before.Password))
	pool := x509.NewCertPool()
	for _, ca := range []string{before.CAFile, after.CAFile} {
		data, err := os.ReadFile(ca)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pool.AppendCertsFromPEM(data)).To(BeTrue())
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	moved := &movedRegistry{from: before.Host, to: after.Host, next: base}
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: before.Host + "/auth", Options: oci.Options{Transport: moved}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.TokensAsked()).To(BeEmpty())

	moved.switched.Store(true) // the same address now asks for tokens (and holds nothing yet)
	g.Expect(st.Fetch(ctx)).To(MatchError(store.ErrAuthentication), "the former scheme's transport is refused")
	g.Expect(st.Fetch(ctx)).To(Succeed(), "pinged again: tokens")
	revs, err := st.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(BeEmpty(), "what the registry holds now")
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 2), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.TokensAsked()).To(ContainElement("repository:auth/app:push,pull,delete"))
}

// movedRegistry sends the requests for one registry's address to
// another's once switched: a registry reconfigured behind its address.
type movedRegistry struct {
	from, to string
	switched atomic.Bool
	next     http.RoundTripper
}

func (m *movedRegistry) RoundTrip(req *http.Request) (*http.Response, error) {
	if m.switched.Load() && req.URL.Host == m.from {
		req = req.Clone(req.Context())
		// The Host header stays: the registry names its upload
		// locations by it, as behind a proxy.
		req.URL.Host, req.Host = m.to, m.from
	}
	return m.next.RoundTrip(req)
}

// A read the registry answers for a moment with a failure (503, as
// behind a proxy while the registry restarts) is tried again, through
// the shared transport of a registry that asks for no token; a write
// is not.
func TestStore_readRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	flaky := &failingOnce{next: reg.Transport}
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/retried", Options: oci.Options{Transport: flaky}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())

	flaky.fail.Store("GET tags")
	g.Expect(st.Fetch(ctx)).To(Succeed(), "the tag list answered 503 once is read again")
	g.Expect(flaky.failed.Load()).To(Equal(int32(1)))
	revs, err := st.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))

	flaky.fail.Store("PUT manifests:draft.other")
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "other", Workspace: "other", Contents: storetest.Package("other", 1), Message: "m"})
	g.Expect(err).To(MatchError(ContainSubstring("503")), "a write is not sent twice")
	g.Expect(flaky.failed.Load()).To(Equal(int32(2)))
}

// failingOnce answers the next request of a kind (registryKind) with
// 503 Service Unavailable, without sending it.
type failingOnce struct {
	fail   atomic.Value // string
	failed atomic.Int32
	next   http.RoundTripper
}

func (f *failingOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if kind, _ := f.fail.Load().(string); kind != "" && registryKind(req) == kind && f.fail.CompareAndSwap(kind, "") {
		f.failed.Add(1)
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	return f.next.RoundTrip(req)
}
