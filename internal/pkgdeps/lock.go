package pkgdeps

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
)

// Lock computes the content of a repository's lock: its packages from git,
// the planned ones git does not have yet, each one's dependants, and the
// kinds with more than one provider. The result depends only on its
// inputs, so every writer computes the same lock from the same facts.
func Lock(installed []Package, planned []configv1alpha1.LockedPackage, cat *Catalog) ([]configv1alpha1.LockedPackage, []configv1alpha1.LockConflict) {
	var entries []*lockEntry
	inGit := map[string]bool{}
	for _, in := range installed {
		e := &lockEntry{decl: in.Rev.Decl, locked: configv1alpha1.LockedPackage{Name: in.Rev.Package, Directory: in.Dir, State: configv1alpha1.LockedPublished}}
		if in.Rev.Version != nil {
			e.locked.Version = in.Rev.Version.String()
		}
		if in.Lifecycle != porchv1alpha1.LifecyclePublished {
			e.locked.State = configv1alpha1.LockedDraft
		}
		inGit[in.Rev.Package] = true
		entries = append(entries, e)
	}
	for _, pl := range planned {
		if inGit[pl.Name] || pl.State != configv1alpha1.LockedPlanned || len(pl.PlannedBy) == 0 {
			continue
		}
		e := &lockEntry{locked: configv1alpha1.LockedPackage{Name: pl.Name, Version: pl.Version, State: configv1alpha1.LockedPlanned, PlannedBy: sortedSet(pl.PlannedBy)}}
		if v, err := semver.NewVersion(pl.Version); err == nil && cat != nil {
			if r := revisionOf(cat, pl.Name, v); r != nil {
				e.decl = r.Decl
			}
		}
		entries = append(entries, e)
	}
	byName := map[string][]*lockEntry{}
	providers := map[string][]*lockEntry{}
	for _, e := range entries {
		byName[e.locked.Name] = append(byName[e.locked.Name], e)
		if e.decl != nil {
			e.locked.Provides = append([]string(nil), e.decl.Provides...)
			for _, g := range e.decl.Provides {
				// Copies of one package (two variants of a blueprint)
				// provide a kind once.
				if !slices.ContainsFunc(providers[g], func(o *lockEntry) bool { return o.locked.Name == e.locked.Name }) {
					providers[g] = append(providers[g], e)
				}
			}
		}
	}
	dependants := map[*lockEntry]map[string]bool{}
	addDependant := func(of *lockEntry, name string) {
		if of.locked.Name == name {
			return
		}
		if dependants[of] == nil {
			dependants[of] = map[string]bool{}
		}
		dependants[of][name] = true
	}
	var reach func(e *lockEntry, req *deps.Requirement) bool
	reach = func(e *lockEntry, req *deps.Requirement) bool {
		switch {
		case req.GVK != "":
			for _, p := range providers[req.GVK] {
				addDependant(p, e.locked.Name)
			}
			return len(providers[req.GVK]) > 0
		case req.AnyOf != nil:
			for i := range req.AnyOf {
				if reach(e, &req.AnyOf[i]) {
					return true
				}
			}
			return false
		default:
			for _, p := range byName[req.Package] {
				addDependant(p, e.locked.Name)
			}
			return len(byName[req.Package]) > 0
		}
	}
	for _, e := range entries {
		if e.decl == nil {
			continue
		}
		for i := range e.decl.Requires {
			reach(e, &e.decl.Requires[i])
		}
	}
	out := make([]configv1alpha1.LockedPackage, 0, len(entries))
	for _, e := range entries {
		for name := range dependants[e] {
			e.locked.Dependants = append(e.locked.Dependants, name)
		}
		sort.Strings(e.locked.Dependants)
		out = append(out, e.locked)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Directory < out[j].Directory
	})
	var conflicts []configv1alpha1.LockConflict
	kinds := make([]string, 0, len(providers))
	for g := range providers {
		kinds = append(kinds, g)
	}
	sort.Strings(kinds)
	for _, g := range kinds {
		ps := providers[g]
		sort.SliceStable(ps, func(i, j int) bool {
			if a, b := stateRank(ps[i].locked.State), stateRank(ps[j].locked.State); a != b {
				return a < b
			}
			return ps[i].locked.Name < ps[j].locked.Name
		})
		if len(ps) < 2 {
			continue
		}
		c := configv1alpha1.LockConflict{Kind: g}
		var labels []string
		for _, p := range ps {
			c.Packages = append(c.Packages, p.locked.Name)
			labels = append(labels, label(p.locked))
		}
		c.Message = fmt.Sprintf("kind %s is provided by %s, and a kind has one provider per repository: %s holds it, and publishing %s is refused while the conflict stands",
			g, strings.Join(labels, " and "), c.Packages[0], strings.Join(c.Packages[1:], ", "))
		conflicts = append(conflicts, c)
	}
	conflicts = append(conflicts, versionConflicts(entries, cat)...)
	conflicts = append(conflicts, requirementConflicts(entries, func(g string) *configv1alpha1.LockedPackage {
		if ps := providers[g]; len(ps) > 0 {
			return &ps[0].locked
		}
		return nil
	}, cat)...)
	return out, conflicts
}

// WithPlan returns the planned packages of a lock with a variant's plan:
// the variant is removed from every entry, then added to those it
// installs (at the version it chose). Entries no variant plans any more
// are dropped.
func WithPlan(planned []configv1alpha1.LockedPackage, variant string, installs []Need) []configv1alpha1.LockedPackage {
	byName := map[string]int{}
	var out []configv1alpha1.LockedPackage
	for _, pl := range planned {
		if pl.State != configv1alpha1.LockedPlanned {
			continue
		}
		pl.PlannedBy = slices.DeleteFunc(slices.Clone(pl.PlannedBy), func(n string) bool { return n == variant })
		out = append(out, pl)
	}
	for i := range out {
		byName[out[i].Name] = i
	}
	for _, n := range installs {
		if i, ok := byName[n.Package]; ok {
			// Shared: the resolution that saw it planned kept it, or
			// moved it for everyone (the installing variant follows).
			out[i].Version = n.Version
			out[i].PlannedBy = sortedSet(append(out[i].PlannedBy, variant))
			continue
		}
		out = append(out, configv1alpha1.LockedPackage{Name: n.Package, Version: n.Version, State: configv1alpha1.LockedPlanned, PlannedBy: []string{variant}})
		byName[n.Package] = len(out) - 1
	}
	return slices.DeleteFunc(out, func(pl configv1alpha1.LockedPackage) bool { return len(pl.PlannedBy) == 0 })
}

// ConflictFor returns the conflicts of a lock in which a package of the
// repository is not the holder: a provider of a kind another holds, or a
// folder holding a package at another version than the one that stays.
// Its publication is refused while they stand.
func ConflictFor(conflicts []configv1alpha1.LockConflict, p configv1alpha1.LockedPackage) []configv1alpha1.LockConflict {
	var out []configv1alpha1.LockConflict
	for _, c := range conflicts {
		switch {
		case len(c.Packages) < 2:
		case c.Kind != "" && slices.Contains(c.Packages[1:], p.Name),
			c.Package != "" && c.Package == p.Name && slices.Contains(c.Packages[1:], p.Directory):
			out = append(out, c)
		}
	}
	return out
}

// lockEntry is a package of the lock with its declaration.
type lockEntry struct {
	locked configv1alpha1.LockedPackage
	decl   *deps.Declaration
}

// versionConflicts lists the packages that allow one version per
// repository (they declare onePerRepository, or provide kinds) and are in
// it at two versions: the Published one stays (else the first folder).
func versionConflicts(entries []*lockEntry, cat *Catalog) []configv1alpha1.LockConflict {
	byName := map[string][]*lockEntry{}
	var names []string
	for _, e := range entries {
		if e.locked.Directory == "" || e.decl == nil {
			continue
		}
		if _, ok := byName[e.locked.Name]; !ok {
			names = append(names, e.locked.Name)
		}
		byName[e.locked.Name] = append(byName[e.locked.Name], e)
	}
	sort.Strings(names)
	var out []configv1alpha1.LockConflict
	for _, name := range names {
		es := byName[name]
		if len(es) < 2 || installationType(es, cat) == configv1alpha1.NoRestrictions {
			continue
		}
		sort.SliceStable(es, func(i, j int) bool {
			if a, b := stateRank(es[i].locked.State), stateRank(es[j].locked.State); a != b {
				return a < b
			}
			return es[i].locked.Directory < es[j].locked.Directory
		})
		var others []*lockEntry
		for _, e := range es[1:] {
			if e.locked.Version != es[0].locked.Version {
				others = append(others, e)
			}
		}
		if len(others) == 0 {
			continue // copies of one version (two tenants of one blueprint)
		}
		c := configv1alpha1.LockConflict{Package: name, Packages: []string{es[0].locked.Directory}}
		labels := []string{label(es[0].locked)}
		var dirs []string
		for _, e := range others {
			c.Packages = append(c.Packages, e.locked.Directory)
			labels = append(labels, label(e.locked))
			dirs = append(dirs, e.locked.Directory)
		}
		c.Message = fmt.Sprintf("package %s is in the repository as %s, and it allows one version per repository (installationType onePerRepository): %s stays, and publishing %s is refused while the conflict stands; move one copy to the other's version, or remove it",
			name, strings.Join(labels, " and "), es[0].locked.Directory, strings.Join(dirs, ", "))
		out = append(out, c)
	}
	return out
}

// installationType is a package's, from the catalog when it has the
// package, else from the repository's copies; a package none of whose
// copies declares itself tolerates copies at other versions.
func installationType(es []*lockEntry, cat *Catalog) configv1alpha1.InstallationType {
	if !slices.ContainsFunc(es, func(e *lockEntry) bool { return e.decl.Declared }) {
		return configv1alpha1.NoRestrictions
	}
	if cat != nil {
		if t, ok := cat.InstallationType(es[0].locked.Name); ok {
			return t
		}
	}
	for _, e := range es {
		if e.decl.InstallationType != configv1alpha1.NoRestrictions {
			return configv1alpha1.OnePerRepository
		}
	}
	return configv1alpha1.NoRestrictions
}

// requirementConflicts lists the packages of the repository that require
// a package it does not hold, every version of which in range provides a
// kind another package holds (holder): they cannot be installed while it
// does.
func requirementConflicts(entries []*lockEntry, holder func(gvk string) *configv1alpha1.LockedPackage, cat *Catalog) []configv1alpha1.LockConflict {
	if cat == nil {
		return nil
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.locked.Name] = true
	}
	type key struct{ kind, holder, rival string }
	found := map[key]map[string]bool{}
	var order []key
	for _, e := range entries {
		if e.decl == nil {
			continue
		}
		for _, r := range e.decl.Requires {
			if r.Package == "" || r.Optional || present[r.Package] {
				continue
			}
			g, h := heldKind(cat, r, holder)
			if h == nil || h.Name == e.locked.Name {
				continue
			}
			k := key{g, h.Name, r.Package}
			if found[k] == nil {
				found[k] = map[string]bool{}
				order = append(order, k)
			}
			found[k][e.locked.Name] = true
		}
	}
	var out []configv1alpha1.LockConflict
	for _, k := range order {
		by := make([]string, 0, len(found[k]))
		for n := range found[k] {
			by = append(by, n)
		}
		sort.Strings(by)
		h := holder(k.kind)
		out = append(out, configv1alpha1.LockConflict{Kind: k.kind, Packages: []string{k.holder, k.rival}, RequiredBy: by,
			Message: fmt.Sprintf("%s requires %s, which provides kind %s, and %s holds it: a kind has one provider per repository, so %s cannot be installed while %s is there",
				strings.Join(by, ", "), k.rival, k.kind, label(*h), strings.Join(by, ", "), k.holder)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// heldKind returns a kind every catalog version of a requirement's range
// provides and some package of the repository holds, with its holder
// (nil: none).
func heldKind(cat *Catalog, r deps.Requirement, holder func(gvk string) *configv1alpha1.LockedPackage) (string, *configv1alpha1.LockedPackage) {
	var common map[string]bool
	for _, rev := range cat.Revisions(r.Package) {
		if rev.Decl == nil || !r.Admits(rev.Version) {
			continue
		}
		has := map[string]bool{}
		for _, g := range rev.Decl.Provides {
			if common == nil || common[g] {
				has[g] = true
			}
		}
		common = has
	}
	var kinds []string
	for g := range common {
		kinds = append(kinds, g)
	}
	sort.Strings(kinds)
	for _, g := range kinds {
		if h := holder(g); h != nil && h.Name != r.Package {
			return g, h
		}
	}
	return "", nil
}

func stateRank(s configv1alpha1.LockedState) int {
	switch s {
	case configv1alpha1.LockedPublished:
		return 0
	case configv1alpha1.LockedDraft:
		return 1
	}
	return 2
}

func label(p configv1alpha1.LockedPackage) string {
	s := p.Name
	if p.Version != "" {
		s += " " + p.Version
	}
	if p.State == configv1alpha1.LockedPlanned {
		return s + " (planned by " + joinNames(p.PlannedBy) + ")"
	}
	return s + " (" + strings.ToLower(string(p.State)) + " in " + p.Directory + ")"
}

func sortedSet(names []string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}
