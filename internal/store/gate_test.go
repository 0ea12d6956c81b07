package store

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// hangingRemote is a smart-HTTP git server that can be told to stop
// answering: requests then wait until released (or their client gives
// up). hung receives a value for each request that starts waiting.
type hangingRemote struct {
	URL      string
	hang     atomic.Bool
	release  chan struct{}
	hung     chan struct{}
	requests atomic.Int32
}

func newHangingRemote(t *testing.T) *hangingRemote {
	root := t.TempDir()
	gitserver.InitBare(t, root, "pkgs.git")
	backend := gitserver.NewServer(t, root)
	h := &hangingRemote{release: make(chan struct{}), hung: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.requests.Add(1)
		if h.hang.Load() {
			h.hung <- struct{}{}
			select {
			case <-h.release:
			case <-req.Context().Done():
				return
			}
		}
		backend.Config.Handler.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/pkgs.git"
	return h
}

// TestRepository_hungRemoteHoldsNobody: while one exchange with a remote
// hangs, reads of the mirror go on, and other callers that need the
// remote give up at once with ErrBusy instead of waiting for the timeout.
func TestRepository_hungRemoteHoldsNobody(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remote := newHangingRemote(t)
	// The timeout is far longer than the test: whatever waits on the hung
	// exchange would wait until it is released.
	r := open(t, Options{URL: remote.URL, CreateBranch: true, Timeout: 10 * time.Minute, Gate: &Gate{BusyAfter: 200 * time.Millisecond}})
	rev, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 2)})
	g.Expect(err).NotTo(HaveOccurred())

	remote.hang.Store(true)
	fetched := make(chan error, 1)
	go func() { fetched <- r.Fetch(ctx) }()
	<-remote.hung

	reads := make(chan error, 1)
	go func() {
		if _, err := r.List(ctx); err != nil {
			reads <- err
			return
		}
		if _, err := r.Read(ctx, rev); err != nil {
			reads <- err
			return
		}
		_, err := r.Get(ctx, "app", "ws", 0)
		reads <- err
	}()
	g.Eventually(reads, "30s").Should(Receive(BeNil()), "reads do not wait for the hung fetch")

	err = r.Fetch(ctx)
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "a second fetch gives up: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(remote.URL + ": another exchange with the remote has been running for"))
	err = r.FetchIfOlder(ctx, 0)
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "%v", err)
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "other", Workspace: "ws", Contents: testPackage("other", 1)})
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "a write gives up: %v", err)
	_, err = r.Propose(ctx, "app", "ws", "", Proposal{})
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "a lifecycle move gives up: %v", err)
	g.Expect(fetched).NotTo(Receive(), "the hung fetch is still under way")

	// The remote answers again: the hung fetch completes and the others
	// get through.
	remote.hang.Store(false)
	close(remote.release)
	g.Eventually(fetched, "30s").Should(Receive(BeNil()))
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "other", Workspace: "ws", Contents: testPackage("other", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	revs, err := r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(ConsistOf("app v0 ws Draft", "other v0 ws Draft"), "the write given up was never sent")
}

// TestRepository_queuedWriteGivesUp: a draft write queued behind a push
// that hangs is taken back, unsent, with ErrBusy; the hung push's own
// writer hears its result.
func TestRepository_queuedWriteGivesUp(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remote := newHangingRemote(t)
	r := open(t, Options{URL: remote.URL, CreateBranch: true, Timeout: 10 * time.Minute, Gate: &Gate{BusyAfter: 200 * time.Millisecond}})
	remote.hang.Store(true)
	first := make(chan error, 1)
	go func() {
		_, err := r.WriteDraft(ctx, DraftWrite{Package: "a", Workspace: "ws", Contents: testPackage("a", 1)})
		first <- err
	}()
	<-remote.hung
	// The leader is pushing: this write queues behind it, then gives up.
	_, err := r.WriteDraft(ctx, DraftWrite{Package: "b", Workspace: "ws", Contents: testPackage("b", 1)})
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("the write was not sent"))

	remote.hang.Store(false)
	close(remote.release)
	g.Eventually(first, "30s").Should(Receive(BeNil()))
	g.Expect(r.Fetch(ctx)).To(Succeed())
	revs, err := r.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summarize(revs)).To(ConsistOf("a v0 ws Draft"))
}

// TestRepository_backoff: after a remote did not answer, the exchanges of
// every Repository sharing its Gate (a reopened one too) fail at once,
// without a request, until the backoff has passed; an answer ends it.
func TestRepository_backoff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	remote := newHangingRemote(t)
	gate := &Gate{Backoff: 4 * time.Minute}
	r := open(t, Options{URL: remote.URL, CreateBranch: true, Timeout: 300 * time.Millisecond, Gate: gate})
	remote.hang.Store(true)
	err := r.Fetch(ctx)
	g.Expect(errors.Is(err, ErrTimeout)).To(BeTrue(), "%v", err)

	before := remote.requests.Load()
	err = r.Fetch(ctx)
	var ue *UnavailableError
	g.Expect(errors.As(err, &ue)).To(BeTrue(), "%v", err)
	g.Expect(errors.Is(err, ErrUnavailable)).To(BeTrue())
	g.Expect(errors.Is(err, ErrTimeout)).To(BeTrue(), "the cause is kept")
	g.Expect(err.Error()).To(MatchRegexp(`^fetching http://.*/pkgs.git: the remote did not answer within 300ms: timed out \(1 failure\(s\) in a row; not tried again before \d\d:\d\d:\d\d\)$`))
	g.Expect(ue.RetryAt).To(BeTemporally("~", time.Now().Add(4*time.Minute), time.Minute))
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "a", Workspace: "ws", Contents: testPackage("a", 1)})
	g.Expect(errors.Is(err, ErrUnavailable)).To(BeTrue(), "%v", err)
	_, err = Open(ctx, Options{URL: remote.URL, CacheDir: t.TempDir(), Gate: gate})
	g.Expect(errors.Is(err, ErrUnavailable)).To(BeTrue(), "a reopened repository keeps the backoff: %v", err)
	g.Expect(remote.requests.Load()).To(Equal(before), "nothing was sent to the remote")
	after, ok := RetryAfter(err)
	g.Expect(ok).To(BeTrue())
	g.Expect(after).To(BeNumerically(">", 3*time.Minute))

	// Once the backoff has passed, one exchange tries again, and an answer
	// ends the backoff.
	remote.hang.Store(false)
	gate.mu.Lock()
	gate.retryAt = time.Now()
	gate.mu.Unlock()
	g.Expect(r.Fetch(ctx)).To(Succeed())
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "a", Workspace: "ws", Contents: testPackage("a", 1)})
	g.Expect(err).NotTo(HaveOccurred())
}

// TestGate_backoffDoubles: each failure in a row doubles the pause, up to
// MaxBackoff; other errors (the remote answered) end it, a cancelled
// exchange leaves it as it is.
func TestGate_backoffDoubles(t *testing.T) {
	g := NewWithT(t)
	gate := &Gate{Backoff: time.Minute}
	pause := func() time.Duration {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		return time.Until(gate.retryAt).Round(time.Minute)
	}
	fail := func(err error) {
		gate.mu.Lock()
		gate.retryAt = time.Time{} // as if the backoff had passed
		gate.mu.Unlock()
		exit, eerr := gate.enter(context.Background(), "r")
		g.Expect(eerr).NotTo(HaveOccurred())
		exit(err)
	}
	for _, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, MaxBackoff, MaxBackoff} {
		fail(ErrTimeout)
		g.Expect(pause()).To(Equal(want))
	}
	fail(context.Canceled)
	g.Expect(gate.failures).To(Equal(5), "a cancelled exchange says nothing of the remote")
	fail(ErrAuthentication)
	g.Expect(gate.failures).To(Equal(0), "the remote answered")
	_, ok := RetryAfter(ErrAuthentication)
	g.Expect(ok).To(BeFalse())
}

// TestRepository_refusedConnectionBacksOff: a remote that refuses
// connections counts as not answering.
func TestRepository_refusedConnectionBacksOff(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/pkgs.git"
	srv.Close() // nothing listens there any more
	gate := &Gate{}
	_, err := Open(context.Background(), Options{URL: url, CacheDir: t.TempDir(), Gate: gate})
	g.Expect(err).To(HaveOccurred())
	_, ok := RetryAfter(err)
	g.Expect(ok).To(BeTrue(), "%v", err)
	_, err = Open(context.Background(), Options{URL: url, CacheDir: t.TempDir(), Gate: gate})
	g.Expect(errors.Is(err, ErrUnavailable)).To(BeTrue(), "%v", err)
}
