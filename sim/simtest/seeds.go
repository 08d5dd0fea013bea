package simtest

import "testing"

// Seeds is how many seeded schedules a sweep runs: full normally, quick
// with -short or under the race detector. The simulator runs a whole
// cluster on one goroutine, so the race detector finds nothing in a
// sweep and only slows it five- to tenfold; the race run keeps a few
// schedules (so the sweep's own code is exercised under it), and the full
// sweeps run without it (CI runs them in a step of their own:
// go test -run 'Sweep|UnderFaults' ./...).
func Seeds(full, quick int) int {
	if testing.Short() || RaceEnabled {
		return quick
	}
	return full
}

// NotUnderRace skips a statistical test of large simulated runs (10⁴
// processes, dozens of runs) under the race detector, where it takes
// minutes and can find no race: the simulator is single-threaded. CI runs
// every package that calls it again without the detector, so the test is
// never left skipped there; run it yourself with go test, without -race.
func NotUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("a statistical test of large simulated runs: it runs without -race (CI runs it so)")
	}
}
