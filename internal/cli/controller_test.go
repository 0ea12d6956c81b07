package cli

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/store"
)

// parseControllerFlags parses args as scion controller does and
// completes the options: the command keeps its options to itself, so a
// set is read back from the parsed flags.
func parseControllerFlags(t *testing.T, args ...string) (*ControllerOptions, error) {
	cmd := NewCmdController(Streams{})
	if err := cmd.Flags().Parse(append([]string{"--cache-dir", t.TempDir()}, args...)); err != nil {
		return nil, err
	}
	o := &ControllerOptions{}
	o.gitObjectCache, _ = cmd.Flags().GetString("git-object-cache-size")
	o.readableKinds, _ = cmd.Flags().GetStringSlice("readable-kinds")
	o.limits.maxFetch, _ = cmd.Flags().GetString("git-max-fetch-size")
	o.limits.maxPackage, _ = cmd.Flags().GetString("max-package-size")
	o.limits.maxFile, _ = cmd.Flags().GetString("max-file-size")
	o.limits.maxFiles, _ = cmd.Flags().GetInt("max-package-files")
	o.Manager.CacheDir, _ = cmd.Flags().GetString("cache-dir")
	o.Manager.SyncPeriod, _ = cmd.Flags().GetDuration("sync-period")
	o.Manager.ClusterPoll, _ = cmd.Flags().GetDuration("cluster-poll")
	o.Manager.FunctionImages, _ = cmd.Flags().GetStringSlice("function-images")
	o.functionRunner.runner, _ = cmd.Flags().GetString("function-runner")
	o.functionRunner.timeout, _ = cmd.Flags().GetDuration("function-timeout")
	o.functionRunner.idleTTL, _ = cmd.Flags().GetDuration("function-pod-idle-ttl")
	return o, o.Complete()
}

// --function-images: none by default (only builtin functions run); images
// and prefixes ending in "*" are taken, a "*" elsewhere or an empty
// pattern refused naming the flag.
func TestControllerFlags_functionImages(t *testing.T) {
	g := NewWithT(t)
	o, err := parseControllerFlags(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.FunctionImages).To(BeEmpty())
	o, err = parseControllerFlags(t, "--function-images", "registry.example.com/fns/*,ghcr.io/acme/fn:v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.FunctionImages).To(Equal([]string{"registry.example.com/fns/*", "ghcr.io/acme/fn:v1"}))
	for _, bad := range []string{"registry.example.com/*/fn", "a,,b", "*/fn*"} {
		_, err = parseControllerFlags(t, "--function-images", bad)
		g.Expect(err).To(MatchError(ContainSubstring("--function-images")), bad)
	}
}

// TestControllerFlags_gitObjectCacheSize: the cache size is auto (the
// default: 0, sized by the manager from the fleet) or a quantity;
// anything else, or nothing to cache in, is refused naming the flag.
func TestControllerFlags_gitObjectCacheSize(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (*ControllerOptions, error) { return parseControllerFlags(t, args...) }
	o, err := parse()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.GitObjectCacheSize).To(BeZero())
	o, err = parse("--git-object-cache-size", "auto")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.GitObjectCacheSize).To(BeZero())
	o, err = parse("--git-object-cache-size", "1Mi")
	g.Expect(err).NotTo(HaveOccurred())
	o, err = parse("--git-object-cache-size", "1Gi")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.GitObjectCacheSize).To(Equal(int64(1 << 30)))
	for _, bad := range []string{"0", "-1Mi", "lots", "Auto", "", "64", "1023Ki"} {
		_, err = parse("--git-object-cache-size", bad)
		g.Expect(err).To(MatchError(ContainSubstring("--git-object-cache-size")), bad)
	}
}

// The limits: store.DefaultLimits unless set; quantities of at least 1Ki
// and a file count of at least 1, else refused naming the flag.
func TestControllerFlags_limits(t *testing.T) {
	g := NewWithT(t)
	o, err := parseControllerFlags(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.Limits).To(Equal(store.DefaultLimits), "the defaults")
	o, err = parseControllerFlags(t, "--git-max-fetch-size", "2Gi", "--max-package-size", "8Mi", "--max-package-files", "500", "--max-file-size", "512Ki")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Manager.Limits).To(Equal(store.Limits{FetchBytes: 2 << 30, PackageBytes: 8 << 20, PackageFiles: 500, FileBytes: 512 << 10}))
	for _, bad := range [][]string{
		{"--git-max-fetch-size", "lots"}, {"--max-package-size", "64"}, {"--max-file-size", "-1Mi"}, {"--max-package-files", "0"},
	} {
		_, err = parseControllerFlags(t, bad...)
		g.Expect(err).To(MatchError(ContainSubstring(bad[0])), bad[1])
	}
}

// --function-runner: local by default, pod taken, anything else refused
// naming the flag; negative durations refused.
func TestControllerFlags_functionRunner(t *testing.T) {
	g := NewWithT(t)
	o, err := parseControllerFlags(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.functionRunner.runner).To(Equal("local"))
	_, err = parseControllerFlags(t, "--function-runner", "pod", "--function-timeout", "20s", "--function-pod-idle-ttl", "1m")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = parseControllerFlags(t, "--function-runner", "docker")
	g.Expect(err).To(MatchError(`--function-runner "docker": want local or pod`))
	_, err = parseControllerFlags(t, "--function-timeout", "-1s")
	g.Expect(err).To(MatchError(ContainSubstring("must not be negative")))
}
