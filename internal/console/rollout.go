package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/tree"
)

// maxListed bounds the targets a rollout's page lists with their reasons
// (the grid shows every target).
const maxListed = 200

type waveGrid struct {
	configv1alpha1.WaveStatus
	Targets []tree.Target
}

type rolloutData struct {
	rolloutRow
	Health   string
	Waves    []waveGrid
	NotWell  []notWell
	MoreNot  int
	Approval string
}

// notWell is a target not healthy, with its state in its wave.
type notWell struct {
	tree.Target
	State string
}

// rolloutPage: one rollout as a grid, a row per wave and a square per
// target (published and healthy, published and not healthy yet, failed,
// not published), then the targets that are not healthy with why.
func (s *Server) rolloutPage(r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return nil, fmt.Errorf("name a rollout: ?name=ROLLOUT")
	}
	ro := &configv1alpha1.PackageRollout{}
	if err := s.opts.Client.Get(r.Context(), types.NamespacedName{Namespace: s.opts.Namespace, Name: name}, ro); err != nil {
		return nil, fmt.Errorf("reading PackageRollout %s: %w", name, err)
	}
	revs, err := s.allRevisions(r.Context())
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*porchv1alpha1.PackageRevision, len(revs))
	for _, pr := range revs {
		byName[pr.Name] = pr
	}
	d := &rolloutData{rolloutRow: rolloutOf(ro), Approval: string(ro.Spec.Approval), Health: "each target's Ready condition"}
	if h := ro.Spec.Health; h != nil && h.ConditionType != "" {
		d.Health = "each target's " + h.ConditionType + " condition"
	} else if h != nil && h.Expr != "" {
		d.Health = "an expression over " + h.Object.Kind + " objects"
	} else if h != nil && h.Engine != "" {
		d.Health = "the " + string(h.Engine) + " Kustomizations of each target's cluster"
	}
	repos := map[string]*configv1alpha1.Repository{}
	for _, w := range ro.Status.Waves {
		g := waveGrid{WaveStatus: w}
		for _, n := range w.Revisions {
			t := tree.Target{Name: n, Status: "Unknown", Reason: "NotFound", Message: "the revision no longer exists"}
			if pr := byName[n]; pr != nil {
				repo, err := s.repository(r.Context(), repos, pr.Spec.Repository)
				if err != nil {
					return nil, err
				}
				t = tree.RolloutTarget(pr, ro.Spec.Health, repo)
			}
			g.Targets = append(g.Targets, t)
			if t.Published && t.Status == "True" || w.State == configv1alpha1.WavePending {
				continue
			}
			if len(d.NotWell) < maxListed {
				d.NotWell = append(d.NotWell, notWell{Target: t, State: tree.TargetState(t, w.State)})
			} else {
				d.MoreNot++
			}
		}
		d.Waves = append(d.Waves, g)
	}
	return d, nil
}

// repository reads a Repository once per page (nil when it does not
// exist).
func (s *Server) repository(ctx context.Context, seen map[string]*configv1alpha1.Repository, name string) (*configv1alpha1.Repository, error) {
	if r, ok := seen[name]; ok {
		return r, nil
	}
	r := &configv1alpha1.Repository{}
	if err := s.opts.Client.Get(ctx, types.NamespacedName{Namespace: s.opts.Namespace, Name: name}, r); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Repository %s: %w", name, err)
		}
		r = nil
	}
	seen[name] = r
	return r, nil
}

// rolloutOf is what the rollouts page shows of ro.
func rolloutOf(ro *configv1alpha1.PackageRollout) rolloutRow {
	row := rolloutRow{Name: ro.Name, Ready: "Unknown", CurrentWave: ro.Status.CurrentWave, Blocked: ro.Status.Blocked,
		Paused: ro.Spec.Paused, Aborted: ro.Spec.Aborted, Manual: ro.Spec.Approval == configv1alpha1.RolloutApprovalManual,
		Waves: ro.Status.Waves, State: tree.RolloutState(ro)}
	row.Finished = tree.RolloutFinished(row.State)
	if c := meta.FindStatusCondition(ro.Status.Conditions, configv1alpha1.ReadyCondition); c != nil {
		row.Ready, row.Message = string(c.Status), c.Message
	}
	return row
}

// targetTitle is a target's square's tooltip.
func targetTitle(t tree.Target) string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s (repository %s", t.Name, t.Repository)
	if t.Revision > 0 {
		fmt.Fprintf(b, ", revision %d", t.Revision)
	}
	if t.Published {
		b.WriteString(", published")
	} else {
		b.WriteString(", not published")
	}
	fmt.Fprintf(b, ", healthy: %s)", t.Status)
	if t.Message != "" {
		fmt.Fprintf(b, ": %s %s", t.Reason, t.Message)
	}
	if t.Deployed != nil {
		fmt.Fprintf(b, "; %s", tree.DeployedSummary(t.Deployed))
	}
	return b.String()
}
