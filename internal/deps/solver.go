package deps

import (
	"errors"
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// The search is conflict-driven, in the manner of PubGrub: candidates are
// chosen one variable at a time, every consequence of a choice is derived
// at once (unit propagation), and a conflict is resolved into a new fact
// (an incompatibility) that names its causes, after which the search jumps
// back to where that fact first bites. The facts left when the search
// fails form the explanation. The variables are the packages, plus one
// per kind that is required (its candidates are the packages that provide
// it) and one per anyOf requirement (its candidates are the alternatives).

// DefaultMaxSteps bounds a resolution; past it, Resolve stops with
// ErrTooComplex.
const DefaultMaxSteps = 20000000

// ErrTooComplex is returned when a resolution takes more steps than its
// bound.
var ErrTooComplex = errors.New("the dependency graph is too complex to resolve within the step limit")

// Problem is one resolution: what to install in one deployment repository.
type Problem struct {
	// Catalog is every published revision of the upstream packages.
	Catalog *Catalog
	// Installed is what the deployment repository holds.
	Installed []Installed
	// Requests are the packages asked for.
	Requests []Request
	// AllowDowngrade lets an installed package move to a lower version.
	AllowDowngrade bool
	// Prerelease lets pre-release versions be chosen even where a range
	// does not name one.
	Prerelease bool
	// MaxSteps bounds the search; 0 means DefaultMaxSteps.
	MaxSteps int
	// Overrides replace, by package, the range every declaration asks
	// for that package (in requirements and alternatives alike): a
	// range ("" for any) the deployer chooses instead of the packages'
	// authors. Requests keep their own ranges.
	Overrides map[string]string
}

// UnsatisfiableError is a resolution that has no solution, with the
// reason as a person reads it.
type UnsatisfiableError struct {
	// Explanation is the chain of facts that cannot all hold.
	Explanation string
}

func (e *UnsatisfiableError) Error() string { return e.Explanation }

type varKind int

const (
	rootVar varKind = iota
	packageVar
	gvkVar
	anyOfVar
)

// cand is one candidate of a variable.
type cand struct {
	rev       *Revision    // packageVar
	installed bool         // packageVar: the installed revision
	alt       *Requirement // anyOfVar
	provider  string       // gvkVar: a package providing the kind
}

type variable struct {
	key   string
	kind  varKind
	name  string // package name (packageVar), apiVersion/kind (gvkVar)
	cands []cand
	// owner is the revision whose anyOf requirement an anyOfVar stands
	// for.
	owner *Revision

	incompats []*incompat
	added     map[int]bool // candidates whose consequences were added
	// reqGroups: the candidates stating each requirement (sameRequirement)
	reqGroups map[string]bitset
	// matched: the candidates matching each range (match), by its text
	matched map[string]bitset

	assigned term // the intersection of the assignments so far
	decided  bool
}

// causeKind is why an incompatibility holds.
type causeKind int

const (
	derived causeKind = iota
	causeRoot
	causeRequest
	causeInstalled
	causeDependency
	causeAlternative
	causeProvider
	causeLock
	causeUnusable
)

// incompat is a set of terms that cannot all hold.
type incompat struct {
	terms []term
	kind  causeKind

	// external causes
	rev       *Revision    // the revision that requires, is installed, provides, is unusable
	req       *Requirement // the requirement (dependency, alternative)
	request   Request
	self      *variable // the requiring (dependency) or providing (lock) variable
	selfSet   bitset    // its candidates the fact is about
	target    *variable // what a dependency points at
	targetSet bitset    // the candidates of target that satisfy
	gvk       string    // lock, provider
	other     *variable // lock: the other provider
	downgrade bool      // installed: lower versions are refused
	// ownerInstalled: the requiring revision is the installed one
	ownerInstalled bool

	// derived
	left, right *incompat
	pivot       *variable
}

type assignment struct {
	t        term
	level    int
	cause    *incompat // nil for a decision
	decision bool
}

type solver struct {
	p        Problem
	vars     map[string]*variable
	order    []*variable
	root     *variable
	asg      []assignment
	level    int
	steps    int
	maxSteps int
	// decisions and conflicts count the search's work (Result.Stats).
	decisions, conflicts int

	overrides map[string]*Requirement // Problem.Overrides, parsed

	installed map[string]*Installed // onePerRepository packages by name
	instances map[string][]*Installed
	preNamed  map[string]bool     // packages a requested or installed range names a pre-release of
	facts     map[string]bool     // requirement and lock facts added, by key
	providers map[string][]string // providersOf, by kind
}

// Resolve solves one deployment repository's dependencies: the requests,
// everything the installed packages and the chosen revisions require,
// transitively, at most one version of a package (unless it allows more)
// and one provider per kind. It prefers what is installed, then the
// highest version allowed, and refuses a downgrade unless allowed. The
// error is an *UnsatisfiableError with the explanation, ErrTooComplex, or
// a problem with the input.
func Resolve(p Problem) (*Result, error) {
	if p.Catalog == nil {
		p.Catalog = NewCatalog()
	}
	s := &solver{p: p, vars: map[string]*variable{}, installed: map[string]*Installed{}, instances: map[string][]*Installed{}, facts: map[string]bool{}, providers: map[string][]string{},
		maxSteps: p.MaxSteps}
	if s.maxSteps <= 0 {
		s.maxSteps = DefaultMaxSteps
	}
	if err := s.indexInstalled(); err != nil {
		return nil, err
	}
	if err := s.parseOverrides(); err != nil {
		return nil, err
	}
	s.root = s.variable("", rootVar, "", func() []cand { return []cand{{}} })
	if err := s.addRootFacts(); err != nil {
		return nil, err
	}
	s.decide(s.root, 0)
	next := s.root
	for {
		if err := s.propagate(next); err != nil {
			return nil, err
		}
		v, ok := s.choose()
		if !ok {
			return s.result(), nil
		}
		next = v
	}
}

// parseOverrides reads Problem.Overrides; an override reads as a
// requirement does, and its range shows in explanations as
// "(overridden)".
func (s *solver) parseOverrides() error {
	for name, rng := range s.p.Overrides {
		req, err := NewPackageRequirement(name, rng)
		if err != nil {
			return fmt.Errorf("override of %s: %w", name, err)
		}
		if req.RangeText != "" {
			req.RangeText += " (overridden)"
		} else {
			req.RangeText = "(any version, overridden)"
		}
		if s.overrides == nil {
			s.overrides = map[string]*Requirement{}
		}
		s.overrides[name] = &req
	}
	return nil
}

// effective is a package requirement with its range overridden, when
// Problem.Overrides names the package.
func (s *solver) effective(req *Requirement) *Requirement {
	o := s.overrides[req.Package]
	if o == nil || req.Package == "" {
		return req
	}
	return &Requirement{Package: req.Package, Range: o.Range, RangeText: o.RangeText, Optional: req.Optional}
}

// sameVersion says whether two versions (nil: unversioned) are equal.
func sameVersion(a, b *semver.Version) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(b)
}

func (s *solver) indexInstalled() error {
	for i := range s.p.Installed {
		in := &s.p.Installed[i]
		r := in.Revision
		if r == nil {
			return fmt.Errorf("installed package in %s has no revision", in.Dir)
		}
		if r.Err != nil {
			// A package that cannot be read (a declaration that does not
			// parse, a file no checkout holds) constrains nothing: its
			// own revision says why, and one bad package does not stop
			// every other package of its repository.
			continue
		}
		if s.typeOf(r.Package) == configv1alpha1.NoRestrictions {
			s.instances[r.Package] = append(s.instances[r.Package], in)
			continue
		}
		if o := s.installed[r.Package]; o != nil {
			if sameVersion(o.Revision.Version, r.Version) || !declared(o.Revision) && !declared(r) {
				// Another copy of the same version (two tenants of one
				// blueprint): one version in the repository, as
				// onePerRepository asks; the first copy stands for both.
				// Copies of a package that does not declare itself may
				// differ (an upgrade under way): the first stands too.
				continue
			}
			return fmt.Errorf("package %s is installed twice at different versions (%s at %s, %s at %s), and it allows one version per repository",
				r.Package, o.Dir, o.Revision.VersionString(), in.Dir, r.VersionString())
		}
		s.installed[r.Package] = in
	}
	return nil
}

// declared says whether a revision is held to its installation type.
func declared(r *Revision) bool { return r.Decl != nil && r.Decl.Declared }

// typeOf is the installation type of a package, from the catalog or, for a
// package only installed, from what is installed.
func (s *solver) typeOf(name string) configv1alpha1.InstallationType {
	s.p.Catalog.index()
	if t, ok := s.p.Catalog.types[name]; ok {
		return t
	}
	var revs []*Revision
	for _, in := range s.p.Installed {
		if in.Revision.Package == name {
			revs = append(revs, in.Revision)
		}
	}
	return installationType(revs)
}

// variable returns the variable of key, creating it with the candidates
// that cands returns.
func (s *solver) variable(key string, kind varKind, name string, cands func() []cand) *variable {
	if v := s.vars[key]; v != nil {
		return v
	}
	v := &variable{key: key, kind: kind, name: name, cands: cands(), added: map[int]bool{}}
	v.assigned = term{v: v, set: newBitset(len(v.cands))}
	s.vars[key] = v
	s.order = append(s.order, v)
	// A revision that cannot be read is never chosen.
	for i, c := range v.cands {
		if c.rev != nil && c.rev.Err != nil {
			set := newBitset(len(v.cands))
			set.add(i)
			s.add(&incompat{terms: []term{{v, true, set}}, kind: causeUnusable, rev: c.rev})
		}
	}
	return v
}

// packageVar is the variable of a package that allows one copy: its
// catalog revisions, highest first, with the installed revision in place
// of (or added to) the catalog's of the same version.
func (s *solver) packageVar(name string) *variable {
	return s.variable(name, packageVar, name, func() []cand {
		return s.packageCands(name, s.installed[name])
	})
}

func (s *solver) packageCands(name string, in *Installed) []cand {
	var out []cand
	placed := false
	for _, r := range s.p.Catalog.Revisions(name) {
		if in != nil && in.Revision.Version != nil && in.Revision.Version.Equal(r.Version) {
			out = append(out, cand{rev: in.Revision, installed: true})
			placed = true
			continue
		}
		out = append(out, cand{rev: r})
	}
	if in != nil && !placed {
		out = append(out, cand{rev: in.Revision, installed: true})
		sort.SliceStable(out, func(i, j int) bool { return versionAbove(out[i].rev.Version, out[j].rev.Version) })
	}
	return out
}

// versionAbove orders versions highest first, unversioned last.
func versionAbove(a, b *semver.Version) bool {
	if a == nil || b == nil {
		return b == nil && a != nil
	}
	return a.GreaterThan(b)
}

// targetOf returns the variable a package requirement points at: the
// package's own for one that allows one copy, else one copy of it per
// distinct range.
func (s *solver) targetOf(name, rangeText string) *variable {
	if s.typeOf(name) != configv1alpha1.NoRestrictions {
		return s.packageVar(name)
	}
	return s.variable(name+"@"+rangeText, packageVar, name, func() []cand {
		out := s.packageCands(name, nil)
		// An installed copy of a version is preferred to a new one.
		for i := range out {
			for _, in := range s.instances[name] {
				if in.Revision.Version != nil && in.Revision.Version.Equal(out[i].rev.Version) {
					out[i] = cand{rev: in.Revision, installed: true}
				}
			}
		}
		return out
	})
}

// match returns the candidates of a package variable that satisfy a range
// (nil: any). A pre-release is a candidate only when installed or where
// preOK allows it, and is then compared like any version; an unversioned
// installed package matches only "any".
func (s *solver) match(v *variable, c *semver.Constraints) bitset {
	key := ""
	if c != nil {
		key = c.String()
	}
	if set, ok := v.matched[key]; ok {
		return set
	}
	set := newBitset(len(v.cands))
	if v.matched == nil {
		v.matched = map[string]bitset{}
	}
	v.matched[key] = set
	for i, cd := range v.cands {
		ver := cd.rev.Version
		switch {
		case ver == nil:
			if c == nil {
				set.add(i)
			}
		case ver.Prerelease() != "" && !cd.installed && !s.preOK(cd.rev.Package):
		case c == nil || s.p.Catalog.check(c, key, ver):
			set.add(i)
		}
	}
	return set
}

// preOK says whether pre-releases of a package may be chosen at all: with
// the opt-in, or when some range on it (requested, in the catalog or in an
// installed package) names a pre-release. The ranges in play still decide
// which.
func (s *solver) preOK(name string) bool {
	if s.p.Prerelease || s.p.Catalog.namesPrerelease(name) {
		return true
	}
	if o := s.overrides[name]; o != nil && rangeNamesPrerelease(s.p.Overrides[name]) {
		return true
	}
	if s.preNamed == nil {
		s.preNamed = map[string]bool{}
		for _, r := range s.p.Requests {
			if rangeNamesPrerelease(r.Range) {
				s.preNamed[r.Package] = true
			}
		}
		for _, in := range s.p.Installed {
			notePrereleaseRanges(s.preNamed, in.Revision.Decl.Requires)
		}
	}
	return s.preNamed[name]
}

func (s *solver) addRootFacts() error {
	rootTerm := term{s.root, true, fullBitset(1)}
	for _, r := range s.p.Requests {
		req, err := NewPackageRequirement(r.Package, r.Range)
		if err != nil {
			return fmt.Errorf("request %s: %w", r, err)
		}
		v := s.targetOf(r.Package, r.Range)
		set := s.match(v, req.Range)
		s.add(&incompat{terms: []term{rootTerm, {v, false, set}}, kind: causeRequest, request: r, req: &req, target: v, targetSet: set})
	}
	for _, in := range s.p.Installed {
		name := in.Revision.Package
		var v *variable
		switch first := s.installed[name]; {
		case first != nil && first.Dir == in.Dir:
			v = s.packageVar(name)
		case first != nil:
			continue // another copy of the same version: the first stands for it
		default:
			inst := in
			v = s.variable(name+"#"+in.Dir, packageVar, name, func() []cand { return []cand{{rev: inst.Revision, installed: true}} })
		}
		set := newBitset(len(v.cands))
		downgrade := false
		for i, c := range v.cands {
			switch {
			case c.installed:
				set.add(i)
			case in.Revision.Version == nil:
			case c.rev.Version.LessThan(in.Revision.Version) && !s.p.AllowDowngrade:
				downgrade = true
			case c.rev.Version.Prerelease() != "" && !s.preOK(name):
			default:
				set.add(i)
			}
		}
		s.add(&incompat{terms: []term{rootTerm, {v, false, set}}, kind: causeInstalled, rev: in.Revision, target: v, targetSet: set, downgrade: downgrade})
	}
	return nil
}

// newIncompat builds an incompatibility: terms of one variable are
// intersected, terms that always hold are dropped.
func newIncompat(terms []term) []term {
	byVar := map[*variable]int{}
	var out []term
	for _, t := range terms {
		if i, ok := byVar[t.v]; ok {
			out[i] = out[i].intersect(t)
			continue
		}
		byVar[t.v] = len(out)
		out = append(out, t)
	}
	kept := out[:0]
	for _, t := range out {
		if !t.alwaysTrue() {
			kept = append(kept, t)
		}
	}
	return kept
}

func (s *solver) add(in *incompat) {
	in.terms = newIncompat(in.terms)
	for _, t := range in.terms {
		t.v.incompats = append(t.v.incompats, in)
	}
	if len(in.terms) == 0 {
		// Holds whatever is chosen: the root's variable carries it so that
		// propagation meets it.
		s.root.incompats = append(s.root.incompats, in)
	}
}

// relation of the partial solution to a term.
func (s *solver) relation(t term) relation {
	a := t.v.assigned
	switch {
	case a.satisfies(t):
		return satisfied
	case a.disjoint(t):
		return contradicted
	default:
		return inconclusive
	}
}

func (s *solver) assign(a assignment) {
	s.asg = append(s.asg, a)
	v := a.t.v
	v.assigned = v.assigned.intersect(a.t)
	if a.decision {
		v.decided = true
	}
}

func (s *solver) decide(v *variable, i int) {
	s.level++
	set := newBitset(len(v.cands))
	set.add(i)
	s.assign(assignment{t: term{v, true, set}, level: s.level, decision: true})
}

// propagate derives everything the facts imply after v changed, resolving
// conflicts as they appear.
func (s *solver) propagate(v *variable) error {
	changed := []*variable{v}
	for len(changed) > 0 {
		cur := changed[len(changed)-1]
		changed = changed[:len(changed)-1]
		for i := len(cur.incompats) - 1; i >= 0; i-- {
			if err := s.step(); err != nil {
				return err
			}
			in := cur.incompats[i]
			rel, open := s.check(in)
			if rel == inconclusive {
				s.assign(assignment{t: open.negate(), level: s.level, cause: in})
				changed = append(changed, open.v)
				continue
			}
			if rel != satisfied {
				continue
			}
			s.conflicts++
			root, err := s.resolve(in)
			if err != nil {
				return err
			}
			if rel, open = s.check(root); rel != inconclusive {
				return fmt.Errorf("deps: internal error: a learned fact does not apply after backjumping")
			}
			s.assign(assignment{t: open.negate(), level: s.level, cause: root})
			changed = []*variable{open.v}
			break
		}
	}
	return nil
}

// check returns satisfied when every term holds, inconclusive with the
// one term left open when all others hold (the open term's negation
// follows), contradicted otherwise (nothing follows).
func (s *solver) check(in *incompat) (relation, term) {
	var open *term
	for i := range in.terms {
		switch s.relation(in.terms[i]) {
		case contradicted:
			return contradicted, term{}
		case inconclusive:
			if open != nil {
				return contradicted, term{}
			}
			open = &in.terms[i]
		}
	}
	if open == nil {
		return satisfied, term{}
	}
	return inconclusive, *open
}

func (s *solver) step() error {
	s.steps++
	if s.steps > s.maxSteps {
		return fmt.Errorf("%w (%d steps, %d packages and kinds considered)", ErrTooComplex, s.maxSteps, len(s.order)-1)
	}
	return nil
}

// satisfier returns the index of the earliest assignment after which the
// partial solution satisfies t.
func (s *solver) satisfier(t term) int {
	acc := term{v: t.v, set: newBitset(len(t.v.cands))}
	for i, a := range s.asg {
		if a.t.v != t.v {
			continue
		}
		acc = acc.intersect(a.t)
		if acc.satisfies(t) {
			return i
		}
	}
	panic(fmt.Sprintf("deps: no assignment satisfies a term of %s", t.v.key))
}

func (s *solver) isFailure(in *incompat) bool {
	return len(in.terms) == 0 || (len(in.terms) == 1 && in.terms[0].pos && in.terms[0].v == s.root)
}

// resolve turns a conflict into the fact that caused it and jumps back to
// where that fact first applies; it fails when the fact rules out the
// root.
func (s *solver) resolve(in *incompat) (*incompat, error) {
	for {
		if err := s.step(); err != nil {
			return nil, err
		}
		if s.isFailure(in) {
			return nil, &UnsatisfiableError{Explanation: explain(in)}
		}
		var recentTerm *term
		recent := -1
		prevLevel := 1
		var difference *term
		for i := range in.terms {
			t := in.terms[i]
			sat := s.satisfier(t)
			switch {
			case recent < 0:
				recent, recentTerm = sat, &in.terms[i]
			case recent < sat:
				prevLevel = max(prevLevel, s.asg[recent].level)
				recent, recentTerm, difference = sat, &in.terms[i], nil
			default:
				prevLevel = max(prevLevel, s.asg[sat].level)
			}
			if recentTerm == &in.terms[i] {
				d := s.asg[recent].t.intersect(t.negate())
				difference = nil
				if !d.impossible() {
					difference = &d
					prevLevel = max(prevLevel, s.asg[s.satisfier(d.negate())].level)
				}
			}
		}
		sat := s.asg[recent]
		if prevLevel < sat.level || sat.cause == nil {
			s.backtrack(prevLevel)
			s.add(in)
			return in, nil
		}
		var terms []term
		for _, t := range in.terms {
			if t.v != recentTerm.v {
				terms = append(terms, t)
			}
		}
		for _, t := range sat.cause.terms {
			if t.v != sat.t.v {
				terms = append(terms, t)
			}
		}
		if difference != nil {
			terms = append(terms, difference.negate())
		}
		terms = newIncompat(terms)
		if len(terms) > 1 {
			// The root is always chosen; saying so adds nothing.
			kept := terms[:0]
			for _, t := range terms {
				if !(t.pos && t.v == s.root) {
					kept = append(kept, t)
				}
			}
			terms = kept
		}
		in = &incompat{terms: terms, kind: derived, left: in, right: sat.cause, pivot: recentTerm.v}
	}
}

func (s *solver) backtrack(level int) {
	keep := s.asg[:0]
	for _, a := range s.asg {
		if a.level <= level {
			keep = append(keep, a)
		}
	}
	s.asg = keep
	s.level = level
	for _, v := range s.order {
		v.assigned = term{v: v, set: newBitset(len(v.cands))}
		v.decided = false
	}
	for _, a := range s.asg {
		v := a.t.v
		v.assigned = v.assigned.intersect(a.t)
		if a.decision {
			v.decided = true
		}
	}
}

// choose picks the next variable to decide (the one with the fewest
// candidates left) and a candidate for it, adds the facts that follow
// from that candidate and decides it unless they already conflict. It
// returns false when every variable that must be chosen is.
func (s *solver) choose() (*variable, bool) {
	var best *variable
	bestN := 0
	for _, v := range s.order {
		if v.decided || !v.assigned.pos {
			continue
		}
		if n := v.assigned.set.count(); best == nil || n < bestN {
			best, bestN = v, n
		}
	}
	if best == nil {
		return nil, false
	}
	allowed := best.assigned.set
	pick := allowed.first()
	for i, c := range best.cands {
		if allowed.has(i) && (c.installed || (c.provider != "" && s.vars[c.provider] != nil && s.vars[c.provider].assigned.pos)) {
			pick = i
			break
		}
	}
	s.decisions++
	conflict := false
	if !best.added[pick] {
		best.added[pick] = true
		for _, in := range s.consequences(best, pick) {
			s.add(in)
			all := true
			for _, t := range in.terms {
				if t.v != best && s.relation(t) != satisfied {
					all = false
				}
			}
			conflict = conflict || all
		}
	}
	if !conflict {
		s.decide(best, pick)
	}
	return best, true
}

// consequences are the facts that choosing candidate i of v brings: its
// requirements, and the lock on the kinds it provides.
func (s *solver) consequences(v *variable, i int) []*incompat {
	c := v.cands[i]
	self := newBitset(len(v.cands))
	self.add(i)
	me := term{v, true, self}
	switch v.kind {
	case packageVar:
		// A fact covers every candidate that states it: the revisions with
		// the same requirement (as consecutive versions mostly have), so
		// one conflict rules them all out.
		var out []*incompat
		for j := range c.rev.Decl.Requires {
			req := &c.rev.Decl.Requires[j]
			key := requirementKey(req, c.installed)
			if fact := v.key + "\x00" + key; !s.facts[fact] {
				s.facts[fact] = true
				in := s.requirement(term{v, true, v.sameRequirement(key)}, c.rev, req, causeDependency)
				in.ownerInstalled = c.installed
				out = append(out, in)
			}
		}
		for _, g := range c.rev.Decl.Provides {
			for _, other := range s.providersOf(g) {
				o := s.packageVar(other)
				fact := "lock\x00" + g + "\x00" + min(v.key, o.key) + "\x00" + max(v.key, o.key)
				if other == v.name || s.facts[fact] {
					continue
				}
				s.facts[fact] = true
				mine, theirs := s.providing(v, g), s.providing(o, g)
				out = append(out, &incompat{terms: []term{{v, true, mine}, {o, true, theirs}}, kind: causeLock, rev: c.rev, gvk: g,
					self: v, selfSet: mine, other: o, targetSet: theirs})
			}
		}
		return out
	case anyOfVar:
		return []*incompat{s.requirement(me, v.owner, c.alt, causeAlternative)}
	case gvkVar:
		o := s.packageVar(c.provider)
		set := s.providing(o, v.name)
		return []*incompat{{terms: []term{me, {o, false, set}}, kind: causeProvider, gvk: v.name, target: o, targetSet: set}}
	}
	return nil
}

// requirementKey identifies a requirement among a package's revisions;
// those of installed revisions stand apart.
func requirementKey(req *Requirement, installed bool) string {
	key := req.String()
	if req.Optional {
		key += "\x00optional"
	}
	if installed {
		key += "\x00installed"
	}
	return key
}

// anyOfKey names the variable of an anyOf requirement: one per package
// and requirement, shared by the revisions that state it.
func anyOfKey(owner *Revision, req *Requirement) string {
	return "anyOf:" + owner.Package + "\x00" + req.String()
}

// sameRequirement returns the candidates of a package variable that state
// the requirement of key.
func (v *variable) sameRequirement(key string) bitset {
	if v.reqGroups == nil {
		v.reqGroups = map[string]bitset{}
		for i, c := range v.cands {
			if c.rev.Decl == nil {
				continue
			}
			for j := range c.rev.Decl.Requires {
				k := requirementKey(&c.rev.Decl.Requires[j], c.installed)
				if v.reqGroups[k] == nil {
					v.reqGroups[k] = newBitset(len(v.cands))
				}
				v.reqGroups[k].add(i)
			}
		}
	}
	return v.reqGroups[key]
}

// requirement is the fact that a chosen candidate (me) needs req.
func (s *solver) requirement(me term, owner *Revision, req *Requirement, kind causeKind) *incompat {
	in := &incompat{kind: kind, rev: owner, req: req, self: me.v, selfSet: me.set}
	switch {
	case req.GVK != "":
		g := s.variable("kind:"+req.GVK, gvkVar, req.GVK, func() []cand {
			var out []cand
			for _, p := range s.providersOf(req.GVK) {
				out = append(out, cand{provider: p})
			}
			return out
		})
		in.target, in.targetSet = g, fullBitset(len(g.cands))
		if req.Optional {
			// An optional kind installs nothing and constrains nothing.
			in.terms = []term{me, {g, false, newBitset(len(g.cands))}}
			return in
		}
	case req.AnyOf != nil:
		a := s.variable(anyOfKey(owner, req), anyOfVar, "", func() []cand {
			out := make([]cand, len(req.AnyOf))
			for i := range req.AnyOf {
				out[i] = cand{alt: &req.AnyOf[i]}
			}
			return out
		})
		a.owner = owner
		in.target, in.targetSet = a, fullBitset(len(a.cands))
	default:
		req = s.effective(req)
		in.req = req
		t := s.targetOf(req.Package, req.RangeText)
		in.target, in.targetSet = t, s.match(t, req.Range)
		if req.Optional {
			// Present for another reason, it must match.
			in.terms = []term{me, {t, true, fullBitset(len(t.cands)).andNot(in.targetSet)}}
			return in
		}
	}
	in.terms = []term{me, {in.target, false, in.targetSet}}
	return in
}

// providersOf returns the packages, in the catalog or installed, that
// provide a kind: installed ones first, then by name.
func (s *solver) providersOf(gvk string) []string {
	if out, ok := s.providers[gvk]; ok {
		return out
	}
	seen := map[string]bool{}
	var out []string
	for _, in := range s.p.Installed {
		for _, g := range in.Revision.Decl.Provides {
			if g == gvk && !seen[in.Revision.Package] {
				seen[in.Revision.Package] = true
				out = append(out, in.Revision.Package)
			}
		}
	}
	for _, p := range s.p.Catalog.providersOf(gvk) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	s.providers[gvk] = out
	return out
}

// providing returns the candidates of a package variable that provide a
// kind (pre-releases only where preOK allows them).
func (s *solver) providing(v *variable, gvk string) bitset {
	set := newBitset(len(v.cands))
	for i, c := range v.cands {
		if c.rev.Decl == nil || (c.rev.Version != nil && c.rev.Version.Prerelease() != "" && !c.installed && !s.preOK(c.rev.Package)) {
			continue
		}
		for _, g := range c.rev.Decl.Provides {
			if g == gvk {
				set.add(i)
			}
		}
	}
	return set
}
