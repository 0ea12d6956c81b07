package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/podrunner"
)

// Where a server learns its own Pod: the Deployments set these from the
// downward API.
const (
	podNameEnv      = "POD_NAME"
	podNamespaceEnv = "POD_NAMESPACE"
)

// functionRunnerFlags choose where a server runs function images: with a
// container CLI on its machine (local), or as Pods (pod).
type functionRunnerFlags struct {
	runner, namespace, image string
	timeout, idleTTL         time.Duration
}

func (f *functionRunnerFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.runner, "function-runner", "local", "where images allowed by --function-images run: local (with docker, podman or nerdctl on this machine) or pod (as Pods in --function-namespace, for a server in a cluster)")
	fs.StringVar(&f.namespace, "function-namespace", "scion-functions", "the namespace of the function Pods (--function-runner=pod)")
	fs.StringVar(&f.image, "function-wrapper-image", "", "Scion's image, whose binary serves each function Pod (--function-runner=pod; default: this Pod's own image)")
	fs.DurationVar(&f.timeout, "function-timeout", fn.DefaultTimeout, "how long a function Pod may take over one function (--function-runner=pod); keep it under the kube-apiserver's 60 s request timeout for pushes through Scion's API server")
	fs.DurationVar(&f.idleTTL, "function-pod-idle-ttl", 10*time.Minute, "how long an idle function Pod is kept for the next run of its image (--function-runner=pod)")
}

func (f *functionRunnerFlags) complete() error {
	if f.timeout < 0 || f.idleTTL < 0 {
		return fmt.Errorf("--function-timeout and --function-pod-idle-ttl must not be negative")
	}
	switch f.runner {
	case "", "local", "pod":
		return nil
	default:
		return fmt.Errorf("--function-runner %q: want local or pod", f.runner)
	}
}

// start returns the image runner the flags ask for (nil for local) and
// runs its upkeep until ctx ends.
func (f *functionRunnerFlags) start(ctx context.Context, cfg *rest.Config) (fn.ImageRunner, error) {
	if f.runner != "pod" {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	identity, ns := os.Getenv(podNameEnv), os.Getenv(podNamespaceEnv)
	if identity == "" {
		h, _ := os.Hostname()
		identity = h
		ns = "" // not a Pod: no runner's Pod to look for
	}
	image := f.image
	if image == "" {
		if os.Getenv(podNameEnv) == "" || ns == "" {
			return nil, fmt.Errorf("--function-runner=pod outside a Pod (no %s and %s) needs --function-wrapper-image", podNameEnv, podNamespaceEnv)
		}
		self, err := client.CoreV1().Pods(ns).Get(ctx, identity, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading this Pod's image for the function Pods (or give --function-wrapper-image): %w", err)
		}
		image = self.Spec.Containers[0].Image
	}
	r, err := podrunner.New(client, podrunner.Options{Namespace: f.namespace, WrapperImage: image, Identity: identity, IdentityNamespace: ns, Timeout: f.timeout, IdleTTL: f.idleTTL})
	if err != nil {
		return nil, err
	}
	go func() { _ = r.Start(ctx) }()
	return r, nil
}
