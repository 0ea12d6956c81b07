package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

// What the CLI does not know is an error that says what was meant, never
// the help with exit 0: an unknown command of a group, and an unknown
// flag; porchctl's names work as aliases.
func TestStrict(t *testing.T) {
	g := NewWithT(t)
	_, err := run("rpkg", "aprove", "x")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown command "aprove" for "scion rpkg"`)))
	g.Expect(err).To(MatchError(ContainSubstring("Did you mean this?\n\tapprove")))
	_, err = run("pvs", "expnd")
	g.Expect(err).To(MatchError(ContainSubstring("Did you mean this?\n\texpand")))
	_, err = run("rpkg", "condition", "sett")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown command "sett" for "scion rpkg condition"`)))
	_, err = run("rpkg", "frobnicate")
	g.Expect(err).To(MatchError(ContainSubstring("Run 'scion rpkg --help' for the commands")))

	_, err = run("rpkg", "get", "--repo", "x")
	g.Expect(err).To(MatchError(ContainSubstring("unknown flag: --repo\n\nDid you mean --repository?")))
	_, err = run("rpkg", "get", "--lifecyle", "Draft")
	g.Expect(err).To(MatchError(ContainSubstring("Did you mean --lifecycle?")))
	_, err = run("rpkg", "get", "--kubeconfg", "x")
	g.Expect(err).To(MatchError(ContainSubstring("Did you mean --kubeconfig?")), "inherited flags too")
	_, err = run("rpkg", "get", "--zzzzzz")
	g.Expect(err).To(MatchError("unknown flag: --zzzzzz (scion rpkg get --help lists the flags)"))

	// A group with nothing asked prints its help, as before.
	out, err := run("rpkg")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Available Commands:"))

	// porchctl's names.
	_, err = run("rpkg", "del")
	g.Expect(err).To(MatchError(ContainSubstring("requires at least 1 arg(s)")), "del is delete")
	root := NewRootCommand(Streams{})
	get, _, err := root.Find([]string{"rpkg", "get"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get.Flags().Lookup("name")).NotTo(BeNil(), "rpkg get --name, as porchctl")
}
