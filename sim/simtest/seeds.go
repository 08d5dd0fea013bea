package simtest

import (
	"strconv"
	"sync/atomic"
	"testing"
)

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

// Sweep runs f for the seeds from first to last, each a parallel subtest
// of t named by its seed (TestX/seeds/17: go test -run 'TestX/seeds/17$'
// replays that one), and returns, when every one has ended, whether all
// of them ran (a -run pattern may have picked some). The runs are
// independent and each is single-threaded, so they fill every core the
// -parallel flag allows, and a sweep that starts last does not run alone
// on one core while the others sit idle. f must share nothing between
// seeds but what it only reads; a sweep sums its figures after Sweep
// returns, from a slot per seed, and judges the sums only if every seed
// ran:
//
//	lost := make([]int, n+1)
//	if !simtest.Sweep(t, 1, n, func(t *testing.T, seed uint64) { ...; lost[seed] = ... }) {
//		return
//	}
func Sweep(t *testing.T, first, last uint64, f func(t *testing.T, seed uint64)) (all bool) {
	t.Helper()
	var ran atomic.Uint64
	t.Run("seeds", func(t *testing.T) {
		for seed := first; seed <= last; seed++ {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				ran.Add(1)
				f(t, seed)
			})
		}
	})
	return ran.Load() == last-first+1
}
