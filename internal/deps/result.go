package deps

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Action is what a plan does with a package.
type Action string

// The actions of a plan.
const (
	Install   Action = "install"
	Upgrade   Action = "upgrade"
	Downgrade Action = "downgrade"
	Keep      Action = "keep"
)

// Step is one package of a plan.
type Step struct {
	Package string `json:"package"`
	Version string `json:"version"`
	Action  Action `json:"action"`
	// From is the installed version, where the version moves.
	From string `json:"from,omitempty"`
}

// Node says why a package is in the plan; its children are what it
// requires.
type Node struct {
	Step
	// Why is the reason it is here, as seen from its parent: "requested",
	// "installed in web", "required in range >=1.0.0", "provides
	// example.com/v1/Widget".
	Why string
	// Seen is true when the package was shown already, higher up.
	Seen     bool
	Children []*Node
}

// Result is a solution.
type Result struct {
	// Plan lists every package the solution involves, requested or
	// reached, installed ones left as they are included, by package then
	// version.
	Plan []Step
	// Providers maps every kind the solution's packages provide
	// (apiVersion/kind) to its package: the repository's lock.
	Providers map[string]string
	// Why is the tree of reasons: the requests, then the installed
	// packages not reached from them.
	Why []*Node
	// Stats is the work the search did.
	Stats Stats
}

// Stats count a resolution's work.
type Stats struct {
	// Steps is what MaxSteps bounds: facts checked and conflicts resolved.
	Steps int
	// Decisions are the candidates tried; Conflicts the dead ends met.
	Decisions, Conflicts int
}

func (s *solver) chosen(v *variable) (cand, bool) {
	if v == nil || !v.decided {
		return cand{}, false
	}
	return v.cands[v.assigned.set.first()], true
}

func (s *solver) step0(v *variable) Step {
	c, _ := s.chosen(v)
	st := Step{Package: c.rev.Package, Version: c.rev.VersionString(), Action: Install}
	switch in := s.installed[c.rev.Package]; {
	case c.installed:
		st.Action = Keep
	case in != nil && in.Revision.Version != nil && v == s.vars[c.rev.Package]:
		st.From = in.Revision.VersionString()
		st.Action = Upgrade
		if c.rev.Version.LessThan(in.Revision.Version) {
			st.Action = Downgrade
		}
	}
	return st
}

func (s *solver) result() *Result {
	res := &Result{Providers: map[string]string{}, Stats: Stats{Steps: s.steps, Decisions: s.decisions, Conflicts: s.conflicts}}
	seen := map[string]bool{}
	for _, v := range s.order {
		c, ok := s.chosen(v)
		if !ok || v.kind != packageVar {
			continue
		}
		st := s.step0(v)
		if key := st.Package + "\x00" + st.Version; !seen[key] {
			seen[key] = true
			res.Plan = append(res.Plan, st)
		}
		for _, g := range c.rev.Decl.Provides {
			res.Providers[g] = c.rev.Package
		}
	}
	sort.Slice(res.Plan, func(i, j int) bool {
		a, b := res.Plan[i], res.Plan[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		return a.Version < b.Version
	})
	shown := map[*variable]bool{}
	for _, r := range s.p.Requests {
		why := "requested"
		if r.Range != "" {
			why += " in range " + r.Range
		}
		res.Why = append(res.Why, s.node(s.targetOf(r.Package, r.Range), why, shown))
	}
	for _, in := range s.p.Installed {
		v := s.vars[in.Revision.Package+"#"+in.Dir]
		if v == nil {
			v = s.vars[in.Revision.Package]
		}
		if !shown[v] {
			res.Why = append(res.Why, s.node(v, "installed in "+in.Dir, shown))
		}
	}
	return res
}

func (s *solver) node(v *variable, why string, shown map[*variable]bool) *Node {
	n := &Node{Step: s.step0(v), Why: why}
	if shown[v] {
		n.Seen = true
		return n
	}
	shown[v] = true
	c, _ := s.chosen(v)
	for i := range c.rev.Decl.Requires {
		n.Children = append(n.Children, s.reached(c.rev, &c.rev.Decl.Requires[i], "", shown)...)
	}
	return n
}

// reached returns the nodes of what a chosen revision's requirement
// brought in; optional requirements bring nothing.
func (s *solver) reached(owner *Revision, req *Requirement, prefix string, shown map[*variable]bool) []*Node {
	switch {
	case req.Optional:
		return nil
	case req.GVK != "":
		c, ok := s.chosen(s.vars["kind:"+req.GVK])
		if !ok {
			return nil
		}
		return []*Node{s.node(s.vars[c.provider], prefix+"provides "+req.GVK, shown)}
	case req.AnyOf != nil:
		c, ok := s.chosen(s.vars[anyOfKey(owner, req)])
		if !ok {
			return nil
		}
		return s.reached(owner, c.alt, prefix+"for "+req.String()+": ", shown)
	default:
		req = s.effective(req)
		why := "required"
		if req.RangeText != "" {
			why += " in range " + req.RangeText
		}
		return []*Node{s.node(s.targetOf(req.Package, req.RangeText), prefix+why, shown)}
	}
}

// WriteText writes a solution as a tree of why each package is there,
// then the kinds and their providers.
func WriteText(w io.Writer, res *Result) error {
	var b strings.Builder
	var walk func(n *Node, indent, branch string)
	walk = func(n *Node, indent, branch string) {
		action := string(n.Action)
		if n.From != "" {
			action += " from " + n.From
		}
		line := fmt.Sprintf("%s%s%s %s (%s): %s", indent, branch, n.Package, n.Version, action, n.Why)
		if n.Seen {
			line += ", shown above"
		}
		b.WriteString(line + "\n")
		child := indent
		switch branch {
		case "├── ":
			child += "│   "
		case "└── ":
			child += "    "
		}
		for i, c := range n.Children {
			br := "├── "
			if i == len(n.Children)-1 {
				br = "└── "
			}
			walk(c, child, br)
		}
	}
	for _, n := range res.Why {
		walk(n, "", "")
	}
	if len(res.Providers) > 0 {
		b.WriteString("\nkinds:\n")
		kinds := make([]string, 0, len(res.Providers))
		for k := range res.Providers {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(&b, "  %s: %s\n", k, res.Providers[k])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
