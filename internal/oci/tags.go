package oci

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// This file is how a Store encodes the lifecycle in a package's OCI
// repository (docs/oci-layout.md): which tag holds a revision of which
// lifecycle, and the revision metadata in a manifest's annotations.

// Annotations of the revision metadata a Store writes on its manifests
// (docs/oci-layout.md). A published revision's manifest is also a plain
// package artifact: tools that know only PackageAnnotation and the layer
// read it.
const (
	// LifecycleAnnotation is Draft, Proposed or DeletionProposed; absent
	// on a published revision.
	LifecycleAnnotation = "dev.scion.revision.lifecycle"
	// WorkspaceAnnotation is the workspace the revision was drafted in.
	WorkspaceAnnotation = "dev.scion.revision.workspace"
	// RevisionAnnotation is a published revision's number.
	RevisionAnnotation = "dev.scion.revision.number"
	// PublishedByAnnotation and PublishedAtAnnotation (RFC 3339) say who
	// published a revision and when.
	PublishedByAnnotation = "dev.scion.revision.published-by"
	PublishedAtAnnotation = "dev.scion.revision.published-at"
	// TrailersAnnotation holds the revision's metadata as JSON: the keys
	// and values Scion writes as commit trailers in git.
	TrailersAnnotation = "dev.scion.revision.trailers"
	// MessageAnnotation, AuthorAnnotation and WrittenAtAnnotation
	// describe the last write of a draft or proposal.
	MessageAnnotation   = "dev.scion.revision.message"
	AuthorAnnotation    = "dev.scion.revision.author"
	WrittenAtAnnotation = "dev.scion.revision.written-at"
)

// revisionAnnotationPrefix starts every annotation of the revision
// metadata.
const revisionAnnotationPrefix = "dev.scion.revision."

// Tags of the lifecycle in a package's OCI repository: published
// revisions are vN; the others are named after the workspace or revision.
const (
	draftTagPrefix            = "draft."
	proposedTagPrefix         = "proposed."
	deletionProposedTagPrefix = "deletion-proposed."
	// retiredTagPrefix marks a deleted published revision (retired.vN):
	// an empty package annotated with its workspace, so that neither its
	// number nor its workspace is given to other content.
	retiredTagPrefix = "retired."
)

// LatestTag is kept on the newest published revision of each package, as
// a git repository's branch holds it: a deployer following it (Flux's
// OCIRepository with ref.tag: latest) deploys what Scion publishes. Only
// Scion moves it.
const LatestTag = "latest"

// manifest is what a Store keeps of one manifest.
type manifest struct {
	raw    []byte
	digest string
	m      v1.Manifest
}

func (m *manifest) ann(key string) string { return m.m.Annotations[key] }

// layer is the digest of the manifest's one layer: the package's files.
func (m *manifest) layer() string { return m.m.Layers[0].Digest.String() }

func revisionTagName(n int) string { return "v" + strconv.Itoa(n) }

// revisionNumber reads vN.
func revisionNumber(tag string) (int, bool) {
	m := revisionTag.FindStringSubmatch(tag)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// retiredNumber reads retired.vN.
func retiredNumber(tag string) (int, bool) {
	rest, ok := strings.CutPrefix(tag, retiredTagPrefix)
	if !ok {
		return 0, false
	}
	return revisionNumber(rest)
}

// immutableTag says whether a tag, once there, always holds the same
// manifest: a published revision (vN) or a retired one (retired.vN). A
// read of the tags that trusts them does not read them again.
func immutableTag(t string) bool {
	_, published := revisionNumber(t)
	_, retired := retiredNumber(t)
	return published || retired
}

func isLifecycleTag(t string) bool {
	return strings.HasPrefix(t, draftTagPrefix) || strings.HasPrefix(t, proposedTagPrefix) || strings.HasPrefix(t, deletionProposedTagPrefix) || strings.HasPrefix(t, retiredTagPrefix)
}

// packageRevisions reads a package's revisions from its tags. What a
// write that died half-way leaves (a draft beside its proposal, a
// proposal beside its published revision) shows as the later stage only.
func packageRevisions(p string, ps *pkgState) []store.Revision {
	var out []store.Revision
	published := map[string]bool{} // workspaces published
	latest := ps.latest()
	for t, d := range ps.tags {
		n, ok := revisionNumber(t)
		if !ok {
			continue
		}
		ws := ps.publishedWorkspace(t)
		published[ws] = true
		out = append(out, publishedRevision(p, ps, t, d, n, ws, n == latest))
	}
	for t, d := range ps.tags {
		ws, lc, ok := workspaceTag(t)
		if !ok || published[ws] || store.ValidateWorkspace(ws) != nil {
			continue
		}
		if _, proposed := ps.tags[proposedTagPrefix+ws]; proposed && lc == porchv1alpha1.LifecycleDraft {
			continue
		}
		out = append(out, store.Revision{Package: p, Workspace: ws, Lifecycle: lc, Commit: d, Trailers: trailersOf(ps.manifests[d])})
	}
	return out
}

// latest is the package's highest published revision number (0: none).
func (ps *pkgState) latest() int {
	n := 0
	for t := range ps.tags {
		if m, ok := revisionNumber(t); ok {
			n = max(n, m)
		}
	}
	return n
}

// workspaceTag reads draft.<ws> and proposed.<ws>.
func workspaceTag(t string) (string, porchv1alpha1.Lifecycle, bool) {
	if ws, ok := strings.CutPrefix(t, proposedTagPrefix); ok {
		return ws, porchv1alpha1.LifecycleProposed, true
	}
	if ws, ok := strings.CutPrefix(t, draftTagPrefix); ok {
		return ws, porchv1alpha1.LifecycleDraft, true
	}
	return "", "", false
}

// publishedRevision is the revision the published tag t (vN) holds.
func publishedRevision(p string, ps *pkgState, t, d string, n int, ws string, latest bool) store.Revision {
	m := ps.manifests[d]
	lc := porchv1alpha1.LifecyclePublished
	if _, ok := ps.tags[deletionProposedTagPrefix+t]; ok {
		lc = porchv1alpha1.LifecycleDeletionProposed
	}
	at, _ := time.Parse(time.RFC3339, m.ann(PublishedAtAnnotation))
	return store.Revision{Package: p, Workspace: ws, Revision: n, Lifecycle: lc, Commit: d, Latest: latest,
		Trailers: trailersOf(m), PublishedBy: m.ann(PublishedByAnnotation), PublishedAt: at}
}

func trailersOf(m *manifest) store.Trailers {
	t := store.Trailers{}
	if raw := m.ann(TrailersAnnotation); raw != "" {
		_ = json.Unmarshal([]byte(raw), &t)
	}
	return t
}

func marshalTrailers(t store.Trailers) string {
	data, _ := json.Marshal(t)
	return string(data)
}

// relabel builds a manifest over the blobs of an existing one with other
// revision annotations: a move through the lifecycle uploads no blob.
func relabel(from *manifest, ann map[string]string) (*artifact, error) {
	m := from.m
	m.Annotations = map[string]string{}
	for k, v := range from.m.Annotations {
		if !strings.HasPrefix(k, revisionAnnotationPrefix) {
			m.Annotations[k] = v
		}
	}
	for k, v := range ann {
		if v != "" {
			m.Annotations[k] = v
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &artifact{manifest: raw, digest: h.String(), parsed: m}, nil
}

// keep returns the revision annotations of m with some replaced.
func keep(m *manifest, set map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m.m.Annotations {
		if strings.HasPrefix(k, revisionAnnotationPrefix) {
			out[k] = v
		}
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}
