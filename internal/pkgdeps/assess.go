package pkgdeps

import (
	"fmt"
	"strings"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// Reasons of the DependenciesReady condition and the dependencies gate.
const (
	// DependenciesSatisfiedReason: every dependency is Published in the
	// repository at the version chosen.
	DependenciesSatisfiedReason = "DependenciesSatisfied"
	// DependencyPendingReason: a dependency is a draft or proposal, or
	// being installed; publishing it satisfies the gate.
	DependencyPendingReason = "DependencyPending"
	// DependencyMissingReason: a dependency is not in the repository and
	// spec.dependencies.install is false.
	DependencyMissingReason = "DependencyMissing"
	// DependencyConflictReason: a dependency is in the repository at
	// another version, put there by someone else than Scion's
	// installation, which Scion never changes silently.
	DependencyConflictReason = "DependencyConflict"
	// DependenciesUnsatisfiableReason: no set of package revisions meets
	// every requirement; the message is the resolver's explanation.
	DependenciesUnsatisfiableReason = "DependenciesUnsatisfiable"
	// PackageConflictReason: the package provides a kind another package
	// of the repository provides (see the repository's PackageLock).
	PackageConflictReason = "PackageConflict"
)

// MaxStatus bounds the dependencies a variant's status lists.
const MaxStatus = 100

// Installer is the PackageVariant that puts a package into the
// repository.
type Installer struct {
	// Name is the PackageVariant's.
	Name string
	// Dependency is true when Scion made it to install a dependency and
	// nobody adopted it (it has the DependencyLabel): Scion may move it.
	Dependency bool
	// Dependant is true when the variant assessed is one of its owners.
	Dependant bool
}

// Assessment is what a variant's resolution means for it.
type Assessment struct {
	// Status is the variant's status.dependencies.
	Status []configv1alpha1.DependencyStatus
	// Install are the needs for which a dependency PackageVariant must
	// exist at the version chosen (made, moved, or shared).
	Install []Need
	// Ready is the gate's status; Reason and Message say why.
	Ready           bool
	Reason, Message string
}

// Assess decides, for each need of a resolution, whether the repository
// satisfies it, what to install, and the gate. installers are the
// PackageVariants writing into the repository, by downstream folder; the
// folder a dependency is installed into is its package path.
func Assess(needs []Need, install bool, installers map[string]Installer) Assessment {
	var a Assessment
	var conflict, missing bool
	var msgs []string
	for _, n := range needs {
		st := configv1alpha1.DependencyStatus{Package: n.Package, Version: n.Version}
		dir := n.Package
		if n.In != nil {
			dir = n.In.Dir
		}
		inst, hasInst := installers[dir]
		if hasInst {
			st.InstalledBy = inst.Name
			st.Installed = inst.Dependency && inst.Dependant
		}
		switch {
		case n.In != nil && n.In.Rev.Version != nil && n.In.Rev.Version.String() == n.Version:
			if pub := n.In.Published; pub != nil && pub.Version != nil && pub.Version.String() == n.Version {
				st.State, st.SatisfiedBy = configv1alpha1.DependencySatisfied, fmt.Sprintf("%s (Published %s)", n.In.Dir, n.Version)
			} else {
				st.State, st.SatisfiedBy = configv1alpha1.DependencyPending, fmt.Sprintf("%s (%s %s)", n.In.Dir, n.In.Lifecycle, n.Version)
				msgs = append(msgs, fmt.Sprintf("%s %s in %s is %s: publish it", n.Package, n.Version, n.In.Dir, strings.ToLower(string(n.In.Lifecycle))))
			}
			if install && hasInst && inst.Dependency {
				a.Install = append(a.Install, n) // shared: own it too
			}
		case n.In != nil && install && hasInst && inst.Dependency:
			st.State = configv1alpha1.DependencyPending
			msgs = append(msgs, fmt.Sprintf("%s moves from %s to %s (PackageVariant %s)", n.Package, versionOf(n.In), n.Version, inst.Name))
			a.Install = append(a.Install, n)
		case n.In != nil:
			st.State = configv1alpha1.DependencyConflict
			conflict = true
			who := "by hand or by another tool"
			if hasInst {
				who = "by PackageVariant " + inst.Name
			}
			msgs = append(msgs, fmt.Sprintf("%s is at %s in %s, put there %s, and this variant needs %s: Scion changes only the dependencies it installed; move it yourself, or override the range in spec.dependencies.overrides",
				n.Package, versionOf(n.In), n.In.Dir, who, n.Version))
		case install:
			st.State = configv1alpha1.DependencyPending
			a.Install = append(a.Install, n)
			msgs = append(msgs, fmt.Sprintf("%s %s is being installed", n.Package, n.Version))
		case len(n.PlannedBy) > 0 || hasInst:
			st.State = configv1alpha1.DependencyPending
			by := joinNames(n.PlannedBy)
			if hasInst {
				by = inst.Name
			}
			msgs = append(msgs, fmt.Sprintf("%s %s is being installed by %s", n.Package, n.Version, by))
		default:
			st.State = configv1alpha1.DependencyMissing
			missing = true
			msgs = append(msgs, fmt.Sprintf("%s %s is not in the repository: install it, or set spec.dependencies.install: true", n.Package, n.Version))
		}
		if len(a.Status) < MaxStatus {
			a.Status = append(a.Status, st)
		}
	}
	switch {
	case conflict:
		a.Reason = DependencyConflictReason
	case missing:
		a.Reason = DependencyMissingReason
	case len(msgs) > 0:
		a.Reason = DependencyPendingReason
	default:
		a.Ready, a.Reason = true, DependenciesSatisfiedReason
		a.Message = fmt.Sprintf("%d dependencies Published in the repository", len(needs))
		if len(needs) == 0 {
			a.Message = "the package has no dependencies"
		}
		return a
	}
	const maxShown = 10
	if len(msgs) > maxShown {
		msgs = append(msgs[:maxShown], fmt.Sprintf("and %d more", len(msgs)-maxShown))
	}
	a.Message = strings.Join(msgs, "; ")
	return a
}

func versionOf(p *Package) string {
	if p.Rev.Version == nil {
		return "no version"
	}
	return p.Rev.Version.String()
}
