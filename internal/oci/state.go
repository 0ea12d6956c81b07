package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/scion-dev/scion/internal/lru"
	"github.com/scion-dev/scion/internal/pkg"
)

// This file is what a Store knows of its registry between exchanges: each
// package's tags and the manifests they hold, what it found wrong, and
// the package layers it read.

// pkgState is what a Store read of one package: its tags and the
// manifests they hold. Once a Store holds it, it is not changed (a write
// edits a copy), so readers may use it outside the Store's lock.
type pkgState struct {
	tags      map[string]string    // tag -> digest
	manifests map[string]*manifest // digest -> manifest, of the digests the tags hold
	sum       [sha256.Size]byte    // of the package's name and tags: its part of Head
}

func newPkgState() *pkgState {
	return &pkgState{tags: map[string]string{}, manifests: map[string]*manifest{}}
}

// manifest is the manifest at digest d, nil when not known (ps may be nil).
func (ps *pkgState) manifest(d string) *manifest {
	if ps == nil {
		return nil
	}
	return ps.manifests[d]
}

// tagOf is the digest at tag t (ps may be nil).
func (ps *pkgState) tagOf(t string) (string, bool) {
	if ps == nil {
		return "", false
	}
	d, ok := ps.tags[t]
	return d, ok
}

// clone is a copy a write edits.
func (ps *pkgState) clone() *pkgState {
	out := newPkgState()
	if ps != nil {
		maps.Copy(out.tags, ps.tags)
		maps.Copy(out.manifests, ps.manifests)
	}
	return out
}

// set puts m at tag t.
func (ps *pkgState) set(t string, m *manifest) {
	ps.tags[t] = m.digest
	ps.manifests[m.digest] = m
}

// removeDigest drops every tag on d, as a registry does when the manifest
// is deleted.
func (ps *pkgState) removeDigest(d string) {
	for t, td := range ps.tags {
		if td == d {
			delete(ps.tags, t)
		}
	}
}

// seal drops the manifests no tag holds (a manifest is kept as long as a
// tag of the package holds it, and no longer) and computes sum.
func (ps *pkgState) seal(p string) {
	held := make(map[string]bool, len(ps.tags))
	for _, d := range ps.tags {
		held[d] = true
	}
	for d := range ps.manifests {
		if !held[d] {
			delete(ps.manifests, d)
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", p)
	for _, t := range slices.Sorted(maps.Keys(ps.tags)) {
		h.Write([]byte(t + "\x00" + ps.tags[t] + "\n"))
	}
	h.Sum(ps.sum[:0])
}

// publishedWorkspace is the workspace of the published tag t (vN): its
// manifest's, or the tag's name for a manifest of no workspace or of
// another number (copied by hand, or by scion repo mirror).
func (ps *pkgState) publishedWorkspace(t string) string {
	m := ps.manifests[ps.tags[t]]
	ws := m.ann(WorkspaceAnnotation)
	if n, _ := revisionNumber(t); ws == "" || m.ann(RevisionAnnotation) != strconv.Itoa(n) {
		return t
	}
	return ws
}

// movedTag is a published tag found on another manifest than the one the
// store read before.
type movedTag struct{ was, now string }

// setPackageLocked makes ps (nil or without tags: none) what the store
// knows of package p: it notes published tags that moved, and keeps Head
// and RefsVersion. ps is sealed and not changed afterwards.
func (s *Store) setPackageLocked(p string, ps *pkgState) {
	old := s.pkgs[p]
	s.noteMovedLocked(p, old, ps)
	before := s.head
	if old != nil {
		xorInto(&s.head, old.sum)
	}
	if ps == nil || len(ps.tags) == 0 {
		delete(s.pkgs, p)
	} else {
		ps.seal(p)
		xorInto(&s.head, ps.sum)
		s.pkgs[p] = ps
	}
	if s.head != before {
		s.version++
	}
}

// xorInto folds a package's sum into the store's: Head changes with any
// package's tags, and a write of one package updates it without reading
// the others'.
func xorInto(acc *[sha256.Size]byte, sum [sha256.Size]byte) {
	for i := range acc {
		acc[i] ^= sum[i]
	}
}

// noteMovedLocked records the published tags of p whose digest changed
// from what the store had read (a published revision is immutable: a
// registry that lets a tag move is told in the Repository's status), and
// forgets those no longer on the manifest they moved to (deleted, or
// moved back).
func (s *Store) noteMovedLocked(p string, old, now *pkgState) {
	for k, mv := range s.moved {
		pp, t, _ := strings.Cut(k, ":")
		if pp == p && (now == nil || now.tags[t] != mv.now) {
			delete(s.moved, k)
		}
	}
	if old == nil || now == nil {
		return
	}
	for t, was := range old.tags {
		if _, ok := revisionNumber(t); !ok {
			continue
		}
		if d, ok := now.tags[t]; ok && d != was {
			s.moved[p+":"+t] = movedTag{was: was, now: d}
		}
	}
}

// setBadLocked replaces the tags of p found not to be packages.
func (s *Store) setBadLocked(p string, bad map[string]string) {
	for k := range s.bad {
		if strings.HasPrefix(k, p+":") {
			delete(s.bad, k)
		}
	}
	maps.Copy(s.bad, bad)
}

// Head is a digest of every tag read at the last fetch and written since.
func (s *Store) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pkgs) == 0 {
		return ""
	}
	return "sha256:" + hex.EncodeToString(s.head[:])
}

// RefsVersion changes whenever a fetch or write changed a tag.
func (s *Store) RefsVersion() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Warnings lists what the store found wrong in the registry, each naming
// the artifact: tags that are not Scion packages (another media type, a
// manifest that cannot be read), which are not revisions; published
// revisions (vN) whose tag was moved to another manifest behind Scion's
// back, which are shown as the registry has them now. The Repository's
// Ready condition says them.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.bad)+len(s.moved))
	for ref, why := range s.bad {
		out = append(out, s.opts.Prefix+"/"+ref+": "+why)
	}
	for ref, mv := range s.moved {
		out = append(out, s.opts.Prefix+"/"+ref+": "+fmt.Sprintf("the published revision's tag moved from %s to %s behind Scion's back (published revisions are immutable; it is shown as the registry has it now)", mv.was, mv.now))
	}
	sort.Strings(out)
	return out
}

// Package layers read are kept by the layer's digest (a move through the
// lifecycle relabels a manifest over the same layer), up to
// maxContents of them and maxContentBytes of files.
const (
	maxContents     = 256
	maxContentBytes = 16 << 20
)

// maxLayers bounds the manifests whose layer a Store remembers after no
// tag holds them (about 150 bytes each).
const maxLayers = 1 << 16

// Blobs keeps the package layers, gzipped as the registry has them, that
// the Stores of a process wrote and read, up to a number of bytes: a
// package written is read back (a variant's draft, when its upstream
// moves) without pulling its layer, also after its Store dropped the
// files it parsed (Trim). The zero value keeps up to 64 MiB
// (DefaultBlobBytes); it is safe for concurrent use.
type Blobs struct {
	// MaxBytes bounds the bytes kept (DefaultBlobBytes when 0); read
	// once, on first use.
	MaxBytes int64

	once  sync.Once
	cache *lru.Cache[string, []byte]
}

// DefaultBlobBytes is what Blobs keeps unless told: the layers of about
// fifty thousand small packages (a variant's draft is one to two KiB).
const DefaultBlobBytes = 64 << 20

// maxBlobs bounds the layers Blobs keeps in number (each costs its key
// and a list element besides its bytes).
const maxBlobs = 1 << 17

func (b *Blobs) lru() *lru.Cache[string, []byte] {
	b.once.Do(func() {
		size := b.MaxBytes
		if size <= 0 {
			size = DefaultBlobBytes
		}
		b.cache = lru.New[string, []byte](maxBlobs, size)
	})
	return b.cache
}

// Size is the bytes kept.
func (b *Blobs) Size() int64 { return b.lru().Size() }

// keptLayer returns a layer of package p, if kept. A layer is kept by
// the credentials it was read with (as the caller identifies them, the
// catalog's key), its OCI repository and digest: a Store finds only
// what it could read itself.
func (s *Store) keptLayer(p, digest string) ([]byte, bool) {
	return s.blobs.lru().Get(s.blobKey(p, digest))
}

// keepLayer keeps a layer of package p, written or read.
func (s *Store) keepLayer(p, digest string, data []byte) {
	s.blobs.lru().Add(s.blobKey(p, digest), data, int64(len(data)))
}

func (s *Store) blobKey(p, digest string) string {
	return s.opts.CatalogKey + "\x00" + s.repository(p).String() + "@" + digest
}

// keepContents keeps the files of a layer read or written.
func (s *Store) keepContents(layer string, p *pkg.Package) {
	var size int64
	for _, data := range p.Files() {
		size += int64(len(data))
	}
	s.contents.Add(layer, p, size)
}

// Trim drops the packages kept read.
func (s *Store) Trim() bool { return s.contents.Clear() }
