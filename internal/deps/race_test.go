//go:build race

package deps

// raceEnabled: the race detector slows the solver about tenfold, so the
// brute-force comparison runs fewer seeds under it (the fuzz target and the
// plain run cover more).
const raceEnabled = true
