package trace_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/trace"
)

func mustHB(t *testing.T, tr *trace.Trace) *trace.HB {
	t.Helper()
	h, err := trace.NewHB(tr)
	if err != nil {
		t.Fatalf("NewHB: %v", err)
	}
	return h
}

// exchange is three processes passing three messages:
//
//	p0  #0 send m1 ─┐                    #4 recv m2
//	p1              └▶ #2 recv m1  #3 send m3 ─┐
//	p2  #1 send m2 (to p0)                     └▶ #5 recv m3
func exchange() *trace.Trace {
	b := checktest.New(3)
	m1 := b.Send(0, 1, "m") // #0
	m2 := b.Send(2, 0, "m") // #1
	b.Recv(m1)              // #2
	m3 := b.Send(1, 2, "m") // #3
	b.Recv(m2)              // #4
	b.Recv(m3)              // #5
	return &b.Trace
}

func TestHBExchange(t *testing.T) {
	h := mustHB(t, exchange())
	// By hand: #0 → #2 → #3 → #5 and #1 → #4, #1 → #5, #0 → #4 (p0's order).
	before := map[[2]int]bool{
		{0, 2}: true, {0, 3}: true, {0, 4}: true, {0, 5}: true,
		{1, 4}: true, {1, 5}: true,
		{2, 3}: true, {2, 5}: true,
		{3, 5}: true,
	}
	concurrent := map[[2]int]bool{
		{0, 1}: true, {1, 2}: true, {1, 3}: true, {2, 4}: true, {3, 4}: true, {4, 5}: true,
	}
	for a := range 6 {
		for b := range 6 {
			if got, want := h.Before(a, b), before[[2]int{a, b}]; got != want {
				t.Errorf("Before(%d, %d) = %v, want %v", a, b, got, want)
			}
			lo, hi := min(a, b), max(a, b)
			if got, want := h.Concurrent(a, b), concurrent[[2]int{lo, hi}]; got != want {
				t.Errorf("Concurrent(%d, %d) = %v, want %v", a, b, got, want)
			}
		}
	}
	wantVC := [][]uint64{{1, 0, 0}, {0, 0, 1}, {1, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 2, 2}}
	for i, want := range wantVC {
		if got := h.VC(i); !slices.Equal(got, want) {
			t.Errorf("VC(%d) = %v, want %v", i, got, want)
		}
	}
	for recv, send := range map[int]int{2: 0, 4: 1, 5: 3} {
		if got, ok := h.Send(recv); !ok || got != send {
			t.Errorf("Send(%d) = %d, %v; want %d, true", recv, got, ok, send)
		}
	}
	for _, i := range []int{0, 1, 3, -1, 6} {
		if got, ok := h.Send(i); ok {
			t.Errorf("Send(%d) = %d, true; want false", i, got)
		}
	}
	for node, want := range [][]int{{0, 4}, {2, 3}, {1, 5}} {
		if got := h.History(node); !slices.Equal(got, want) {
			t.Errorf("History(%d) = %v, want %v", node, got, want)
		}
	}
	if h.Nodes() != 3 || h.History(3) != nil || h.VC(6) != nil || h.Before(-1, 0) || h.Before(0, 6) {
		t.Error("out-of-range queries answered")
	}
	if u := h.Unmatched(); len(u) != 0 {
		t.Errorf("Unmatched() = %v, want none", u)
	}
}

func TestHBVCIsACopy(t *testing.T) {
	h := mustHB(t, exchange())
	h.VC(0)[0] = 99
	h.History(0)[0] = 99
	if h.VC(0)[0] != 1 || h.History(0)[0] != 0 {
		t.Error("modifying a returned slice changed the HB")
	}
}

func TestCuts(t *testing.T) {
	h := mustHB(t, exchange()) // histories: p0 [0 4], p1 [2 3], p2 [1 5]
	none := [2]int{-1, -1}
	for _, tc := range []struct {
		cut      trace.Cut
		ok       bool
		witness  [2]int
		frontier []int
	}{
		{trace.Cut{0, 0, 0}, true, none, []int{-1, -1, -1}},
		{trace.Cut{1, 1, 0}, true, none, []int{0, 2, -1}},
		{trace.Cut{2, 2, 1}, true, none, []int{4, 3, 1}}, // m3 in transit
		{trace.Cut{2, 2, 2}, true, none, []int{4, 3, 5}},
		{trace.Cut{0, 1, 0}, false, [2]int{0, 2}, []int{-1, 2, -1}}, // m1 received, never sent
		{trace.Cut{2, 0, 0}, false, [2]int{1, 4}, []int{4, -1, -1}}, // m2 received, never sent
		{trace.Cut{1, 2, 2}, true, none, []int{0, 3, 5}},
		{trace.Cut{2, 2, 0}, false, [2]int{1, 4}, []int{4, 3, -1}},
		{trace.Cut{1, 2, 2, 7}, true, none, []int{0, 3, 5}}, // extra entries are ignored
		{trace.Cut{9, 9, 9}, true, none, []int{4, 3, 5}},    // beyond a history: all of it
		{trace.Cut{-3, 1}, false, [2]int{0, 2}, []int{-1, 2, -1}},
		{nil, true, none, []int{-1, -1, -1}},
	} {
		ok, w := h.Consistent(tc.cut)
		if ok != tc.ok || w != tc.witness {
			t.Errorf("Consistent(%v) = %v, %v; want %v, %v", tc.cut, ok, w, tc.ok, tc.witness)
		}
		if f := h.Frontier(tc.cut); !slices.Equal(f, tc.frontier) {
			t.Errorf("Frontier(%v) = %v, want %v", tc.cut, f, tc.frontier)
		}
	}
}

func TestCutAt(t *testing.T) {
	tr := exchange()
	for _, tc := range []struct {
		at   int64
		want trace.Cut
	}{
		{0, trace.Cut{0, 0, 0}},
		{tr.Events[0].Time, trace.Cut{1, 0, 0}},
		{tr.Events[2].Time, trace.Cut{1, 1, 1}},
		{tr.Events[3].Time + 1, trace.Cut{1, 2, 1}},
		{tr.Events[5].Time, trace.Cut{2, 2, 2}},
	} {
		if got := trace.CutAt(tr, tc.at); !slices.Equal(got, tc.want) {
			t.Errorf("CutAt(%d) = %v, want %v", tc.at, got, tc.want)
		}
	}
}

func TestHBDuplicatedMessage(t *testing.T) {
	b := checktest.New(2)
	s := b.Send(0, 1, "m")
	d := b.Dup(s)
	r1 := b.Recv(s)
	r2 := b.Recv(s)
	h := mustHB(t, &b.Trace)
	for _, r := range []int{r1, r2} {
		if got, ok := h.Send(r); !ok || got != s {
			t.Errorf("Send(%d) = %d, %v; want %d, true", r, got, ok, s)
		}
		if !h.Before(s, r) {
			t.Errorf("send #%d does not happen before receive #%d", s, r)
		}
	}
	if !h.Before(r1, r2) || h.Before(r2, r1) {
		t.Error("the two receipts are not in process order")
	}
	if h.VC(d) != nil || h.Before(s, d) || h.Before(d, r1) || h.Concurrent(d, s) {
		t.Error("the Dup event takes part in happened-before")
	}
	if got := h.History(0); !slices.Equal(got, []int{s}) {
		t.Errorf("History(0) = %v, want [%d]", got, s)
	}
	if ok, w := h.Consistent(trace.Cut{0, 1}); ok || w != [2]int{s, r1} {
		t.Errorf("Consistent({0, 1}) = %v, %v; want false, [%d %d]", ok, w, s, r1)
	}
}

func TestHBCrashRecover(t *testing.T) {
	b := checktest.New(2)
	st := b.Local(0, trace.Start)
	s := b.Send(0, 1, "m")
	c := b.Local(0, trace.Crash)
	rc := b.Local(0, trace.Recover)
	r := b.Recv(s)
	tm := b.Local(0, trace.Timer)
	h := mustHB(t, &b.Trace)
	if got, want := h.History(0), []int{st, s, c, rc, tm}; !slices.Equal(got, want) {
		t.Errorf("History(0) = %v, want %v", got, want)
	}
	for _, p := range [][2]int{{st, c}, {s, c}, {c, rc}, {s, rc}, {rc, tm}, {st, r}} {
		if !h.Before(p[0], p[1]) {
			t.Errorf("Before(%d, %d) = false, want true", p[0], p[1])
		}
	}
	for _, p := range [][2]int{{c, r}, {rc, r}, {r, tm}} {
		if !h.Concurrent(p[0], p[1]) {
			t.Errorf("Concurrent(%d, %d) = false, want true", p[0], p[1])
		}
	}
	if got := h.VC(tm); !slices.Equal(got, []uint64{5, 0}) {
		t.Errorf("VC(timer) = %v, want [5 0]", got)
	}
}

func TestHBUnmatchedReceive(t *testing.T) {
	b := checktest.New(2)
	r1 := b.Add(trace.Event{Node: 1, Kind: trace.Recv, Msg: 7, Peer: 0}) // never sent
	r2 := b.Add(trace.Event{Node: 0, Kind: trace.Recv, Msg: 8, Peer: 1}) // sent only later
	s := b.Add(trace.Event{Node: 1, Kind: trace.Send, Msg: 8, Peer: 0})
	h := mustHB(t, &b.Trace)
	if got := h.Unmatched(); !slices.Equal(got, []int{r1, r2}) {
		t.Errorf("Unmatched() = %v, want [%d %d]", got, r1, r2)
	}
	if _, ok := h.Send(r2); ok {
		t.Error("a receive is matched to a later send")
	}
	if !h.Before(r1, s) || h.Before(s, r2) || h.Before(r2, s) {
		t.Error("unmatched receives are not ordered by process order alone")
	}
	if ok, _ := h.Consistent(trace.Cut{1, 0}); !ok {
		t.Error("a cut holding an unmatched receive is inconsistent")
	}
}

func TestNewHBErrors(t *testing.T) {
	for name, edit := range map[string]func(*trace.Trace){
		"no nodes":     func(tr *trace.Trace) { tr.Header.Nodes = 0 },
		"bad index":    func(tr *trace.Trace) { tr.Events[1].Index = 5 },
		"bad node":     func(tr *trace.Trace) { tr.Events[2].Node = 3 },
		"negative":     func(tr *trace.Trace) { tr.Events[2].Node = -1 },
		"unknown kind": func(tr *trace.Trace) { tr.Events[0].Kind = 0 },
	} {
		tr := exchange()
		edit(tr)
		if _, err := trace.NewHB(tr); !errors.Is(err, trace.ErrFormat) {
			t.Errorf("%s: NewHB error = %v, want ErrFormat", name, err)
		}
	}
	if _, err := trace.NewHB(&trace.Trace{Header: trace.Header{Nodes: 2}}); err != nil {
		t.Errorf("empty trace: %v", err)
	}
}

// randomTrace builds a run of n processes: each step sends a message, delivers
// one in flight (a duplicated one twice), or records a local event.
func randomTrace(r *rand.Rand, n, steps int) *trace.Trace {
	b := checktest.New(n)
	var inFlight []int // sends, once per pending delivery
	for range steps {
		switch k := r.IntN(10); {
		case k < 4:
			s := b.Send(int32(r.IntN(n)), int32(r.IntN(n)), "m")
			inFlight = append(inFlight, s)
			if r.IntN(5) == 0 {
				b.Dup(s)
				inFlight = append(inFlight, s)
			}
		case k < 8 && len(inFlight) > 0:
			j := r.IntN(len(inFlight))
			b.Recv(inFlight[j])
			inFlight = slices.Delete(inFlight, j, j+1)
		default:
			kinds := []trace.Kind{trace.Timer, trace.Input, trace.Output, trace.Crash, trace.Recover}
			b.Local(int32(r.IntN(n)), kinds[r.IntN(len(kinds))])
		}
	}
	return &b.Trace
}

// reach computes happened-before by depth-first search over the edges of its
// definition: consecutive events of a process, and send to receive.
func reach(tr *trace.Trace) [][]bool {
	ev := tr.Events
	next := make([][]int, len(ev))
	last := map[int32]int{}
	send := map[uint64]int{}
	for i, e := range ev {
		if !e.Kind.IsProcess() {
			continue
		}
		if p, ok := last[e.Node]; ok {
			next[p] = append(next[p], i)
		}
		last[e.Node] = i
		switch e.Kind {
		case trace.Send:
			send[e.Msg] = i
		case trace.Recv:
			if s, ok := send[e.Msg]; ok {
				next[s] = append(next[s], i)
			}
		}
	}
	r := make([][]bool, len(ev))
	for a := range ev {
		r[a] = make([]bool, len(ev))
		var dfs func(int)
		dfs = func(x int) {
			for _, y := range next[x] {
				if !r[a][y] {
					r[a][y] = true
					dfs(y)
				}
			}
		}
		dfs(a)
	}
	return r
}

func TestHBProperties(t *testing.T) {
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 1))
		tr := randomTrace(r, 2+r.IntN(4), 10+r.IntN(30))
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			checkProperties(t, tr, r)
		})
	}
}

func checkProperties(t *testing.T, tr *trace.Trace, r *rand.Rand) {
	h := mustHB(t, tr)
	reached := reach(tr)
	ev := tr.Events
	for a := range ev {
		if h.Before(a, a) {
			t.Fatalf("Before(%d, %d): not irreflexive", a, a)
		}
		for b := range ev {
			if got, want := h.Before(a, b), reached[a][b]; got != want {
				t.Fatalf("Before(%d, %d) = %v, reachability says %v", a, b, got, want)
			}
			if h.Before(a, b) && h.Before(b, a) {
				t.Fatalf("Before(%d, %d) and Before(%d, %d): not antisymmetric", a, b, b, a)
			}
			if h.Before(a, b) {
				for c := range ev {
					if h.Before(b, c) && !h.Before(a, c) {
						t.Fatalf("%d → %d → %d but not %d → %d: not transitive", a, b, c, a, c)
					}
				}
			}
			both := ev[a].Kind.IsProcess() && ev[b].Kind.IsProcess()
			if got, want := h.Concurrent(a, b), both && a != b && !reached[a][b] && !reached[b][a]; got != want {
				t.Fatalf("Concurrent(%d, %d) = %v, want %v", a, b, got, want)
			}
		}
	}
	// Every cut of true time is consistent, and Consistent agrees with the
	// definition on random cuts.
	for i := range ev {
		if ok, w := h.Consistent(trace.CutAt(tr, ev[i].Time)); !ok {
			t.Fatalf("CutAt(%d) is inconsistent: witness %v", ev[i].Time, w)
		}
	}
	for range 20 {
		c := make(trace.Cut, h.Nodes())
		in := map[int]bool{}
		for p := range c {
			hist := h.History(p)
			c[p] = r.IntN(len(hist) + 1)
			for _, e := range hist[:c[p]] {
				in[e] = true
			}
		}
		want := true
		for b := range in {
			for a := range ev {
				if reached[a][b] && !in[a] {
					want = false
				}
			}
		}
		ok, w := h.Consistent(c)
		if ok != want {
			t.Fatalf("Consistent(%v) = %v, want %v", c, ok, want)
		}
		if !ok && (!in[w[1]] || in[w[0]] || ev[w[0]].Kind != trace.Send || ev[w[1]].Msg != ev[w[0]].Msg) {
			t.Fatalf("Consistent(%v): bad witness %v", c, w)
		}
	}
}

// Entry reads what VC copies, and 0 outside the trace's events and
// processes.
func TestHBEntry(t *testing.T) {
	for seed := range uint64(20) {
		tr := randomTrace(rand.New(rand.NewPCG(seed, 2)), 4, 60)
		h := mustHB(t, tr)
		for i := -1; i <= len(tr.Events); i++ {
			vc := h.VC(i)
			for p := -1; p <= 4; p++ {
				want := uint64(0)
				if vc != nil && p >= 0 && p < 4 {
					want = vc[p]
				}
				if got := h.Entry(i, p); got != want {
					t.Fatalf("seed %d: Entry(%d, %d) = %d, want %d", seed, i, p, got, want)
				}
			}
		}
	}
}
