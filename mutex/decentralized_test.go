package mutex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

var decDefault = NewDecentralized(0)

// Without failures, ME1 and ME2 hold over seed sweeps with contention and
// jittery, reordering links (a tenth of the messages overtake others).
func TestDecentralizedSweep(t *testing.T) {
	t.Parallel()
	net := mkJitter(false)
	net.Reorder = 0.1
	seeds := 15
	if testing.Short() {
		seeds = 5
	}
	for _, n := range []int{1, 3, 5, 8} {
		var sw mkSweep
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			tr, res := mkRun(t, n, seed, decDefault, net, nil, mkLoad(3, time.Duration(n)*4*time.Millisecond))
			checks := []string{"ME1", "ME2"}
			if n <= 3 {
				checks = append(checks, "ME3") // happened-before is costly to compute
			}
			rs := mkCheck(t, tr, checks...)
			for _, name := range []string{"ME1", "ME2"} {
				if !rs[name].OK() {
					t.Fatalf("n = %d seed %d: %s", n, seed, rs[name].Counterexample(tr))
				}
			}
			if got := mkCount(tr, "exit"); got != 3*n {
				t.Fatalf("n = %d seed %d: %d exits, want %d", n, seed, got, 3*n)
			}
			sw.add(seed, tr, res, rs)
		}
		t.Logf("decentralized n = %d: %d runs, %.1f messages per entry", n, sw.runs, sw.perEntry())
		if n == 3 {
			t.Logf("first-come grants serve requests out of happened-before order (ME3) in %d of %d runs; the first:\n%s",
				sw.broke["ME3"], sw.runs, sw.example["ME3"])
			if sw.broke["ME3"] == 0 {
				t.Errorf("no ME3 violation in %d runs", sw.runs)
			}
		}
	}
}

// decKinds sums the messages of every kind over a run.
func decKinds(res sim.Result) map[string]int64 {
	k := map[string]int64{}
	for _, c := range res.ByKind {
		k[c.Kind] += c.Count
	}
	return k
}

// The message count, against Tanenbaum & van Steen's 2mk + m. This
// implementation asks all N coordinators per attempt (N requests, N
// replies) and sends one RELEASE per grant it received (returned after a
// lost attempt, returned as surplus, or on leaving), plus the notices:
// 2Nk + G + notices. Without contention k = 1 and all N grant: 3N per
// entry.
func TestDecentralizedMessageCount(t *testing.T) {
	for _, n := range []int{1, 2, 5, 8} {
		var script sim.Script
		for id := range n {
			script = append(script, sim.TimedInput{At: time.Duration(id) * 10 * time.Millisecond, Node: proc.ID(id), Input: Acquire{}})
		}
		tr, res := mkRun(t, n, 1, decDefault, sim.Network{}, nil, sim.Combine{script, &closedLoop{Hold: sim.Constant(time.Millisecond)}})
		if got := mkCount(tr, "exit"); got != n {
			t.Fatalf("n = %d: %d exits, want %d", n, got, n)
		}
		if res.Sent != int64(3*n*n) {
			t.Errorf("n = %d uncontended: %d messages for %d entries, want 3N per entry = %d (%v)", n, res.Sent, n, 3*n*n, res.ByKind)
		}
	}
	for _, n := range []int{5, 8} {
		m := n/2 + 1
		var entries int
		total := map[string]int64{}
		for seed := uint64(1); seed <= 10; seed++ {
			tr, res := mkRun(t, n, seed, decDefault, mkJitter(false), nil, mkLoad(4, 2*time.Millisecond))
			entries += mkCount(tr, "enter")
			k := decKinds(res)
			if k["grant"]+k["deny"] != k["request"] || k["release"] != k["grant"] ||
				res.Sent != 2*k["request"]+k["grant"]+k["notice"] || k["request"]%int64(n) != 0 {
				t.Fatalf("n = %d seed %d: counts %v break 2Nk + G + notices", n, seed, k)
			}
			for kind, c := range k {
				total[kind] += c
			}
		}
		e := float64(entries)
		attempts := float64(total["request"]) / float64(n) / e // k per entry
		grants := float64(total["grant"]) / e
		notices := float64(total["notice"]) / e
		perEntry := 2*float64(n)*attempts + grants + notices
		t.Logf("decentralized n = %d, m = %d, contended: k = %.2f attempts per entry, G = %.2f grants, %.2f notices: "+
			"2Nk + G + notices = %.1f messages per entry; the textbook's 2mk + m with this k = %.1f",
			n, m, attempts, grants, notices, perEntry, 2*float64(m)*attempts+float64(m))
	}
}

// decResetRun is the violation the textbook warns about: N = 5, m = 3. p0
// gets its grants from p1, p2, p3 (its own request travels a slower link)
// and holds the critical section from 2 to 20 ms; p1 and p2 crash at 5 ms
// and recover at 6 ms with no memory of their grants; p4 asks at 7 ms and
// gets grants from p0, p4 and a reset coordinator: m of them.
func decResetRun(t *testing.T, resets ...proc.ID) (*trace.Trace, map[string]check.Result) {
	t.Helper()
	ms := time.Millisecond
	var faults []sim.Fault
	for _, c := range resets {
		faults = append(faults, sim.Fault{Kind: sim.Crash, Node: c, At: 5 * ms}, sim.Fault{Kind: sim.Recover, Node: c, At: 6 * ms})
	}
	script := sim.Script{{At: 0, Node: 0, Input: Acquire{}}, {At: 7 * ms, Node: 4, Input: Acquire{}}}
	hold := &closedLoop{Hold: sim.Constant(18 * ms)}
	net := sim.Network{Latency: sim.Constant(ms), Links: []sim.Link{{From: 0, To: 0, Latency: sim.Constant(1500 * time.Microsecond)}}}
	tr, _ := mkRun(t, 5, 1, decDefault, net, faults, sim.Combine{script, hold})
	return tr, mkCheck(t, tr, "ME1", "ME2")
}

func TestDecentralizedResetBreaksME1(t *testing.T) {
	tr, rs := decResetRun(t, 1, 2)
	if rs["ME1"].Status != check.Violated || !strings.Contains(rs["ME1"].Detail, "p4 entered") {
		t.Fatalf("ME1 = %v, want p4 entering while p0 is inside", rs["ME1"])
	}
	t.Logf("two coordinators reset during p0's critical section:\n%s", rs["ME1"].Counterexample(tr))
	if !rs["ME2"].OK() {
		t.Errorf("ME2: %v", rs["ME2"])
	}
	// Without the resets, p4 waits for p0.
	tr, rs = decResetRun(t)
	if !rs["ME1"].OK() || !rs["ME2"].OK() || mkCount(tr, "exit") != 2 {
		t.Errorf("no resets: ME1 %v, ME2 %v, %d exits", rs["ME1"], rs["ME2"], mkCount(tr, "exit"))
	}
}

// Random coordinator resets (1 ms crashes) during a contended workload
// break ME1 in many runs, and nothing else: p0 and p1 are the clients, p2,
// p3 and p4 the coordinators that reset, a few times each. A request or
// reply lost to a crash costs the attempt, not the request (ME2 holds).
func TestDecentralizedResetsBreakME1(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	var sw mkSweep
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		var faults []sim.Fault
		for c := proc.ID(2); c < 5; c++ {
			for range 3 {
				at := time.Duration(r.Int64N(int64(60 * time.Millisecond)))
				faults = append(faults, sim.Fault{Kind: sim.Crash, Node: c, At: at}, sim.Fault{Kind: sim.Recover, Node: c, At: at + time.Millisecond})
			}
		}
		load := &closedLoop{Clients: 2, Rounds: 5, Think: sim.Uniform{Max: 4 * time.Millisecond}, Hold: sim.Uniform{Min: 2 * time.Millisecond, Max: 10 * time.Millisecond}}
		tr, res := mkRun(t, 5, seed, decDefault, mkJitter(false), faults, load)
		rs := mkCheck(t, tr, "ME1", "ME2")
		if !rs["ME2"].OK() {
			t.Fatalf("seed %d: %s", seed, rs["ME2"].Counterexample(tr))
		}
		sw.add(seed, tr, res, rs)
	}
	t.Logf("decentralized n = 5, m = 3, three 1 ms resets of each of p2..p4 per run: ME1 broken in %d of %d runs (first seed %d)",
		sw.broke["ME1"], sw.runs, sw.first["ME1"])
	if sw.broke["ME1"] < sw.runs/10 {
		t.Errorf("ME1 broken in only %d of %d runs with resets", sw.broke["ME1"], sw.runs)
	}
}

// A client that crashes while holding grants has forgotten them: p0 holds
// p1, p2 and p3's grants (its own request travels a slow link) and crashes
// at 3 ms; recovered, it does not ask again. p4 cannot collect m = 3 of the
// two other coordinators until, the grants being 50 ms old, a coordinator
// that denies p4 asks p0 about its grant, and p0 relinquishes it.
func TestDecentralizedClientCrashRecovers(t *testing.T) {
	ms := time.Millisecond
	script := sim.Script{{At: 0, Node: 0, Input: Acquire{}}, {At: 5 * ms, Node: 4, Input: Acquire{}}}
	faults := []sim.Fault{{Kind: sim.Crash, Node: 0, At: 3 * ms}, {Kind: sim.Recover, Node: 0, At: 4 * ms}}
	net := sim.Network{Latency: sim.Constant(ms), Links: []sim.Link{{From: 0, To: 0, Latency: sim.Constant(1500 * time.Microsecond)}}}
	tr, res := mkRun(t, 5, 1, decDefault, net, faults, sim.Combine{script, &closedLoop{Hold: sim.Constant(10 * ms)}})
	rs := mkCheck(t, tr, "ME1", "ME2")
	if !rs["ME1"].OK() || !rs["ME2"].OK() || mkCount(tr, "exit") != 1 {
		t.Fatalf("ME1 %v; ME2 %v; %d exits, want p4's", rs["ME1"], rs["ME2"], mkCount(tr, "exit"))
	}
	if res.Messages("inquire") == 0 || res.Messages("relinquish") != 3 {
		t.Errorf("%d inquiries and %d relinquishes, want some and 3 (one per stranded grant)", res.Messages("inquire"), res.Messages("relinquish"))
	}
	if res.VirtualTime < 50*ms || res.VirtualTime > 150*ms {
		t.Errorf("the run ended at %v, want soon after the grants are 50 ms old", res.VirtualTime)
	}
}

// Random crash-recover schedules, clients included, inside the
// algorithm's failure model: ME2 holds (ME1 does not, as shown above).
func TestDecentralizedChaosME2(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	chaos := sim.Chaos{Horizon: 30 * time.Millisecond, Crashes: 2, Recover: true}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		faults, _ := chaos.Faults(5, seed)
		tr, res := mkRun(t, 5, seed, decDefault, mkJitter(false), faults, mkLoad(4, 4*time.Millisecond))
		if rs := mkCheck(t, tr, "ME2"); !rs["ME2"].OK() {
			t.Fatalf("seed %d: %s", seed, rs["ME2"].Counterexample(tr))
		}
		if res.Stop != sim.StopQuiescent {
			t.Fatalf("seed %d: the run ended by %s at %v", seed, res.Stop, res.VirtualTime)
		}
	}
}

// The notice lets a client that is backing off retry as soon as the
// holder leaves: p1 asks while p0 holds for 100 ms, loses attempt after
// attempt (backoffs of up to 64 ms), and still enters within a few message
// times of p0's exit.
func TestDecentralizedNoticeEndsBackoff(t *testing.T) {
	ms := time.Millisecond
	for seed := uint64(1); seed <= 20; seed++ {
		script := sim.Script{{At: 0, Node: 0, Input: Acquire{}}, {At: 3 * ms, Node: 1, Input: Acquire{}}}
		tr, res := mkRun(t, 5, seed, decDefault, sim.Network{}, nil, sim.Combine{script, &closedLoop{Hold: sim.Constant(100 * ms)}})
		var exit0, enter1 int64 = -1, -1
		for _, e := range tr.Events {
			if e.Kind == trace.Output && e.Type == "exit" && e.Node == 0 {
				exit0 = e.Time
			}
			if e.Kind == trace.Output && e.Type == "enter" && e.Node == 1 {
				enter1 = e.Time
			}
		}
		if exit0 < 0 || enter1 < exit0 {
			t.Fatalf("seed %d: p0 left at %d, p1 entered at %d", seed, exit0, enter1)
		}
		if d := time.Duration(enter1 - exit0); d > 4*ms {
			t.Errorf("seed %d: p1 entered %v after p0 left, want at most 4 message times (notices: %d)", seed, d, res.Messages("notice"))
		}
	}
}

// decWaits runs a contended workload and returns the waits from Acquire to
// Enter, sorted, and the attempts per entry.
func decWaits(t *testing.T, newP func(proc.ID, int) proc.Process, n int, think time.Duration, seeds int) ([]time.Duration, float64) {
	var waits []time.Duration
	var requests int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		tr, res := mkRun(t, n, seed, newP, mkJitter(false), nil, mkLoad(4, think))
		requests += res.Messages("request")
		asked := map[int32]int64{}
		for _, e := range tr.Events {
			switch {
			case e.Kind == trace.Input && e.Type == "acquire":
				asked[e.Node] = e.Time
			case e.Kind == trace.Output && e.Type == "enter":
				waits = append(waits, time.Duration(e.Time-asked[e.Node]))
			}
		}
	}
	slices.Sort(waits)
	return waits, float64(requests) / float64(n) / float64(len(waits))
}

// What the notices buy: shorter long waits (the slowest 1% of entries and
// the slowest one), for more attempts under saturation.
func TestDecentralizedNoticesShortenLongWaits(t *testing.T) {
	t.Parallel()
	seeds := 12
	if testing.Short() {
		seeds = 6
	}
	for _, c := range []struct {
		n     int
		think time.Duration
	}{{5, 12 * time.Millisecond}} {
		with, kWith := decWaits(t, decDefault, c.n, c.think, seeds)
		without, kWithout := decWaits(t, newDecentralized(0, false), c.n, c.think, seeds)
		p99 := func(w []time.Duration) time.Duration { return w[len(w)*99/100] }
		mean := func(w []time.Duration) time.Duration {
			var s time.Duration
			for _, x := range w {
				s += x
			}
			return s / time.Duration(len(w))
		}
		t.Logf("n = %d, think ≤ %v: with notices mean %v, p99 %v, max %v, %.2f attempts; without: mean %v, p99 %v, max %v, %.2f attempts",
			c.n, c.think, mean(with).Round(time.Microsecond), p99(with).Round(time.Microsecond), with[len(with)-1].Round(time.Microsecond), kWith,
			mean(without).Round(time.Microsecond), p99(without).Round(time.Microsecond), without[len(without)-1].Round(time.Microsecond), kWithout)
		if p99(with) >= p99(without) {
			t.Errorf("n = %d: notices do not shorten the slowest 1%% of waits: %v with, %v without", c.n, p99(with), p99(without))
		}
	}
}

func TestDecentralizedQuorumChoice(t *testing.T) {
	for _, c := range []struct{ m, n, want int }{{0, 1, 1}, {0, 4, 3}, {0, 5, 3}, {4, 5, 4}, {5, 5, 5}, {2, 5, 3}, {9, 5, 5}} {
		if got := NewDecentralized(c.m)(0, c.n).(*decentralized).m; got != c.want {
			t.Errorf("NewDecentralized(%d) with N = %d needs %d grants, want %d", c.m, c.n, got, c.want)
		}
	}
	a := Decentralized(4)
	for n, ok := range map[int]bool{4: true, 5: true, 7: true, 3: false, 8: false} {
		if err := a.Validate(n); (err == nil) != ok {
			t.Errorf("Decentralized(4).Validate(%d) = %v", n, err)
		}
	}
	if d := Decentralized(0); d.Validate != nil || d.Name != "decentralized" || d.Family != "mutex" {
		t.Errorf("the default entry: %+v", d)
	}
	if d := Decentralized(4); d.Family != "mutex" || d.Breaks == nil || len(d.Checks) == 0 {
		t.Errorf("Decentralized(4) lacks the family's defaults: %+v", d)
	}
	// Neither entry carries the application's messages (a live service
	// never sends them); WithApp adds them for the simulator's workloads.
	for _, a := range []proc.Algorithm{Decentralized(0), Decentralized(4)} {
		if _, ok := a.New(0, 5).(withApp); ok {
			t.Errorf("%s: New carries the application's messages", a.Summary)
		}
		if _, ok := WithApp(a).New(0, 5).(withApp); !ok {
			t.Errorf("%s: WithApp's New does not carry the application's messages", a.Summary)
		}
	}
	if got := fmt.Sprint(decRequest{T: decTicket{Req: Stamp{C: 4, P: 2}, Try: 3}}); got != "REQ(4.2#3)" {
		t.Errorf("label %q", got)
	}
}

// decEnv is a bare Env for driving one process by hand.
type decEnv struct {
	self proc.ID
	n    int
	now  time.Duration
	sent []string
}

func (e *decEnv) Self() proc.ID        { return e.self }
func (e *decEnv) N() int               { return e.n }
func (e *decEnv) Neighbors() []proc.ID { return nil }
func (e *decEnv) Now() time.Duration   { return e.now }
func (e *decEnv) Send(to proc.ID, m proc.Message) {
	e.sent = append(e.sent, fmt.Sprintf("%v→p%d", m, to))
}
func (e *decEnv) SetTimer(time.Duration, any) proc.TimerID { return 1 }
func (e *decEnv) CancelTimer(proc.TimerID)                 {}
func (e *decEnv) Storage() proc.Storage                    { return nil }
func (e *decEnv) Rand() *rand.Rand                         { return rand.New(rand.NewPCG(1, 2)) }
func (e *decEnv) Output(proc.Output)                       {}

// A request of an earlier attempt that overtakes the grant of a later
// one must not take the grant from it (a sweep on reordering links found
// this: the coordinator re-granted to the old attempt, the client returned
// that grant, and the coordinator's grant was then with two clients).
func TestDecentralizedStaleRequestKeepsGrant(t *testing.T) {
	env := &decEnv{self: 1, n: 3}
	c := NewDecentralized(0)(1, 3).(*decentralized)
	req := Stamp{C: 7, P: 2}
	first, second := decTicket{Req: req, Try: 1, Inc: 5}, decTicket{Req: req, Try: 2, Inc: 5}
	c.Receive(env, 2, decRequest{T: second})
	c.Receive(env, 2, decRequest{T: first}) // overtaken on the way
	c.Receive(env, 2, decRelease{T: first}) // the return of the first attempt's grant
	if c.grantee != 2 || c.grant != second {
		t.Fatalf("grant with p%d for %v, want p2 for %v; sent %v", c.grantee, c.grant, second, env.sent)
	}
	if want := "[GRANT(7.2#2)→p2 DENY(7.2#1)→p2]"; fmt.Sprint(env.sent) != want {
		t.Errorf("sent %v, want %s", env.sent, want)
	}
	// Another incarnation of the grantee asks: deny, and ask the grantee.
	env.sent = nil
	c.Receive(env, 2, decRequest{T: decTicket{Req: Stamp{C: 1, P: 2}, Try: 1, Inc: 9}})
	if want := "[DENY(1.2#1)→p2 INQUIRE(7.2#2)→p2]"; fmt.Sprint(env.sent) != want {
		t.Errorf("sent %v, want %s", env.sent, want)
	}
}
