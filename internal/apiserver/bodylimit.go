package apiserver

import (
	"fmt"
	"io"
	"net/http"

	"golang.org/x/sync/semaphore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/scion-dev/scion/internal/store"
)

// framing is what a request body may hold besides its package's files:
// the object's metadata and the JSON around the files.
const framing = 1 << 20

// pushLimit bounds the memory that writes of PackageRevisionResources
// (pushes, which carry whole packages) take: a body declared larger than
// a package may be is refused before a byte of it is read, and the
// bodies being read and decoded at once add up to at most budget bytes
// (a body of unknown length counts as the largest); a write waits for
// its turn.
type pushLimit struct {
	// max is the largest body: the package size limit and framing.
	max, pkgLimit int64
	inFlight      *semaphore.Weighted
}

// newPushLimit bounds bodies by l's package size; the bodies read at
// once add up to one of the largest (its reading and decoding take about
// three times its size).
func newPushLimit(l store.Limits) *pushLimit {
	size := l.PackageBytes
	if size <= 0 {
		size = store.DefaultLimits.PackageBytes
	}
	return &pushLimit{max: size + framing, pkgLimit: size, inFlight: semaphore.NewWeighted(size + framing)}
}

// tooLarge is the answer to a push whose body (size, "80Mi is") is over
// the limit.
func (p *pushLimit) tooLarge(name, size, outcome string) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"PackageRevisionResources %s: the request body of %s over the %s a push may send (the max-package-size limit of %s, and %s for the object around the files): %s",
		name, size, store.Quantity(p.max), store.Quantity(p.pkgLimit), store.Quantity(framing), outcome))
}

// cappedBody fails a read past left bytes with err.
type cappedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *cappedBody) Read(buf []byte) (int, error) {
	if int64(len(buf)) > b.left+1 {
		buf = buf[:b.left+1]
	}
	n, err := b.ReadCloser.Read(buf)
	if b.left -= int64(n); b.left < 0 {
		return 0, b.err
	}
	return n, err
}

// wrap returns h behind the limit. It runs after authentication and
// authorization (inside the handler chain), so only a caller allowed to
// write a package can make Scion wait for, or read, a large body.
func (p *pushLimit) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.RequestInfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || info.Resource != "packagerevisionresources" ||
			r.Method != http.MethodPut && r.Method != http.MethodPost && r.Method != http.MethodPatch {
			h.ServeHTTP(w, r)
			return
		}
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		if r.ContentLength > p.max {
			responsewriters.ErrorNegotiated(p.tooLarge(info.Name, fmt.Sprintf("%d bytes is", r.ContentLength), "nothing was read or written"), apiCodecs, gv, w, r)
			return
		}
		weight := r.ContentLength
		if weight < 0 {
			// Of unknown length (kubectl replace --raw -f sends its
			// file so): counted as the largest, and cut there with
			// the same answer.
			weight = p.max
			r.Body = &cappedBody{ReadCloser: r.Body, left: p.max, err: p.tooLarge(info.Name, "unknown length is", "nothing was written")}
		}
		if err := p.inFlight.Acquire(r.Context(), weight); err != nil {
			responsewriters.ErrorNegotiated(apierrors.NewTimeoutError("waiting for other pushes to be read: "+err.Error(), 1), apiCodecs, gv, w, r)
			return
		}
		defer p.inFlight.Release(weight)
		h.ServeHTTP(w, r)
	})
}
