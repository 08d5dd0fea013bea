package lab

import (
	"math"
	"time"

	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// MonteCarloDecentralized estimates the violation probability by running the
// decentralized algorithm in the simulator, runs times, and counting the
// runs in which mutual exclusion fails. It needs N/2 < m < N (m = N leaves
// no coordinator outside the holder's own process) and returns NaN and 0
// otherwise.
//
// Each run: p0 acquires and gets its grants from coordinators p1..pm (its
// own request to itself travels a slower link, so its own grant comes late
// and goes back, like the surplus ones from p(m+1)..p(N−1)); it holds the
// critical section from 2 ms to 20 ms. At 5 ms each of p1..pm, with
// probability p, crashes and recovers at 6 ms with a fresh state: a reset
// coordinator. At 7 ms p(N−1) acquires; it enters at once if it can
// collect m grants, else after p0 leaves, and leaves 1 ms later. The run
// counts as a violation if p(N−1) enters while p0 is inside.
//
// The runs are consecutive 100 ms windows of one simulation (a fresh
// simulator per run would cost more than the run); every window starts
// with all coordinators free and all clients idle, so the runs are
// independent. The resets are drawn from seed and the run number, and the
// simulation is seeded with seed, so the result is reproducible.
//
// It should agree with ExactViolation(N, m, p) within sampling error — and
// not with SeedViolation where the two differ (N = 5, m = 4, p = 0.3: the
// exact 0.084 against the textbook formula's 0.348). For probabilities
// like those of Tanenbaum & van Steen's table, 1e-15 and below, it finds
// nothing: 0 hits.
func MonteCarloDecentralized(N, m int, p float64, runs int, seed uint64) (estimate float64, hits int) {
	if N < 1 || 2*m <= N || m >= N || !(p >= 0 && p <= 1) || runs < 1 {
		return math.NaN(), 0
	}
	var faults []sim.Fault
	for run := range runs {
		draw := decSplitMix{state: seed ^ uint64(run)*0xd1b54a32d192ed03}
		base := time.Duration(run) * decMCWindow
		for c := 1; c <= m; c++ {
			if draw.float64() < p {
				faults = append(faults,
					sim.Fault{Kind: sim.Crash, Node: proc.ID(c), At: base + decMCResetAt},
					sim.Fault{Kind: sim.Recover, Node: proc.ID(c), At: base + decMCBackAt})
			}
		}
	}
	w := &decMCLoad{second: proc.ID(N - 1), violated: make([]int8, runs)}
	s, err := sim.New(sim.Config{
		Nodes: N,
		Seed:  seed,
		New:   mutex.NewDecentralized(m),
		Network: sim.Network{
			Latency: sim.Constant(time.Millisecond),
			Links:   []sim.Link{{From: 0, To: 0, Latency: sim.Constant(1500 * time.Microsecond)}},
		},
		Faults:   faults,
		Workload: w,
	})
	if err != nil {
		return math.NaN(), 0 // cannot happen: the configuration is fixed
	}
	if _, err := s.Run(); err != nil || w.stray {
		return math.NaN(), 0 // cannot happen: every run ends inside its window
	}
	for _, v := range w.violated {
		switch v {
		case 0:
			return math.NaN(), 0 // the second client never entered
		case 2:
			hits++
		}
	}
	return float64(hits) / float64(runs), hits
}

// The Monte Carlo run's schedule, from the start of its window.
const (
	decMCWindow  = 100 * time.Millisecond
	decMCResetAt = 5 * time.Millisecond  // the holder's coordinators may crash
	decMCBackAt  = 6 * time.Millisecond  // and recover, fresh
	decMCAskAt   = 7 * time.Millisecond  // the second client acquires
	decMCHold    = 18 * time.Millisecond // the holder's critical section
)

// decMCLoad is the Monte Carlo runs' workload: in every window p0 acquires
// at once and releases decMCHold after it entered, and the second client
// acquires at decMCAskAt and releases 1 ms after it entered.
type decMCLoad struct {
	second       proc.ID
	holderInside bool
	violated     []int8 // per run: 0 not entered yet, 1 entered alone, 2 entered while p0 was inside
	stray        bool   // an entry outside its window or twice in one
}

func (w *decMCLoad) Init(c sim.Control) {
	for run := range w.violated {
		base := time.Duration(run) * decMCWindow
		c.Schedule(base, 0, mutex.Acquire{})
		c.Schedule(base+decMCAskAt, w.second, mutex.Acquire{})
	}
}

func (w *decMCLoad) Observe(c sim.Control, node proc.ID, o proc.Output) {
	switch o.(type) {
	case mutex.Enter:
		if node != w.second {
			w.holderInside = true
			c.Schedule(decMCHold, node, mutex.Release{})
			return
		}
		run := int(c.Now() / decMCWindow)
		if run >= len(w.violated) || w.violated[run] != 0 || c.Now()%decMCWindow > decMCWindow-2*time.Millisecond {
			w.stray = true
			return
		}
		w.violated[run] = 1
		if w.holderInside {
			w.violated[run] = 2
		}
		c.Schedule(time.Millisecond, node, mutex.Release{})
	case mutex.Exit:
		if node == 0 {
			w.holderInside = false
		}
	}
}

// decSplitMix is SplitMix64, a tiny deterministic generator for the reset
// draws (the algorithm packages use no global or wall-clock randomness).
type decSplitMix struct{ state uint64 }

func (r *decSplitMix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float64 is uniform in [0, 1).
func (r *decSplitMix) float64() float64 { return float64(r.next()>>11) / (1 << 53) }
