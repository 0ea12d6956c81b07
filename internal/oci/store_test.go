package oci_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/storetest"
)

// The behaviour every store keeps (internal/testutil/storetest), for an
// OCI registry with TLS and htpasswd, and for one with bearer tokens from
// a token service: each handle is a Store of its own on one prefix.
func TestStore_conformance(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *registry.Registry{"htpasswd": registry.Start, "tokens": registry.StartTokens} {
		t.Run(name, func(t *testing.T) {
			reg := start(t)
			t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
			var n atomic.Int32
			storetest.Run(t, func(t *testing.T) storetest.Open {
				prefix := fmt.Sprintf("%s/conformance-%d", reg.Host, n.Add(1))
				return func(t *testing.T) store.Store {
					st, err := oci.OpenStore(context.Background(), oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
					if err != nil {
						t.Fatal(err)
					}
					return st
				}
			})
		})
	}
}

// With bearer tokens, a package's writes ask for one token of push, pull
// and delete, not one per kind of access; an account whose token service
// refuses deletes outright still creates drafts, and an update, which
// deletes the manifest it replaced, says the registry must allow
// deletes.
func TestStore_tokenScopes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.StartTokens(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/tokens", Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())
	for i := 2; i < 5; i++ {
		d, err = st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: d.Commit, Contents: storetest.Package("app", i), Message: "m"})
		g.Expect(err).NotTo(HaveOccurred())
	}
	writes := 0
	for _, scopes := range reg.TokensAsked() {
		if strings.Contains(scopes, "tokens/app:push") || strings.Contains(scopes, "tokens/app:delete") {
			writes++
			g.Expect(scopes).To(Equal("repository:tokens/app:push,pull,delete"), "%q", reg.TokensAsked())
		}
	}
	g.Expect(writes).To(Equal(1), "one token for the package's writes: %v", reg.TokensAsked())

	reg.AddUser("pusher", "pusher-password", "pull", "push", "*") // "*": the catalog
	pusher := account{authn.FromConfig(authn.AuthConfig{Username: "pusher", Password: "pusher-password"})}
	st2, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/tokens", Options: oci.Options{Keychain: pusher, Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	d2, err := st2.WriteDraft(ctx, store.DraftWrite{Package: "other", Workspace: "ws", Contents: storetest.Package("other", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred(), "push alone is asked for when the pair is refused")
	_, err = st2.WriteDraft(ctx, store.DraftWrite{Package: "other", Workspace: "ws", Expected: d2.Commit, Contents: storetest.Package("other", 2), Message: "m"})
	g.Expect(err).To(MatchError(ContainSubstring("the registry must allow deletes")))
}

// account is a keychain of one account, whatever the registry.
type account struct{ authn.Authenticator }

func (a account) Resolve(authn.Resource) (authn.Authenticator, error) { return a.Authenticator, nil }

// Names a registry cannot hold are refused, naming them, and nothing is
// written: a package path in upper case, a floating tag over 128
// characters.
func TestStore_badNames(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/names", Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.WriteDraft(ctx, store.DraftWrite{Package: "MyApp", Workspace: "ws", Contents: storetest.Package("app", 1)})
	g.Expect(err).To(MatchError(ContainSubstring(reg.Host + "/names/MyApp:draft.ws cannot be an OCI reference")))
	rev, err := (&pkgservice.Service{}).PublishDirect(ctx, st, "app", "ws", storetest.Package("app", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = st.SetFloatingTag(ctx, "app", strings.Repeat("x", 129), rev.Revision)
	g.Expect(err).To(MatchError(ContainSubstring("cannot be an OCI reference")))
	_, err = oci.OpenStore(ctx, oci.StoreOptions{Prefix: "https://" + reg.Host + "/x"})
	g.Expect(err).To(MatchError(ContainSubstring("is not an OCI registry address")))
	revs, err := st.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1), "only the published revision")
}

// A registry with more repositories than one catalog page holds: every
// package under the prefix is found, none of another prefix.
func TestStore_catalogPages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	oci.SetCatalogPage(t, 2)
	o := oci.Options{Transport: reg.Transport}
	writer, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/fleet", Options: o})
	g.Expect(err).NotTo(HaveOccurred())
	for i := 0; i < 5; i++ {
		_, err := (&pkgservice.Service{}).PublishDirect(ctx, writer, fmt.Sprintf("app-%d", i), "v1", storetest.Package("app", i), "m", "me")
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err = oci.Push(ctx, ref(t, "oci://"+reg.Host+"/elsewhere/app:v1"), "app", testPackage(), o)
	g.Expect(err).NotTo(HaveOccurred())
	reader, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/fleet", Options: o})
	g.Expect(err).NotTo(HaveOccurred())
	revs, err := reader.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, r := range revs {
		names = append(names, r.Package)
	}
	g.Expect(names).To(ConsistOf("app-0", "app-1", "app-2", "app-3", "app-4"))
}

// latest follows the newest published revision of a package, as a git
// branch does: moved by each publication, back to the revision before
// when the newest is deleted, and never set by hand.
func TestStore_latestTag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/latest", Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	latest := func() string {
		ref, err := name.ParseReference(reg.Host + "/latest/app:latest")
		g.Expect(err).NotTo(HaveOccurred())
		d, err := remote.Head(ref, remote.WithTransport(reg.Transport), remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return err.Error()
		}
		return d.Digest.String()
	}
	svc := &pkgservice.Service{}
	v1, err := svc.PublishDirect(ctx, st, "app", "one", storetest.Package("app", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest()).To(Equal(v1.Commit))
	v2, err := svc.PublishDirect(ctx, st, "app", "two", storetest.Package("app", 2), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest()).To(Equal(v2.Commit), "moved by the publication")
	tags, err := st.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).NotTo(HaveKey("latest"), "not a floating tag of people's")
	_, err = st.SetFloatingTag(ctx, "app", "latest", 1)
	g.Expect(err).To(MatchError(ContainSubstring("Scion keeps it on the newest published revision")))
	g.Expect(latest()).To(Equal(v2.Commit))

	g.Expect(st.Delete(ctx, v2, "me")).To(Succeed())
	g.Expect(latest()).To(Equal(v1.Commit), "back to the newest revision left")
	g.Expect(st.Delete(ctx, v1, "me")).To(Succeed())
	g.Expect(latest()).To(ContainSubstring("404 Not Found"), "nothing published, nothing latest")

	// The deleted revisions' names are retired (retired.vN): their
	// workspaces take no new draft, and the next publication is v3, also
	// for another store of the same prefix.
	other, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: reg.Host + "/latest", Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "two", Contents: storetest.Package("app", 3), Message: "m"})
	var retired *store.RetiredError
	g.Expect(errors.As(err, &retired)).To(BeTrue(), "%v", err)
	g.Expect(retired.Revision).To(Equal(2))
	v3, err := svc.PublishDirect(ctx, other, "app", "three", storetest.Package("app", 3), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v3.Revision).To(Equal(3))
	g.Expect(latest()).To(Equal(v3.Commit))
	tags, err = other.FloatingTags(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(BeEmpty(), "retired.vN are not floating tags")
	revs, err := other.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))
}

// A reader that opens a prefix while another writer updates a draft does
// not fail on the manifest the tag held when it was listed: the writer
// moved the tag and deleted that manifest between the reader's two
// requests, and the reader reads the tag again.
func TestStore_readWhileDraftUpdated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	prefix := reg.Host + "/moving"
	writer, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
	g.Expect(err).NotTo(HaveOccurred())
	first, err := writer.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Contents: storetest.Package("app", 1), Message: "m"})
	g.Expect(err).NotTo(HaveOccurred())

	var second store.Revision
	var moved atomic.Bool
	between := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := reg.Transport.RoundTrip(req)
		if err == nil && req.Method == http.MethodHead && strings.HasSuffix(req.URL.Path, "/manifests/draft.ws") && moved.CompareAndSwap(false, true) {
			// The reader knows the first digest; the writer moves on.
			second, err = writer.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws", Expected: first.Commit, Contents: storetest.Package("app", 2), Message: "m"})
			if err != nil {
				return nil, err
			}
		}
		return resp, err
	})
	reader, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: between}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moved.Load()).To(BeTrue(), "the draft moved while the reader read it")
	g.Expect(second.Commit).NotTo(Equal(first.Commit))
	revs, err := reader.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))
	g.Expect(revs[0].Commit).To(Equal(second.Commit), "the draft as the writer left it")
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
