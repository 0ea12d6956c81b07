package deps

// Relevant returns the problem with only the installed packages that a
// resolution of its requests (and of the packages named in roots) can
// involve: those that share a package or a kind with them, directly or
// through what any of their versions, or any installed package, requires
// or provides. A package of the repository that nothing requested
// touches neither constrains the resolution nor is constrained by it, so
// leaving it out changes no answer; its own problems (a package that
// cannot be read, two copies at different versions, a requirement no
// longer met) then stay its own and its dependants', instead of failing
// every resolution in the repository.
func (p Problem) Relevant(roots ...string) Problem {
	c := p.Catalog
	if c == nil {
		c = NewCatalog()
	}
	names, kinds := map[string]bool{}, map[string]bool{}
	var queue []string
	addName := func(n string) {
		if n != "" && !names[n] {
			names[n] = true
			queue = append(queue, n)
		}
	}
	var addDecl func(d *Declaration)
	addKind := func(k string) {
		if kinds[k] {
			return
		}
		kinds[k] = true
		for _, n := range c.providersOf(k) {
			addName(n)
		}
	}
	var addReq func(r *Requirement)
	addReq = func(r *Requirement) {
		switch {
		case r.GVK != "":
			addKind(r.GVK)
		case r.AnyOf != nil:
			for i := range r.AnyOf {
				addReq(&r.AnyOf[i])
			}
		default:
			addName(r.Package)
		}
	}
	addDecl = func(d *Declaration) {
		if d == nil {
			return
		}
		for i := range d.Requires {
			addReq(&d.Requires[i])
		}
		for _, g := range d.Provides {
			addKind(g)
		}
	}
	var touches func(r *Requirement) bool
	touches = func(r *Requirement) bool {
		switch {
		case r.GVK != "":
			return kinds[r.GVK]
		case r.AnyOf != nil:
			for i := range r.AnyOf {
				if touches(&r.AnyOf[i]) {
					return true
				}
			}
			return false
		default:
			return names[r.Package]
		}
	}
	involved := func(r *Revision) bool {
		if names[r.Package] {
			return true
		}
		if r.Decl == nil {
			return false
		}
		for _, g := range r.Decl.Provides {
			if kinds[g] {
				return true
			}
		}
		for i := range r.Decl.Requires {
			if touches(&r.Decl.Requires[i]) {
				return true
			}
		}
		return false
	}

	for _, r := range p.Requests {
		addName(r.Package)
	}
	for _, n := range roots {
		addName(n)
	}
	kept := make([]bool, len(p.Installed))
	for {
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, r := range c.Revisions(n) {
				addDecl(r.Decl)
			}
		}
		grew := false
		for i, in := range p.Installed {
			if kept[i] || in.Revision == nil || !involved(in.Revision) {
				continue
			}
			kept[i], grew = true, true
			addName(in.Revision.Package)
			addDecl(in.Revision.Decl)
		}
		if !grew && len(queue) == 0 {
			break
		}
	}
	out := p
	out.Installed = nil
	for i, in := range p.Installed {
		if kept[i] {
			out.Installed = append(out.Installed, in)
		}
	}
	return out
}
