package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/scion-dev/scion/internal/metrics"
)

// refUpdate is one compare-and-swap of a ref: Old is the value the writer
// read (zero: the ref must not exist), New the value to set (zero: delete).
type refUpdate struct {
	Name plumbing.ReferenceName
	Old  plumbing.Hash
	New  plumbing.Hash
}

// push applies the updates on the remote, atomically when there are
// several. git receive-pack checks each update's old value under its ref
// lock, so a concurrent writer can never be overwritten silently. On
// success the local mirror refs are updated too. The caller has entered
// the gate and holds r.mu (released while the remote works, see
// pushSession).
func (r *Repository) push(ctx context.Context, updates []refUpdate) error {
	return r.afterConflict(ctx, r.pushSession(ctx, updates, nil, true))[0]
}

// afterConflict brings the mirror up to date when a push lost a race
// (errs holds an ErrConflict): the one place a conflict is followed up,
// so that every writer's retry decides with what git has now, without
// fetching itself.
func (r *Repository) afterConflict(ctx context.Context, errs []error) []error {
	for i, err := range errs {
		if errors.Is(err, ErrConflict) {
			if ferr := r.fetchLocked(ctx); ferr != nil {
				errs[i] = errors.Join(err, ferr)
			}
			break
		}
	}
	return errs
}

// pushEach applies independent updates in one session: each succeeds or
// fails on its own, and errs[i] is the result of updates[i]. checks[i],
// when set, vets the remote's refs (as the server advertised them) before
// anything is sent; an update that fails its check is not sent. The
// caller has entered the gate and holds r.mu.
func (r *Repository) pushEach(ctx context.Context, updates []refUpdate, checks []func(remote map[plumbing.ReferenceName]plumbing.Hash) error) []error {
	return r.afterConflict(ctx, r.pushSession(ctx, updates, checks, false))
}

// pushSession is one receive-pack session. Atomic, it returns one error
// for all the updates (in errs[0]); otherwise one per update. r.mu is
// released while the remote advertises its refs and while it applies the
// updates: other writers prepare their next writes meanwhile, and the
// local refs move only once the remote has answered (nobody else moves
// them: the caller holds the gate).
func (r *Repository) pushSession(ctx context.Context, updates []refUpdate, checks []func(map[plumbing.ReferenceName]plumbing.Hash) error, atomic bool) (errs []error) {
	errs = make([]error, len(updates))
	failAll := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	if r.opts.ReadOnly {
		return failAll(fmt.Errorf("%s is opened to be read only: %w", Redact(r.opts.URL), ErrReadOnly))
	}
	r.gate.mark()
	// Objects the updates point at are on disk before any ref moves.
	if err := r.storer.Flush(); err != nil {
		return failAll(fmt.Errorf("storing objects: %w", err))
	}
	ctx, cancel := r.withTimeout(ctx)
	defer cancel()
	sess, err := r.transport.NewReceivePackSession(r.endpoint, r.auth)
	if err != nil {
		return failAll(r.remoteError("connecting to push to", err))
	}
	defer sess.Close()

	var ar *packp.AdvRefs
	r.unlocked(func() { ar, err = sess.AdvertisedReferencesContext(ctx) })
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return failAll(r.remoteError("pushing to", err))
	}
	remote := map[plumbing.ReferenceName]plumbing.Hash{}
	var haves []plumbing.Hash
	if ar != nil {
		refs, err := ar.AllReferences()
		if err != nil {
			return failAll(r.remoteError("reading refs of", err))
		}
		for name, ref := range refs {
			if ref.Type() != plumbing.HashReference {
				continue
			}
			remote[name] = ref.Hash()
			if r.storer.HasEncodedObject(ref.Hash()) == nil {
				haves = append(haves, ref.Hash())
			}
		}
	}
	// Fail early, with the actual value, when the advertisement already
	// shows a conflict; receive-pack re-checks under the ref lock.
	var sent []int
	for i, u := range updates {
		if i < len(checks) && checks[i] != nil {
			errs[i] = checks[i](remote)
		}
		if actual := remote[u.Name]; errs[i] == nil && actual != u.Old {
			errs[i] = &ConflictError{Ref: u.Name.String(), Expected: hashString(u.Old), Actual: hashString(actual)}
		}
		if errs[i] == nil {
			sent = append(sent, i)
		} else if atomic {
			return failAll(errs[i])
		}
	}
	if len(sent) == 0 {
		return errs
	}

	var caps *capability.List
	if ar != nil {
		caps = ar.Capabilities
	} else {
		caps = capability.NewList()
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	if atomic && len(updates) > 1 {
		if !caps.Supports(capability.Atomic) {
			return failAll(fmt.Errorf("pushing to %s: the server does not support atomic pushes", r.URL()))
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	metrics.GitPushUpdates.Observe(float64(len(sent)))
	var news []plumbing.Hash
	for _, i := range sent {
		u := updates[i]
		req.Commands = append(req.Commands, &packp.Command{Name: u.Name, Old: u.Old, New: u.New})
		if !u.New.IsZero() {
			news = append(news, u.New)
		}
	}

	if len(news) > 0 {
		hashes, err := r.objectsToPush(news, haves)
		if err != nil {
			return failAll(fmt.Errorf("computing objects to push: %w", err))
		}
		var pack bytes.Buffer
		if err := writePackfile(&pack, r.storer, hashes); err != nil {
			return failAll(fmt.Errorf("encoding objects for %s: %w", r.URL(), err))
		}
		req.Packfile = io.NopCloser(&pack)
	}
	var rs *packp.ReportStatus
	r.unlocked(func() { rs, err = sess.ReceivePack(ctx, req) })
	if atomic {
		if rs != nil {
			// The report says which ref failed and why; go-git also
			// returns it as an error.
			if statusErr := r.reportError(rs, updates); statusErr != nil {
				return failAll(statusErr)
			}
		}
		if err != nil {
			return failAll(r.remoteError("pushing to", err))
		}
	} else {
		switch {
		case rs == nil && err == nil:
			return failAll(fmt.Errorf("pushing to %s: the server sent no report", r.URL()))
		case rs == nil:
			return failAll(r.remoteError("pushing to", err))
		case rs.UnpackStatus != "" && rs.UnpackStatus != "ok":
			return failAll(fmt.Errorf("pushing to %s: unpack error: %s", r.URL(), rs.UnpackStatus))
		}
		status := map[plumbing.ReferenceName]string{}
		for _, cs := range rs.CommandStatuses {
			status[cs.ReferenceName] = cs.Status
		}
		for _, i := range sent {
			errs[i] = r.statusError(updates[i], status[updates[i].Name])
		}
	}
	for _, i := range sent {
		if errs[i] != nil {
			continue
		}
		if err := r.setLocalRef(updates[i].Name, updates[i].New); err != nil {
			errs[i] = err
		}
	}
	return errs
}

// statusError is the result of one update of a non-atomic push, from its
// receive-pack status.
func (r *Repository) statusError(u refUpdate, status string) error {
	switch {
	case status == "ok":
		return nil
	case status == "":
		return fmt.Errorf("pushing %s to %s: the server did not report on it", u.Name, r.URL())
	case isRaceStatus(status):
		return &ConflictError{Ref: u.Name.String(), Expected: hashString(u.Old), Detail: status}
	default:
		return fmt.Errorf("pushing %s to %s: %s", u.Name, r.URL(), status)
	}
}

// reportError turns a receive-pack report into an error: a ConflictError
// for the ref that lost a race (not the refs an atomic push merely
// aborted), or a plain error naming the ref and the server's reason.
func (r *Repository) reportError(rs *packp.ReportStatus, updates []refUpdate) error {
	if rs.UnpackStatus != "" && rs.UnpackStatus != "ok" {
		return fmt.Errorf("pushing to %s: unpack error: %s", r.URL(), rs.UnpackStatus)
	}
	var culprit *packp.CommandStatus
	for _, cs := range rs.CommandStatuses {
		if cs.Status == "ok" {
			continue
		}
		if culprit == nil || strings.Contains(culprit.Status, "atomic transaction failed") {
			culprit = cs
		}
	}
	if culprit == nil {
		return nil
	}
	if strings.Contains(culprit.Status, "atomic transaction failed") {
		// The transaction failed as a whole and git does not say which
		// ref lost the race.
		names := make([]string, len(updates))
		for i, u := range updates {
			names[i] = u.Name.String()
		}
		return &ConflictError{Ref: strings.Join(names, ", "), Detail: culprit.Status}
	}
	for _, u := range updates {
		if u.Name == culprit.ReferenceName && isRaceStatus(culprit.Status) {
			return &ConflictError{Ref: u.Name.String(), Expected: hashString(u.Old), Detail: culprit.Status}
		}
	}
	return fmt.Errorf("pushing %s to %s: %s", culprit.ReferenceName, r.URL(), culprit.Status)
}

// isRaceStatus recognizes receive-pack's reasons for an update that lost a
// race (old value mismatch, lock held, the atomic transaction aborted).
func isRaceStatus(s string) bool {
	for _, m := range []string{"stale info", "failed to lock", "cannot lock", "atomic", "reference already exists", "fetch first", "non-fast-forward", "failed to update ref", "incorrect old value"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// newTransport returns the transport for an endpoint: over HTTP(S), through
// base (http.DefaultTransport when nil), each
// answer of the remote is bounded to maxBytes (what names the remote in
// the error).
func newTransport(ep *transport.Endpoint, base http.RoundTripper, maxBytes int64, what string) (transport.Transport, error) {
	if ep.Protocol == "http" || ep.Protocol == "https" {
		if base == nil {
			base = http.DefaultTransport
		}
		return githttp.NewClient(&http.Client{Transport: &limitedTransport{base: base, max: maxBytes, what: "an answer of " + what}}), nil
	}
	return client.NewClient(ep)
}
