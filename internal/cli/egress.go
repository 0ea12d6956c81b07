package cli

import (
	"github.com/spf13/pflag"

	"github.com/scion-dev/scion/internal/egress"
)

// egressFlags are the flags of the egress policy: the controller and the
// API server take the same.
type egressFlags struct {
	allow, deny []string
}

// add defines the flags.
func (e *egressFlags) add(f *pflag.FlagSet) {
	f.StringSliceVar(&e.allow, "egress-allow", nil, "host names (git.example.com, *.example.com), addresses and CIDR ranges that git remotes and registries named by Repositories, clones and upstreams may always reach, whatever --egress-deny says")
	f.StringSliceVar(&e.deny, "egress-deny", egress.DefaultDeny, "addresses and CIDR ranges that git remotes and registries may not be reached at (checked once a host name is resolved, at each connection); the cluster's own Service and Pod ranges are added when the controller can read them")
}

// complete parses the flags into a policy.
func (e *egressFlags) complete() (*egress.Policy, error) {
	return egress.New(e.allow, e.deny)
}
