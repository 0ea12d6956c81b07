package engine

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/merge3"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/yamlutil"
)

// Change is what an update or render did to one resource or file.
type Change struct {
	// Action is one of added, updated, deleted, kept (a local edit or
	// deletion that was preserved).
	Action string
	// Resource names a KRM resource; File names a plain file.
	Resource string
	File     string
}

func (c Change) String() string {
	what := c.Resource
	if what == "" {
		what = "file " + c.File
	}
	return c.Action + " " + what
}

// Change actions.
const (
	Added   = "added"
	Updated = "updated"
	Deleted = "deleted"
	Kept    = "kept"
)

// Update brings local, which was derived from origin, up to date with
// updated, using strategy (the Kptfile's updateStrategy when empty,
// resource-merge when that is empty too). newOrigin is recorded as the
// Kptfile's upstream ref and lock. local is not modified.
func Update(local, origin, updated *pkg.Package, newOrigin Origin, strategy kptfilev1.UpdateStrategy) (*pkg.Package, []Change, error) {
	lkf, err := local.Kptfile()
	if err != nil {
		return nil, nil, fmt.Errorf("update: local package: %w", err)
	}
	if strategy == "" && lkf.Upstream != nil {
		strategy = lkf.Upstream.UpdateStrategy
	}
	if strategy == "" {
		strategy = kptfilev1.ResourceMerge
	}
	var (
		out     *pkg.Package
		changes []Change
	)
	switch strategy {
	case kptfilev1.ResourceMerge:
		out, changes, err = resourceMerge(local, origin, updated)
	case kptfilev1.FastForward:
		out, changes, err = fastForward(local, origin, updated)
	case kptfilev1.ForceDeleteReplace:
		out, changes, err = replaceWith(local, updated, false)
	case kptfilev1.CopyMerge:
		out, changes, err = replaceWith(local, updated, true)
	default:
		return nil, nil, fmt.Errorf("update: unknown strategy %q (want resource-merge, fast-forward, force-delete-replace or copy-merge)", strategy)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("update (%s): %w", strategy, err)
	}
	err = out.EditKptfile(func(kf *kptfilev1.KptFile) error {
		kf.Metadata.Name = lkf.Metadata.Name
		up := newOrigin.upstream(strategy)
		if lkf.Upstream != nil && lkf.Upstream.UpdateStrategy != "" {
			up.UpdateStrategy = lkf.Upstream.UpdateStrategy
		}
		kf.Upstream = up
		kf.UpstreamLock = newOrigin.lock()
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("update: %w", err)
	}
	return out, changes, nil
}

// version is one side of an update: its resources by identity and its
// plain files.
type version struct {
	pkg       *pkg.Package
	order     []ResID
	resources map[ResID]*yaml.RNode
	placement map[ResID]pkg.Placement
	files     map[string][]byte // plain files, Kptfiles included
}

// readVersion reads one side of an update. Its resources are shared views
// (pkg.View): an update reads them, copies the ones it changes and writes
// the others back as they are. useComments takes identities from kpt-merge
// comments.
func readVersion(p *pkg.Package, useComments bool) (*version, error) {
	v := &version{pkg: p, resources: map[ResID]*yaml.RNode{}, placement: map[ResID]pkg.Placement{}, files: map[string][]byte{}}
	if p == nil {
		return v, nil
	}
	views, err := p.Views()
	if err != nil {
		return nil, err
	}
	for _, view := range views {
		id := resID(p.OwningPackage(view.Placement.Path), view.Node, useComments)
		if _, dup := v.resources[id]; dup {
			return nil, fmt.Errorf("resource %s appears twice", id)
		}
		v.order = append(v.order, id)
		v.resources[id] = view.Node
		v.placement[id] = view.Placement
	}
	krm := p.ResourceFiles()
	for _, name := range p.Paths() {
		if !krm[name] {
			data, _ := p.File(name)
			v.files[name] = data
		}
	}
	return v, nil
}

// readSides reads the versions of an update; a nil package reads as
// empty. Their resources are shared: not to be changed.
func readSides(local, origin, updated *pkg.Package) (l, o, u *version, err error) {
	if l, err = readVersion(local, true); err != nil {
		return nil, nil, nil, fmt.Errorf("local package: %w", err)
	}
	if o, err = readVersion(origin, false); err != nil {
		return nil, nil, nil, fmt.Errorf("origin package: %w", err)
	}
	if u, err = readVersion(updated, false); err != nil {
		return nil, nil, nil, fmt.Errorf("updated package: %w", err)
	}
	return l, o, u, nil
}

// sameResource compares two resources, ignoring comments and formatting.
func sameResource(a, b *yaml.RNode) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return merge3.SameData(a.YNode(), b.YNode())
}

// Merge is the 3-way merge of two packages that both come from base:
// local's changes and other's, resource by resource (Kptfiles and other
// plain files as Update merges them). Unlike Update it records nothing
// about upstreams: it brings a draft onto a revision of its own package
// published since the draft forked.
func Merge(local, base, other *pkg.Package) (*pkg.Package, []Change, error) {
	out, changes, err := resourceMerge(local, base, other)
	if err != nil {
		return nil, nil, fmt.Errorf("merge: %w", err)
	}
	return out, changes, nil
}

func resourceMerge(local, origin, updated *pkg.Package) (*pkg.Package, []Change, error) {
	l, o, u, err := readSides(local, origin, updated)
	if err != nil {
		return nil, nil, err
	}
	var (
		result  []pkg.View
		changes []Change
	)
	emit := func(n *yaml.RNode, pl pkg.Placement) {
		result = append(result, pkg.View{Node: n, Placement: pl})
	}
	for _, id := range l.order {
		ln, on, un := l.resources[id], o.resources[id], u.resources[id]
		switch {
		case on == nil && un == nil: // local only
		case on == nil: // added on both sides
			if !sameResource(ln, un) {
				return nil, nil, fmt.Errorf("resource %s was added both upstream and locally with different content; remove one of them and update again", id)
			}
		case un == nil: // deleted upstream
			if sameResource(ln, on) {
				changes = append(changes, Change{Action: Deleted, Resource: id.String()})
				continue
			}
			changes = append(changes, Change{Action: Kept, Resource: id.String() + " (deleted upstream, edited locally)"})
		case sameResource(on, un): // upstream did not change it: local's, as it is
		default:
			// The merge edits local in place: a copy of the shared view.
			merged, err := merge3.Merge(ln.Copy(), on, un, merge3.Options{})
			if err != nil {
				return nil, nil, fmt.Errorf("merging %s: %w", id, err)
			}
			if merged == nil {
				changes = append(changes, Change{Action: Deleted, Resource: id.String()})
				continue
			}
			if !sameResource(ln, merged) {
				changes = append(changes, Change{Action: Updated, Resource: id.String()})
			}
			ln = merged
		}
		emit(ln, l.placement[id])
	}
	for _, id := range u.order {
		if _, ok := l.resources[id]; ok {
			continue
		}
		if _, inOrigin := o.resources[id]; inOrigin {
			changes = append(changes, Change{Action: Kept, Resource: id.String() + " (deleted locally)"})
			continue
		}
		n := u.resources[id].Copy()
		setKptMergeComment(n)
		emit(n, u.placement[id])
		changes = append(changes, Change{Action: Added, Resource: id.String()})
	}

	out := local.DeepCopy()
	fileChanges, err := mergeFiles(out, l.files, o.files, u.files)
	if err != nil {
		return nil, nil, err
	}
	if err := out.SetViews(result); err != nil {
		return nil, nil, err
	}
	return out, append(changes, fileChanges...), nil
}

// mergeFiles applies the upstream change of plain files: a file edited
// locally is kept, the others follow upstream. Kptfiles are merged field by
// field.
func mergeFiles(out *pkg.Package, l, o, u map[string][]byte) ([]Change, error) {
	names := map[string]bool{}
	for _, m := range []map[string][]byte{l, o, u} {
		for name := range m {
			names[name] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)
	var changes []Change
	for _, name := range sorted {
		ld, lok := l[name]
		od, ook := o[name]
		ud, uok := u[name]
		if isKptfile(name) && lok && ook && uok {
			merged, err := mergeKptfile(ld, od, ud)
			if err != nil {
				return nil, fmt.Errorf("merging %s: %w", name, err)
			}
			if !bytes.Equal(merged, ld) {
				changes = append(changes, Change{Action: Updated, File: name})
			}
			if err := out.SetFile(name, merged); err != nil {
				return nil, err
			}
			continue
		}
		localUnchanged := lok == ook && bytes.Equal(ld, od)
		switch {
		case ook && uok && bytes.Equal(od, ud): // no upstream change
		case !localUnchanged:
			if ook || uok {
				changes = append(changes, Change{Action: Kept, File: name + " (edited locally)"})
			}
		case !uok:
			out.DeleteFile(name)
			changes = append(changes, Change{Action: Deleted, File: name})
		default:
			if err := out.SetFile(name, ud); err != nil {
				return nil, err
			}
			action := Updated
			if !lok {
				action = Added
			}
			changes = append(changes, Change{Action: action, File: name})
		}
	}
	return changes, nil
}

func isKptfile(name string) bool {
	return name == kptfilev1.KptFileName || strings.HasSuffix(name, "/"+kptfilev1.KptFileName)
}

// mergeKptfile merges Kptfiles field by field; lists merge by their keys
// (functions by name, readiness gates by condition type, conditions by
// type).
func mergeKptfile(l, o, u []byte) ([]byte, error) {
	parse := func(b []byte) (*yaml.RNode, error) { return yaml.Parse(string(b)) }
	ln, err := parse(l)
	if err != nil {
		return nil, err
	}
	on, err := parse(o)
	if err != nil {
		return nil, err
	}
	un, err := parse(u)
	if err != nil {
		return nil, err
	}
	// The upstream's own upstream is not ours: Update sets ours afterwards.
	for _, n := range []*yaml.RNode{on, un} {
		for _, f := range []string{"upstream", "upstreamLock"} {
			if _, err := n.Pipe(yaml.Clear(f)); err != nil {
				return nil, err
			}
		}
	}
	before := ln.Copy().YNode()
	merged, err := merge3.Merge(ln, on, un, merge3.Options{ListKeys: kptfile.ListKeys})
	if err != nil {
		return nil, err
	}
	if merged != nil && yamlutil.SameText(before, merged.YNode()) {
		return l, nil
	}
	s, err := merged.String()
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// fastForward takes updated as it is, when local has no changes of its own
// relative to origin (the package context and the Kptfile's name and
// upstream aside).
func fastForward(local, origin, updated *pkg.Package) (*pkg.Package, []Change, error) {
	l, o, _, err := readSides(local, origin, nil)
	if err != nil {
		return nil, nil, err
	}
	var diffs []string
	for _, id := range l.order {
		if IsPackageContext(l.resources[id]) {
			continue
		}
		if !sameResource(l.resources[id], o.resources[id]) {
			diffs = append(diffs, id.String())
		}
	}
	for _, id := range o.order {
		if _, ok := l.resources[id]; !ok {
			diffs = append(diffs, id.String()+" (deleted)")
		}
	}
	for _, name := range union(l.files, o.files) {
		if isKptfile(name) {
			continue
		}
		if !bytes.Equal(l.files[name], o.files[name]) {
			diffs = append(diffs, "file "+name)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return nil, nil, fmt.Errorf("the local package has changes of its own, which fast-forward does not merge: %s", strings.Join(diffs, ", "))
	}
	return replaceWith(local, updated, false)
}

// replaceWith takes updated's content: force-delete-replace drops local
// changes (keepLocal false); copy-merge keeps local-only resources and
// files (keepLocal true). Both keep the local package context and Kptfile
// identity.
func replaceWith(local, updated *pkg.Package, keepLocal bool) (*pkg.Package, []Change, error) {
	l, _, u, err := readSides(local, nil, updated)
	if err != nil {
		return nil, nil, err
	}
	out := pkg.New(nil)
	var (
		result  []pkg.View
		changes []Change
	)
	for _, id := range u.order {
		n := u.resources[id].Copy()
		setKptMergeComment(n)
		result = append(result, pkg.View{Node: n, Placement: u.placement[id]})
		switch ln := l.resources[id]; {
		case ln == nil:
			changes = append(changes, Change{Action: Added, Resource: id.String()})
		case !sameResource(ln, u.resources[id]):
			changes = append(changes, Change{Action: Updated, Resource: id.String()})
		}
	}
	for _, id := range l.order {
		if _, ok := u.resources[id]; ok {
			continue
		}
		if keepLocal || IsPackageContext(l.resources[id]) {
			result = append(result, pkg.View{Node: l.resources[id], Placement: l.placement[id]})
			continue
		}
		changes = append(changes, Change{Action: Deleted, Resource: id.String()})
	}
	for _, name := range slices.Sorted(maps.Keys(u.files)) {
		data := u.files[name]
		if err := out.SetFile(name, data); err != nil {
			return nil, nil, err
		}
		if isKptfile(name) {
			continue
		}
		switch ld, ok := l.files[name]; {
		case !ok:
			changes = append(changes, Change{Action: Added, File: name})
		case !bytes.Equal(ld, data):
			changes = append(changes, Change{Action: Updated, File: name})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.files)) {
		data := l.files[name]
		_, upstream := u.files[name]
		if isKptfile(name) && upstream {
			continue
		}
		if keepLocal && !upstream {
			if err := out.SetFile(name, data); err != nil {
				return nil, nil, err
			}
		} else if !upstream {
			changes = append(changes, Change{Action: Deleted, File: name})
		}
	}
	if err := out.SetViews(result); err != nil {
		return nil, nil, err
	}
	return out, changes, nil
}

// union returns the names in a or b, sorted.
func union(a, b map[string][]byte) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// Diff lists what differs between two versions of a package: resources
// by identity (renames through kpt-merge comments count as updates) and
// plain files by content.
func Diff(before, after *pkg.Package) ([]Change, error) {
	b, err := readVersion(before, true)
	if err != nil {
		return nil, err
	}
	a, err := readVersion(after, true)
	if err != nil {
		return nil, err
	}
	var changes []Change
	// A resource whose namespace changed (and that has no kpt-merge
	// identity) is the same resource, updated.
	moved := map[ResID]bool{}
	movedFrom := func(id ResID) bool {
		for _, bid := range b.order {
			if _, still := a.resources[bid]; still || moved[bid] {
				continue
			}
			if bid.Package == id.Package && bid.Group == id.Group && bid.Kind == id.Kind && bid.Name == id.Name {
				moved[bid] = true
				return true
			}
		}
		return false
	}
	for _, id := range a.order {
		switch bn := b.resources[id]; {
		case bn == nil && movedFrom(id):
			changes = append(changes, Change{Action: Updated, Resource: id.String()})
		case bn == nil:
			changes = append(changes, Change{Action: Added, Resource: id.String()})
		case !sameResource(bn, a.resources[id]):
			changes = append(changes, Change{Action: Updated, Resource: id.String()})
		}
	}
	for _, id := range b.order {
		if _, ok := a.resources[id]; !ok && !moved[id] {
			changes = append(changes, Change{Action: Deleted, Resource: id.String()})
		}
	}
	for _, name := range union(b.files, a.files) {
		bd, bok := b.files[name]
		ad, aok := a.files[name]
		switch {
		case !bok:
			changes = append(changes, Change{Action: Added, File: name})
		case !aok:
			changes = append(changes, Change{Action: Deleted, File: name})
		case !bytes.Equal(bd, ad):
			changes = append(changes, Change{Action: Updated, File: name})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].String() < changes[j].String() })
	return changes, nil
}
