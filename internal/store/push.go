package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
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
// success the local mirror refs are updated too. The caller holds r.mu.
func (r *Repository) push(ctx context.Context, updates []refUpdate) error {
	return r.pushChecked(ctx, updates, nil)
}

// pushChecked is push with a check of the remote's refs, as the server
// advertised them, before anything is sent: when check fails, nothing is
// pushed.
func (r *Repository) pushChecked(ctx context.Context, updates []refUpdate, check func(remote map[plumbing.ReferenceName]plumbing.Hash) error) error {
	sess, err := r.transport.NewReceivePackSession(r.endpoint, r.auth)
	if err != nil {
		return r.remoteError("connecting to", err)
	}
	defer sess.Close()

	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return r.remoteError("reading refs of", err)
	}
	remote := map[plumbing.ReferenceName]plumbing.Hash{}
	var haves []plumbing.Hash
	if ar != nil {
		refs, err := ar.AllReferences()
		if err != nil {
			return fmt.Errorf("reading refs of %s: %w", r.opts.URL, err)
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
	for _, u := range updates {
		if actual := remote[u.Name]; actual != u.Old {
			return &ConflictError{Ref: u.Name.String(), Expected: hashString(u.Old), Actual: hashString(actual)}
		}
	}

	if check != nil {
		if err := check(remote); err != nil {
			return err
		}
	}

	var caps *capability.List
	if ar != nil {
		caps = ar.Capabilities
	} else {
		caps = capability.NewList()
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	if len(updates) > 1 {
		if !caps.Supports(capability.Atomic) {
			return fmt.Errorf("pushing to %s: the server does not support atomic pushes", r.opts.URL)
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	var news []plumbing.Hash
	allDelete := true
	for _, u := range updates {
		req.Commands = append(req.Commands, &packp.Command{Name: u.Name, Old: u.Old, New: u.New})
		if !u.New.IsZero() {
			allDelete = false
			news = append(news, u.New)
		}
	}

	done := make(chan error, 1)
	if allDelete {
		close(done)
	} else {
		hashes, err := r.objectsToPush(news, haves)
		if err != nil {
			return fmt.Errorf("computing objects to push: %w", err)
		}
		rd, wr := io.Pipe()
		req.Packfile = rd
		go func() {
			// No delta search: a push carries one write's few new
			// objects, which the server keeps loose anyway; the search
			// cost more than the bytes it saved.
			_, err := packfile.NewEncoder(wr, r.storer, false).Encode(hashes, 0)
			done <- wr.CloseWithError(err)
		}()
		defer rd.Close()
	}
	rs, err := sess.ReceivePack(ctx, req)
	if rs != nil {
		// The report says which ref failed and why; go-git also returns
		// it as an error.
		if statusErr := r.reportError(rs, updates); statusErr != nil {
			return statusErr
		}
	}
	if err != nil {
		return r.remoteError("pushing to", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("encoding objects for %s: %w", r.opts.URL, err)
	}
	for _, u := range updates {
		if err := r.setLocalRef(u.Name, u.New); err != nil {
			return err
		}
	}
	return nil
}

// reportError turns a receive-pack report into an error: a ConflictError
// for the ref that lost a race (not the refs an atomic push merely
// aborted), or a plain error naming the ref and the server's reason.
func (r *Repository) reportError(rs *packp.ReportStatus, updates []refUpdate) error {
	if rs.UnpackStatus != "" && rs.UnpackStatus != "ok" {
		return fmt.Errorf("pushing to %s: unpack error: %s", redact(r.opts.URL), rs.UnpackStatus)
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
	return fmt.Errorf("pushing %s to %s: %s", culprit.ReferenceName, redact(r.opts.URL), culprit.Status)
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

// newTransport returns the transport for an endpoint.
func newTransport(ep *transport.Endpoint) (transport.Transport, error) {
	return client.NewClient(ep)
}
