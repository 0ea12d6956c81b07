package packagevariant

import (
	"testing"

	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

func TestUpstreamNotFoundMessage(t *testing.T) {
	published := func(n int) store.Revision {
		return store.Revision{Package: "app", Revision: n, Lifecycle: porchv1alpha1.LifecyclePublished}
	}
	draft := store.Revision{Package: "app", Workspace: "ws-2", Lifecycle: porchv1alpha1.LifecycleDraft}
	for _, tc := range []struct {
		upstream configv1alpha1.Upstream
		revs     []store.Revision
		want     string
	}{
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "7"}, []store.Revision{published(3), published(1), draft},
			"spec.upstream.revision: Repository catalog has no revision 7 of package app (published revisions: 1, 3)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "v7"}, []store.Revision{draft},
			"spec.upstream.revision: Repository catalog has no revision v7 of package app (it has no published revision yet)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"}, nil,
			"spec.upstream.revision: Repository catalog has no revision 1 of package app (the package is not in that repository)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", WorkspaceName: "ws-9"}, []store.Revision{published(1), draft},
			"spec.upstream.workspaceName: Repository catalog has no workspace ws-9 of package app (unpublished workspaces: ws-2)"},
	} {
		NewWithT(t).Expect(upstreamNotFoundMessage(&tc.upstream, tc.revs)).To(Equal(tc.want))
	}
}
