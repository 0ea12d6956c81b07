package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterRanges reads the cluster's own address ranges: its Service
// ranges (ServiceCIDR objects, Kubernetes 1.33 and later) and its Nodes'
// Pod ranges (spec.podCIDRs, where the cluster allocates them). What it
// cannot read (an older cluster, RBAC) is left out and said in the
// error, with what it could read.
func ClusterRanges(ctx context.Context, r client.Reader) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	add := func(what, cidr string) {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", what, cidr, err))
			return
		}
		out = append(out, p.Masked())
	}
	services := &networkingv1.ServiceCIDRList{}
	if err := r.List(ctx, services); err != nil {
		errs = append(errs, fmt.Errorf("listing ServiceCIDRs: %w", err))
	}
	for _, s := range services.Items {
		for _, c := range s.Spec.CIDRs {
			add("ServiceCIDR "+s.Name, c)
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes); err != nil {
		errs = append(errs, fmt.Errorf("listing Nodes: %w", err))
	}
	for _, n := range nodes.Items {
		for _, c := range n.Spec.PodCIDRs {
			add("Node "+n.Name+" podCIDR", c)
		}
	}
	return out, errors.Join(errs...)
}

// DenyCluster adds the cluster's own ranges (ClusterRanges) to the
// policy's denied ones, before the policy is used, logging what it found
// or why it found nothing.
func (p *Policy) DenyCluster(r client.Reader, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ranges, err := ClusterRanges(ctx, r)
	if err != nil {
		log.Info("the cluster's Service or Pod ranges are not all denied to remotes and registries: they could not be read", "error", err.Error())
	}
	if len(ranges) > 0 {
		p.Deny(ranges...)
		log.Info("denying the cluster's own ranges to remotes and registries", "ranges", fmt.Sprint(ranges))
	}
}
