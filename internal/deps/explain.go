package deps

import (
	"fmt"
	"strings"
)

// explain turns the fact that ruled out the root into sentences: the
// external facts it was derived from, in the order the derivation uses
// them (requirements of one package on the same thing grouped), then what
// follows for the package where they collide.
func explain(failure *incompat) string {
	var leaves []*incompat
	var pivots []*variable
	seen := map[*incompat]bool{}
	var walk func(in *incompat)
	walk = func(in *incompat) {
		if seen[in] {
			return
		}
		seen[in] = true
		if in.kind != derived {
			leaves = append(leaves, in)
			return
		}
		walk(in.left)
		walk(in.right)
		if in.pivot.kind == packageVar {
			pivots = append(pivots, in.pivot)
		}
	}
	walk(failure)

	leaves = orderLeaves(leaves)
	var sentences []string
	for _, in := range leaves {
		if s := leafSentence(in); s != "" {
			sentences = append(sentences, s)
		}
	}
	if c := conclusion(leaves, pivots); c != "" {
		sentences = append(sentences, c)
	}
	return strings.Join(sentences, "; ")
}

// orderLeaves puts what was asked for and what is installed first, then
// the rest in the order the derivation used it; a request or an
// installation that a later sentence names anyway ("app 2.1.0 requires",
// "web 1.3.0 (installed) requires") is left out.
func orderLeaves(leaves []*incompat) []*incompat {
	named := map[string]bool{}
	for _, in := range leaves {
		if in.kind == causeDependency || in.kind == causeUnusable {
			key := in.rev.Package
			if in.ownerInstalled {
				key += "\x00installed"
			}
			named[key] = true
		}
	}
	var root, rest []*incompat
	for _, in := range leaves {
		switch {
		case in.kind == causeRequest && in.request.Range == "" && !in.targetEmpty() && named[in.request.Package]:
		case in.kind == causeInstalled && !in.downgrade && named[in.rev.Package+"\x00installed"]:
		case in.kind == causeRequest || in.kind == causeInstalled:
			root = append(root, in)
		default:
			rest = append(rest, in)
		}
	}
	return append(root, rest...)
}

func (in *incompat) targetEmpty() bool {
	return in.target != nil && in.targetSet.isEmpty()
}

func leafSentence(in *incompat) string {
	switch in.kind {
	case causeRequest:
		s := in.request.Package + " is requested"
		if in.request.Range != "" {
			s = in.request.Package + " " + in.request.Range + " is requested"
		}
		if in.targetEmpty() {
			s += ", but " + noMatch(in.target, in.req)
		}
		return s
	case causeInstalled:
		s := in.rev.Label() + " is installed"
		if in.downgrade {
			s += " (a downgrade is not allowed)"
		}
		return s
	case causeDependency:
		return dependencySentence(in)
	case causeAlternative:
		if in.targetEmpty() {
			return fmt.Sprintf("the alternative %s of %s: %s", in.req, in.rev.Package, noMatch(in.target, in.req))
		}
		return ""
	case causeProvider:
		if in.targetEmpty() {
			return fmt.Sprintf("no revision of %s that may be chosen provides kind %s", in.target.name, in.gvk)
		}
		return fmt.Sprintf("kind %s is provided by %s %s", in.gvk, in.target.name, versionList(in.target, in.targetSet))
	case causeLock:
		return fmt.Sprintf("%s %s and %s %s both provide kind %s, and a kind has one provider per repository",
			in.self.name, versionList(in.self, in.selfSet), in.other.name, versionList(in.other, in.targetSet), in.gvk)
	case causeUnusable:
		return fmt.Sprintf("%s cannot be used: %v", in.rev.Label(), in.rev.Err)
	}
	return ""
}

// dependencySentence is "app 2.0.0, 2.1.0 require lib >=2.0.0": every
// revision the fact is about.
func dependencySentence(in *incompat) string {
	var vs []string
	for i := len(in.self.cands) - 1; i >= 0; i-- {
		if in.selfSet.has(i) && in.self.cands[i].rev.Version != nil {
			vs = append(vs, in.self.cands[i].rev.Version.String())
		}
	}
	who := in.rev.Package
	if len(vs) > 0 {
		who += " " + strings.Join(vs, ", ")
	}
	if in.ownerInstalled {
		who += " (installed)"
	}
	verb := "requires"
	if len(vs) > 1 {
		verb = "require"
	}
	s := fmt.Sprintf("%s %s %s", who, verb, in.req)
	if in.req.Optional {
		s += " when it is present (optional)"
	}
	if in.targetEmpty() {
		s += ", but " + noMatch(in.target, in.req)
	}
	return s
}

// noMatch says why nothing satisfies a requirement.
func noMatch(target *variable, req *Requirement) string {
	switch {
	case target.kind == gvkVar:
		return "no package provides it"
	case len(target.cands) == 0:
		return "no upstream repository has a package " + target.name
	default:
		return fmt.Sprintf("no version of %s matches %s (available: %s)", target.name, req.RangeText, available(target))
	}
}

func available(v *variable) string {
	vs := make([]string, 0, len(v.cands))
	for i := len(v.cands) - 1; i >= 0; i-- {
		vs = append(vs, v.cands[i].rev.VersionString())
	}
	return strings.Join(vs, ", ")
}

// versionList is "1.0.0", or "(1.0.0, 1.1.0)": the candidates of v in
// set, lowest first.
func versionList(v *variable, set bitset) string {
	var vs []string
	for i := len(v.cands) - 1; i >= 0; i-- {
		if set.has(i) {
			vs = append(vs, v.cands[i].rev.VersionString())
		}
	}
	if len(vs) == 1 {
		return vs[0]
	}
	return "(" + strings.Join(vs, ", ") + ")"
}

// conclusion names the package where the facts collide: the first one
// the derivation resolved that two facts constrain, else the first one it
// resolved.
func conclusion(leaves []*incompat, pivots []*variable) string {
	if len(pivots) == 0 {
		return ""
	}
	count := func(p *variable) (constraints int, own bool) {
		for _, in := range leaves {
			if in.target == p && in.kind != causeProvider {
				constraints++
			}
			if in.rev != nil && in.rev.Package == p.name && in.kind != causeInstalled && in.kind != causeLock {
				own = true
			}
		}
		return constraints, own
	}
	p := pivots[0]
	for _, q := range pivots {
		if n, own := count(q); n >= 2 && !own {
			p = q
			break
		}
	}
	constraints, own := count(p)
	switch {
	case len(p.cands) == 0:
		return ""
	case own || constraints < 2:
		return fmt.Sprintf("so no version of %s can be chosen (available: %s)", p.name, available(p))
	case constraints == 2:
		return fmt.Sprintf("no version of %s satisfies both (available: %s)", p.name, available(p))
	default:
		return fmt.Sprintf("no version of %s satisfies all of these (available: %s)", p.name, available(p))
	}
}
