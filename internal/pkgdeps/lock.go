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
	type entry struct {
		locked configv1alpha1.LockedPackage
		decl   *deps.Declaration
	}
	var entries []*entry
	inGit := map[string]bool{}
	for _, in := range installed {
		e := &entry{decl: in.Rev.Decl, locked: configv1alpha1.LockedPackage{Name: in.Rev.Package, Directory: in.Dir, State: configv1alpha1.LockedPublished}}
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
		e := &entry{locked: configv1alpha1.LockedPackage{Name: pl.Name, Version: pl.Version, State: configv1alpha1.LockedPlanned, PlannedBy: sortedSet(pl.PlannedBy)}}
		if v, err := semver.NewVersion(pl.Version); err == nil && cat != nil {
			if r := revisionOf(cat, pl.Name, v); r != nil {
				e.decl = r.Decl
			}
		}
		entries = append(entries, e)
	}
	byName := map[string][]*entry{}
	providers := map[string][]*entry{}
	for _, e := range entries {
		byName[e.locked.Name] = append(byName[e.locked.Name], e)
		if e.decl != nil {
			e.locked.Provides = append([]string(nil), e.decl.Provides...)
			for _, g := range e.decl.Provides {
				// Copies of one package (two variants of a blueprint)
				// provide a kind once.
				if !slices.ContainsFunc(providers[g], func(o *entry) bool { return o.locked.Name == e.locked.Name }) {
					providers[g] = append(providers[g], e)
				}
			}
		}
	}
	dependants := map[*entry]map[string]bool{}
	addDependant := func(of *entry, name string) {
		if of.locked.Name == name {
			return
		}
		if dependants[of] == nil {
			dependants[of] = map[string]bool{}
		}
		dependants[of][name] = true
	}
	var reach func(e *entry, req *deps.Requirement) bool
	reach = func(e *entry, req *deps.Requirement) bool {
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
		if len(ps) < 2 {
			continue
		}
		sort.SliceStable(ps, func(i, j int) bool {
			if a, b := stateRank(ps[i].locked.State), stateRank(ps[j].locked.State); a != b {
				return a < b
			}
			return ps[i].locked.Name < ps[j].locked.Name
		})
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

// ConflictFor returns the conflicts of a lock in which a package is not
// the holder: its publication is refused while they stand.
func ConflictFor(conflicts []configv1alpha1.LockConflict, name string) []configv1alpha1.LockConflict {
	var out []configv1alpha1.LockConflict
	for _, c := range conflicts {
		if len(c.Packages) > 1 && slices.Contains(c.Packages[1:], name) {
			out = append(out, c)
		}
	}
	return out
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
