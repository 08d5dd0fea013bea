package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
	"pgregory.net/rapid"
)

type hello struct{}

func (hello) Kind() string { return "hello" }

type bye struct{}

func (bye) Kind() string { return "bye" }

// member is a toy dynamic-membership process: a joiner greets its contact,
// every process pings the whole ID space every millisecond, and a leaver
// says goodbye to everyone.
type member struct {
	joined  bool
	contact proc.ID
	started bool
	heard   map[string]int
	left    bool
	pings   int
}

func (m *member) Start(env proc.Env) { m.started = true; m.init(env) }
func (m *member) Join(env proc.Env, contact proc.ID) {
	m.joined, m.contact = true, contact
	m.init(env)
	if contact != proc.None {
		env.Send(contact, hello{})
	}
}
func (m *member) init(env proc.Env) {
	m.heard = map[string]int{}
	env.SetTimer(time.Millisecond, "tick")
}
func (m *member) Receive(env proc.Env, from proc.ID, msg proc.Message) { m.heard[msg.Kind()]++ }
func (m *member) Timeout(env proc.Env, _ any) {
	m.pings++
	for i := range env.N() {
		if proc.ID(i) != env.Self() {
			env.Send(proc.ID(i), ping{})
		}
	}
	if m.pings < 20 {
		env.SetTimer(time.Millisecond, "tick")
	}
}
func (m *member) Input(env proc.Env, in proc.Input) {
	if _, ok := in.(proc.Leave); ok {
		m.left = true
		for i := range env.N() {
			if proc.ID(i) != env.Self() {
				env.Send(proc.ID(i), bye{})
			}
		}
	}
}

func members(proc.ID, int) proc.Process { return &member{} }

func lifecycle(tr *trace.Trace, node int32) string {
	var ks []string
	for _, e := range tr.Events {
		if e.Node == node && e.Kind.IsProcess() && (e.Kind.Begins() || e.Kind.Stops() || (e.Kind == trace.Input && e.Type == "leave")) {
			ks = append(ks, e.Kind.String())
		}
	}
	return strings.Join(ks, ",")
}

func dropReasons(tr *trace.Trace, node int32) map[string]int {
	m := map[string]int{}
	for _, e := range tr.Events {
		if e.Kind == trace.Drop && e.Node == node {
			m[e.Reason]++
		}
	}
	return m
}

func TestJoinBringsAnAbsentProcessInThroughAContact(t *testing.T) {
	rec := &trace.Recorder{}
	s, res := run(t, Config{Nodes: 3, Seed: 7, New: members,
		Faults: []Fault{{Kind: Join, Node: 2, At: 10 * time.Millisecond}}, Trace: rec})
	p2 := s.Process(2).(*member)
	if !p2.joined || p2.started {
		t.Fatalf("p2: joined=%v started=%v; want Join called instead of Start", p2.joined, p2.started)
	}
	if p2.contact != 0 && p2.contact != 1 {
		t.Fatalf("p2's contact is %v, want a present member (p0 or p1)", p2.contact)
	}
	if got := s.Process(p2.contact).(*member).heard["hello"]; got != 1 {
		t.Errorf("contact %v heard %d hellos, want 1", p2.contact, got)
	}
	if got := lifecycle(&rec.Trace, 2); got != "join" {
		t.Errorf("p2's lifecycle %q, want join", got)
	}
	// p0's and p1's pings sent at 1..8 ms reach p2 before it is there;
	// those sent at 9 ms arrive at 10 ms, just after the join (scheduled
	// first, when the run was made).
	drops := dropReasons(&rec.Trace, 2)
	if drops["receiver not joined"] != 2*8 || len(drops) != 1 {
		t.Errorf("drops at p2: %v, want 16 × receiver not joined", drops)
	}
	if res.Joins != 1 || res.Dropped != 16 {
		t.Errorf("joins %d dropped %d, want 1 and 16", res.Joins, res.Dropped)
	}
	if got := s.Process(0).(*member).heard["ping"]; got != 20+20 {
		t.Errorf("p0 heard %d pings, want 40 (20 from p1, 20 from p2 after it joined)", got)
	}
}

func TestLeaveGivesTheLeaveInputThenStops(t *testing.T) {
	rec := &trace.Recorder{}
	s, res := run(t, Config{Nodes: 3, Seed: 1, New: members,
		Faults: []Fault{{Kind: Leave, Node: 1, At: 5*time.Millisecond + time.Microsecond}}, Trace: rec})
	if s.Up(1) || s.Process(1) != nil {
		t.Fatal("p1 is still up after leaving")
	}
	if got := lifecycle(&rec.Trace, 1); got != "start,input,leave" {
		t.Errorf("p1's lifecycle %q, want start,input,leave", got)
	}
	for _, id := range []proc.ID{0, 2} {
		m := s.Process(id).(*member)
		if m.heard["bye"] != 1 {
			t.Errorf("p%d heard %d byes, want 1 (sent while handling Leave)", id, m.heard["bye"])
		}
		if m.heard["ping"] != 20+5 {
			t.Errorf("p%d heard %d pings, want 25 (p1's timers die with it)", id, m.heard["ping"])
		}
	}
	// The others' pings sent at 5..20 ms arrive after the leave.
	if d := dropReasons(&rec.Trace, 1); d["receiver left"] != 2*16 || len(d) != 1 {
		t.Errorf("drops at p1: %v, want 32 × receiver left", d)
	}
	if res.Leaves != 1 || res.Inputs != 1 {
		t.Errorf("leaves %d inputs %d, want 1 and 1", res.Leaves, res.Inputs)
	}
}

func TestRecoverStartsOnlyCrashedMembers(t *testing.T) {
	s, _ := run(t, Config{Nodes: 3, Seed: 1, New: members,
		Faults: []Fault{
			{Kind: Join, Node: 2, At: 30 * time.Millisecond},
			{Kind: Recover, Node: 2, At: time.Millisecond}, // absent: not a crash to recover from
			{Kind: Leave, Node: 1, At: time.Millisecond},
			{Kind: Recover, Node: 1, At: 2 * time.Millisecond}, // left: gone for good
		}, Deadline: 20 * time.Millisecond})
	if s.Up(1) || s.Up(2) {
		t.Errorf("up: p1 %v, p2 %v; want neither (recover applies to crashes only)", s.Up(1), s.Up(2))
	}
}

func TestAProcessThatIsNotAJoinerIsStarted(t *testing.T) {
	s, _ := run(t, Config{Nodes: 2, Seed: 1, New: func(proc.ID, int) proc.Process { return &chatter{} },
		Faults: []Fault{{Kind: Join, Node: 1, At: 5 * time.Millisecond}}})
	if got := s.Process(0).(*chatter).got[1]; got != 5 {
		t.Errorf("p0 got %d pings from p1, want 5 (it started at 5 ms)", got)
	}
}

func TestInitialLeavesTheRestAbsentAndALeaverCanRejoin(t *testing.T) {
	rec := &trace.Recorder{}
	s, _ := run(t, Config{Nodes: 4, Initial: 2, Seed: 3, New: members, Trace: rec,
		Faults: []Fault{
			{Kind: Join, Node: 3, At: 2 * time.Millisecond},
			{Kind: Leave, Node: 0, At: 4 * time.Millisecond},
			{Kind: Join, Node: 0, At: 6 * time.Millisecond},
		}})
	if s.Up(2) {
		t.Error("p2 is up: Initial 2 leaves it absent and nothing joins it")
	}
	if got := lifecycle(&rec.Trace, 0); got != "start,input,leave,join" {
		t.Errorf("p0's lifecycle %q, want start,input,leave,join", got)
	}
	if m := s.Process(0).(*member); !m.joined || m.contact == 0 || m.contact == 2 {
		t.Errorf("rejoined p0: joined=%v contact=%v; want a join through p1 or p3", m.joined, m.contact)
	}
}

func TestChurnRunsAreDeterministic(t *testing.T) {
	hash := func(seed uint64) (string, Result) {
		h := trace.NewHasher(trace.Header{Nodes: 50})
		_, res := run(t, Config{Nodes: 50, Initial: 30, Seed: seed, New: members, Trace: h,
			Churn: []Churn{{Join: 500, Fail: 200, Leave: 300, Until: 30 * time.Millisecond}}})
		return h.Sum(), res
	}
	a, ra := hash(11)
	b, _ := hash(11)
	c, _ := hash(12)
	if a != b {
		t.Fatal("same seed, different traces under churn")
	}
	if a == c {
		t.Error("different seeds gave the same churn trace")
	}
	if ra.Joins == 0 || ra.Leaves == 0 {
		t.Errorf("churn produced %d joins and %d leaves; want some of each", ra.Joins, ra.Leaves)
	}
}

// TestChurnScheduleProperties checks the expansion of churn into faults:
// in the window, in time order, each rate near its expectation, and every
// fault consistent with the membership the schedule itself creates.
func TestChurnScheduleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 200).Draw(t, "nodes")
		initial := rapid.IntRange(1, n).Draw(t, "initial")
		c := Churn{
			Join:  float64(rapid.IntRange(0, 2000).Draw(t, "join")),
			Fail:  float64(rapid.IntRange(0, 2000).Draw(t, "fail")),
			Leave: float64(rapid.IntRange(0, 2000).Draw(t, "leave")),
			From:  time.Duration(rapid.IntRange(0, 100).Draw(t, "from")) * time.Millisecond,
		}
		c.Until = c.From + time.Duration(rapid.IntRange(1, 2000).Draw(t, "ms"))*time.Millisecond
		seed := rapid.Uint64().Draw(t, "seed")
		cfg := Config{Nodes: n, Initial: initial, Seed: seed, New: members, Churn: []Churn{c}}
		s1, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s2, _ := New(cfg)
		if !slices.Equal(s1.cfg.Faults, s2.cfg.Faults) {
			t.Fatal("same seed, different churn schedules")
		}
		present := make([]bool, n)
		for i := range initial {
			present[i] = true
		}
		last := c.From
		count := map[FaultKind]int{}
		for _, f := range s1.cfg.Faults {
			if f.At < last || f.At >= c.Until {
				t.Fatalf("fault at %v: out of order or outside [%v, %v)", f.At, c.From, c.Until)
			}
			last = f.At
			count[f.Kind]++
			switch f.Kind {
			case Join:
				if present[f.Node] {
					t.Fatalf("join of present p%d at %v", f.Node, f.At)
				}
				present[f.Node] = true
			case Crash, Leave:
				if !present[f.Node] {
					t.Fatalf("%s of absent p%d at %v", f.Kind, f.Node, f.At)
				}
				present[f.Node] = false
			default:
				t.Fatalf("churn made a %s fault", f.Kind)
			}
		}
		// Draws can be skipped only for want of candidates, so the total
		// is at most the Poisson count; with candidates always available
		// (a join when someone is absent...) it stays near it. Check the
		// total against a generous 6σ band of the Poisson count.
		total := c.Join + c.Fail + c.Leave
		mean := total * (c.Until - c.From).Seconds()
		got := float64(len(s1.cfg.Faults))
		if got > mean+6*sqrt(mean)+6 {
			t.Fatalf("%v churn faults, expected about %.1f", got, mean)
		}
	})
}

func sqrt(x float64) float64 {
	r := x
	for range 30 {
		if r == 0 {
			return 0
		}
		r = (r + x/r) / 2
	}
	return r
}

func TestChurnRatesMatchTheirExpectation(t *testing.T) {
	// With 10 000 processes half present, candidates never run out, so
	// every draw becomes a fault: the counts are Poisson.
	c := Churn{Join: 3000, Fail: 1000, Leave: 2000, Until: time.Second}
	s, err := New(Config{Nodes: 10000, Initial: 5000, Seed: 5, New: members, Churn: []Churn{c}})
	if err != nil {
		t.Fatal(err)
	}
	count := map[FaultKind]float64{}
	for _, f := range s.cfg.Faults {
		count[f.Kind]++
	}
	for k, want := range map[FaultKind]float64{Join: 3000, Crash: 1000, Leave: 2000} {
		if d := count[k] - want; d*d > 25*want { // 5σ
			t.Errorf("%s: %v events, want %v ± %.0f", k, count[k], want, 5*sqrt(want))
		}
	}
}

func TestChurnValidation(t *testing.T) {
	for _, c := range []struct {
		churn Churn
		want  string
	}{
		{Churn{Join: -1, Until: time.Second}, "join rate -1/s"},
		{Churn{Fail: 1, From: time.Second, Until: time.Second}, "until 1s: must be after from (1s)"},
		{Churn{Leave: 1e9, Until: time.Hour}, "expected events"},
	} {
		_, err := New(Config{Nodes: 2, New: members, Churn: []Churn{c.churn}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("churn %+v: error %v, want one containing %q", c.churn, err, c.want)
		}
	}
	if _, err := New(Config{Nodes: 2, Initial: 3, New: members}); err == nil || !strings.Contains(err.Error(), "initial = 3") {
		t.Errorf("initial 3 of 2 nodes: error %v", err)
	}
}
