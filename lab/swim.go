package lab

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// SwimLoad is the SWIM workload: unless the scenario schedules faults of
// its own, it crashes Crashes members, each just
// before the start of a protocol period (at k·T − T/100, the members'
// periods being aligned on multiples of T), so that the time to the first
// suspicion measures Das et al.'s e/(e−1)·T; it pauses one other member
// for PauseFor from period 10 (a slow member, the case Lifeguard is
// about); and it ends the run after Periods periods. It watches the
// outputs as they happen, so its metrics need no trace.
type SwimLoad struct {
	Params epidemic.Params
	// Crashes is how many members crash; 0 means n/50, at least 2 and
	// at most 20 (every member holds every crashed one dead, and every
	// verdict is piggybacked λ·log n times by every member: with 2000
	// crashes a 10⁵-member run would carry 2·10⁸ facts and little else);
	// at most n/2.
	Crashes int
	// PauseFor is how long one member is paused; 0 means 3 periods,
	// negative none.
	PauseFor time.Duration
	// Periods is the run's length in periods; 0 means 60.
	Periods int

	n         int
	faulted   bool // the faults are the workload's (Faults was called)
	crashAt   map[proc.ID]time.Duration
	paused    proc.ID
	suspected map[proc.ID]time.Duration // crashed member → first suspicion after its crash
	declared  map[proc.ID]time.Duration // crashed member → first dead after its crash
	falsePos  map[proc.ID]bool          // members never crashed that someone declared dead
	done      bool
}

// NewSwimLoad is the default SWIM workload under params p.
func NewSwimLoad(p epidemic.Params) *SwimLoad { return &SwimLoad{Params: p} }

func (w *SwimLoad) periods() int { return cmp.Or(w.Periods, 60) }

func sortedKeys(m map[proc.ID]time.Duration) []proc.ID {
	ks := make([]proc.ID, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Faults are the crashes and the pause of a run of n members with seed:
// the crashes spread over periods 5 .. Periods−30 (enough time left for
// the suspicion timeout and the dissemination of the verdict).
func (w *SwimLoad) Faults(n int, seed uint64) []sim.Fault {
	T := period(w.Params)
	rng := rand.New(rand.NewPCG(seed, 0x7377696d)) // "swim"
	c := w.Crashes
	if c == 0 {
		c = max(2, min(n/50, 20))
	}
	c = min(c, n/2)
	w.n, w.faulted = n, true
	w.crashAt = map[proc.ID]time.Duration{}
	last := max(w.periods()-30, 6)
	var fs []sim.Fault
	perm := rng.Perm(n)
	for _, p := range perm[:c] {
		at := time.Duration(5+rng.IntN(last-5))*T - T/100
		w.crashAt[proc.ID(p)] = at
		fs = append(fs, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: at})
	}
	w.paused = proc.None
	if pf := w.pauseFor(); pf > 0 && c < n {
		w.paused = proc.ID(perm[c])
		fs = append(fs, sim.Fault{Kind: sim.Pause, Node: w.paused, At: 10*T + T/3, Until: 10*T + T/3 + pf})
	}
	return fs
}

func (w *SwimLoad) pauseFor() time.Duration {
	if w.PauseFor == 0 {
		return 3 * period(w.Params)
	}
	return w.PauseFor
}

// Init schedules the end of the run.
func (w *SwimLoad) Init(c sim.Control) {
	w.suspected = map[proc.ID]time.Duration{}
	w.declared = map[proc.ID]time.Duration{}
	w.falsePos = map[proc.ID]bool{}
	if w.crashAt == nil {
		w.crashAt = map[proc.ID]time.Duration{}
		w.n = c.N()
	}
	c.After(time.Duration(w.periods())*period(w.Params)-c.Now(), func() { w.done = true })
}

// Observe records first suspicions and verdicts.
func (w *SwimLoad) Observe(c sim.Control, _ proc.ID, o proc.Output) {
	now := c.Now()
	switch o := o.(type) {
	case epidemic.Suspect:
		if at, ok := w.crashAt[o.Member]; ok && now >= at {
			if _, seen := w.suspected[o.Member]; !seen {
				w.suspected[o.Member] = now
			}
		}
	case epidemic.Dead:
		if o.Left {
			return
		}
		at, ok := w.crashAt[o.Member]
		switch {
		case ok && now >= at:
			if _, seen := w.declared[o.Member]; !seen {
				w.declared[o.Member] = now
			}
		case !ok || now < at:
			w.falsePos[o.Member] = true
		}
	}
}

// Done ends the run after the periods.
func (w *SwimLoad) Done(func(proc.ID) bool) bool { return w.done }

// swimMetrics measures a SWIM run:
//
//   - first_detection_periods: the mean over the crashed members of the
//     time from the crash to the first suspicion of it, in periods (Das et
//     al.'s e/(e−1) for large n);
//   - first_declared_periods: the same to the first member declaring it
//     dead (the detection plus the suspicion timeout);
//   - detected: the fraction of the crashed members ever suspected;
//   - messages_per_member_per_period: every message sent, over the
//     periods each member was up (Das et al.: constant in n);
//   - false_positives: the members that never crashed and were declared
//     dead by some member (the paused one included).
func swimMetrics(f Finished) (map[string]float64, map[string]*float64) {
	m := map[string]float64{}
	th := map[string]*float64{}
	w, _ := f.Workload.(*SwimLoad)
	if w == nil || w.suspected == nil {
		return m, th
	}
	T := float64(period(w.Params))
	if !w.faulted {
		// A scenario's own faults: the workload does not know when
		// whom crashed; the messages only, over all the member-periods.
		m["messages_per_member_per_period"] = float64(f.Result.Sent) / float64(f.Nodes) / float64(w.periods())
		return m, th
	}
	var sum, dsum float64
	for _, p := range sortedKeys(w.suspected) { // sorted: the same sum every time
		sum += float64(w.suspected[p]-w.crashAt[p]) / T
	}
	for _, p := range sortedKeys(w.declared) {
		dsum += float64(w.declared[p]-w.crashAt[p]) / T
	}
	if len(w.suspected) > 0 {
		m["first_detection_periods"] = sum / float64(len(w.suspected))
	}
	if len(w.declared) > 0 {
		m["first_declared_periods"] = dsum / float64(len(w.declared))
	}
	if len(w.crashAt) > 0 {
		m["detected"] = float64(len(w.suspected)) / float64(len(w.crashAt))
	}
	// Member-periods: every member's periods, less those after its crash.
	P := float64(w.periods())
	up := float64(f.Nodes) * P
	for _, p := range sortedKeys(w.crashAt) {
		up -= P - float64(w.crashAt[p])/T
	}
	m["messages_per_member_per_period"] = float64(f.Result.Sent) / up
	m["false_positives"] = float64(len(w.falsePos))
	th["first_detection_periods"] = ptr(epidemic.FirstDetectionPeriods(f.Nodes))
	th["messages_per_member_per_period"] = ptr(2)
	th["false_positives"] = ptr(0)
	return m, th
}
