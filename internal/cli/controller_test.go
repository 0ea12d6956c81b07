package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestControllerFlags_gitObjectCacheSize: the cache size is auto (the
// default: 0, sized by the manager from the fleet) or a quantity;
// anything else, or nothing to cache in, is refused naming the flag.
func TestControllerFlags_gitObjectCacheSize(t *testing.T) {
	g := NewWithT(t)
	parse := func(args ...string) (*ControllerOptions, error) {
		cmd := NewCmdController(Streams{})
		if err := cmd.Flags().Parse(append([]string{"--cache-dir", t.TempDir()}, args...)); err != nil {
			return nil, err
		}
		// The command keeps its options to itself: complete a set read
		// back from the parsed flags.
		o := &ControllerOptions{}
		o.gitObjectCache, _ = cmd.Flags().GetString("git-object-cache-size")
		o.readableKinds, _ = cmd.Flags().GetStringSlice("readable-kinds")
		o.Manager.CacheDir, _ = cmd.Flags().GetString("cache-dir")
		o.Manager.SyncPeriod, _ = cmd.Flags().GetDuration("sync-period")
		return o, o.Complete()
	}
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
