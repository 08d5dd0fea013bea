package lab

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/sim"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

func simulate(t *testing.T, family, algo string, mod func(*Options)) (*Report, *trace.Trace) {
	t.Helper()
	f, err := Lookup(family)
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Algorithm(algo)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options(a)
	if mod != nil {
		mod(&o)
	}
	r, tr, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	return r, tr
}

func checkOf(r *Report, name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: name, Status: "missing"}
}

// outputs returns the data of the outputs of a kind, in order.
func outputs(tr *trace.Trace, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == kind {
			var m map[string]any
			_ = json.Unmarshal(e.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

func TestLamportFigureIsCorrected(t *testing.T) {
	r, tr := simulate(t, "clocks", "lamport-figure", nil)
	if c := checkOf(r, "clock-condition"); !c.OK {
		t.Fatalf("clock condition: %+v", c)
	}
	// The figure's corrected readings: P2 receives m3 at 61, P1 receives m4 at 70.
	var got []string
	for _, e := range tr.Events {
		if e.Kind == trace.Recv {
			got = append(got, e.Label)
		}
	}
	stamps := map[int32][]float64{}
	for _, e := range tr.Events {
		if e.Kind == trace.Output && e.Type == "stamp" {
			var s proc.Stamp
			_ = json.Unmarshal(e.Data, &s)
			stamps[e.Node] = append(stamps[e.Node], float64(s.C))
		}
	}
	want := map[int32]string{0: "[6 70]", 1: "[16 24 61 69]", 2: "[40 60]"}
	for node, w := range want {
		if g := strings.Trim(strings.ReplaceAll(strings.TrimSpace(fmtFloats(stamps[node])), "  ", " "), " "); g != w {
			t.Errorf("P%d stamps %s, want %s", node+1, g, w)
		}
	}
	if r.Metrics["stamps"] != 8 || r.Messages.Total != 4 {
		t.Errorf("metrics %v, %d messages; want 8 stamps, 4 messages", r.Metrics, r.Messages.Total)
	}
}

func fmtFloats(xs []float64) string {
	b, _ := json.Marshal(xs)
	return strings.NewReplacer(",", " ").Replace(string(b))
}

func TestPhysicalFigureViolatesWithTheTextbookCounterexample(t *testing.T) {
	r, _ := simulate(t, "clocks", "physical-figure", nil)
	c := checkOf(r, "clock-condition")
	if c.OK || c.Guaranteed {
		t.Fatalf("clock-condition %+v, want an expected violation", c)
	}
	if !strings.Contains(c.Detail, "m3") || !strings.Contains(c.Detail, "C=60") || !strings.Contains(c.Detail, "C=56") {
		t.Errorf("detail %q does not name m3 sent at 60 and received at 56", c.Detail)
	}
	if c.Counterexample == "" || len(c.Events) < 2 {
		t.Errorf("no counterexample events: %+v", c)
	}
	if r.Failed() {
		t.Error("an expected violation failed the run")
	}
}

func TestVectorSituationsMatchTheTextbookTable(t *testing.T) {
	cases := []struct {
		algo, ta, tb, order, conclusion string
	}{
		{"vector-a", "[2 1 0]", "[4 3 0]", "before", "m2 may causally precede m4"},
		{"vector-b", "[4 1 0]", "[2 3 0]", "concurrent", "m2 and m4 may conflict"},
	}
	for _, c := range cases {
		r, tr := simulate(t, "clocks", c.algo, nil)
		got := outputs(tr, "compared")
		if len(got) != 1 {
			t.Fatalf("%s: %d comparisons, want 1", c.algo, len(got))
		}
		g := got[0]
		if fmtAny(g["TA"]) != c.ta || fmtAny(g["TB"]) != c.tb || g["order"] != c.order || g["conclusion"] != c.conclusion {
			t.Errorf("%s: got %v, want ts(m2)=%s ts(m4)=%s %s: %s", c.algo, g, c.ta, c.tb, c.order, c.conclusion)
		}
		if r.Failed() {
			t.Errorf("%s: checks failed: %+v", c.algo, r.Checks)
		}
	}
}

func fmtAny(v any) string {
	b, _ := json.Marshal(v)
	return strings.NewReplacer(",", " ").Replace(string(b))
}

func TestRandomLamportHoldsAndPhysicalBreaksOverSeeds(t *testing.T) {
	broken := 0
	for seed := uint64(1); seed <= 30; seed++ {
		s := seed
		r, _ := simulate(t, "clocks", "lamport", func(o *Options) { o.Nodes = 6; o.Seed = &s })
		if r.Failed() {
			t.Fatalf("lamport seed %d: %+v", seed, r.Checks)
		}
		p, _ := simulate(t, "clocks", "physical", func(o *Options) { o.Nodes = 6; o.Seed = &s })
		if !checkOf(p, "clock-condition").OK {
			broken++
		}
	}
	if broken < 25 {
		t.Errorf("uncorrected clocks broke the clock condition in only %d of 30 seeds", broken)
	}
}

func TestSameSeedSameTraceAcrossRuns(t *testing.T) {
	seed := uint64(99)
	mod := func(o *Options) { o.Nodes = 8; o.Seed = &seed }
	a, _ := simulate(t, "clocks", "lamport", mod)
	b, _ := simulate(t, "clocks", "lamport", mod)
	if a.TraceSHA != b.TraceSHA || a.TraceSHA == "" {
		t.Fatalf("same seed, hashes %s and %s", a.TraceSHA, b.TraceSHA)
	}
	seed = 100
	c, _ := simulate(t, "clocks", "lamport", mod)
	if c.TraceSHA == a.TraceSHA {
		t.Fatal("different seeds, same trace hash")
	}
}

func TestEveryAlgorithmIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Families() {
		for _, a := range f.Algorithms {
			key := f.Name + "/" + a.Name
			if seen[key] || a.Family != f.Name || a.Name == "" || a.Summary == "" || a.Source == "" || a.New == nil {
				t.Errorf("%s: malformed or duplicate entry", key)
			}
			seen[key] = true
			// Every entry runs with its default scenario.
			r, _ := simulate(t, f.Name, a.Name, nil)
			if r.Failed() {
				t.Errorf("%s: default run failed: %+v", key, r.Checks)
			}
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "clocks") {
		t.Errorf("Lookup(nope) = %v, want an error listing the families", err)
	}
}

// The clock condition must hold for Lamport's correction under every fault
// its failure model allows — loss, duplication, reordering, partitions,
// pauses and crash-stop — over many seeded schedules.
func TestLamportSweepUnderRandomFaults(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	loss, dup, reorder := 0.1, 0.1, 0.2
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		s := seed
		r, _ := simulate(t, "clocks", "lamport", func(o *Options) {
			o.Nodes = 2 + int(seed%7)
			o.Seed = &s
			o.Network = NetworkFlags{Loss: &loss, Duplicate: &dup, Reorder: &reorder}
			o.Chaos = &sim.Chaos{Horizon: 20 * time.Millisecond, Crashes: 2, Partitions: 1, Pauses: 1}
		})
		if r.Failed() {
			for _, c := range r.Checks {
				if c.Failed() {
					t.Fatalf("seed %d (replay: cohort sim clocks --algo lamport --nodes %d --seed %d ...): %s\n%s",
						seed, r.Nodes, seed, c.Detail, c.Counterexample)
				}
			}
		}
	}
}

// Each generic checker catches a violation planted in a real simulated run
// and cites the planted events.
func TestCheckersCatchTamperedRealRuns(t *testing.T) {
	dup := 0.5
	seed := uint64(3)
	_, tr := simulate(t, "clocks", "lamport", func(o *Options) {
		o.Nodes = 4
		o.Seed = &seed
		o.Network.Duplicate = &dup
	})
	if res, _ := check.Run(tr, "integrity", "no-duplicates", "clock-condition"); !allOK(res) {
		t.Fatalf("untampered run fails: %+v", res)
	}
	cases := []struct {
		checker string
		tamper  func(tr *trace.Trace) int // returns the index that must be cited
	}{
		{"no-duplicates", func(tr *trace.Trace) int {
			// Forget that the network duplicated a message that arrived twice.
			for i, e := range tr.Events {
				if e.Kind == trace.Dup {
					tr.Events[i].Kind = trace.Timer
					tr.Events[i].Msg, tr.Events[i].Peer = 0, -1
					for j := len(tr.Events) - 1; j > i; j-- {
						if tr.Events[j].Kind == trace.Recv && tr.Events[j].Msg == e.Msg {
							return j
						}
					}
				}
			}
			return -1
		}},
		{"integrity", func(tr *trace.Trace) int {
			// A receipt from a process that never sent the message.
			for i, e := range tr.Events {
				if e.Kind == trace.Recv {
					tr.Events[i].Peer = (e.Peer + 1) % int32(tr.Header.Nodes)
					if tr.Events[i].Peer == e.Node {
						tr.Events[i].Peer = (tr.Events[i].Peer + 1) % int32(tr.Header.Nodes)
					}
					return i
				}
			}
			return -1
		}},
		{"clock-condition", func(tr *trace.Trace) int {
			// A receipt whose Lamport timestamp is not past its send's.
			for i, e := range tr.Events {
				if e.Kind == trace.Recv {
					tr.Events[i].Lamport = 1
					return i
				}
			}
			return -1
		}},
	}
	for _, c := range cases {
		broken := &trace.Trace{Header: tr.Header, Events: slices.Clone(tr.Events)}
		want := c.tamper(broken)
		if want < 0 {
			t.Fatalf("%s: nothing to tamper with", c.checker)
		}
		res, err := check.Run(broken, c.checker)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].OK() || !slices.Contains(res[0].Events, want) {
			t.Errorf("%s: %v citing %v, want a violation citing event %d", c.checker, res[0].Status, res[0].Events, want)
		}
		if ce := res[0].Counterexample(broken); !strings.Contains(ce, fmt.Sprintf("#%d ", want)) {
			t.Errorf("%s: counterexample does not print event #%d:\n%s", c.checker, want, ce)
		}
	}
}

func allOK(rs []check.Result) bool {
	for _, r := range rs {
		if !r.OK() {
			return false
		}
	}
	return true
}

// Outside the failure model: a process that recovers with fresh state
// restarts its clock, so its later events carry smaller timestamps than
// events that happened before them. Lamport clocks need stable storage to
// survive crash-recovery; the checker shows why.
func TestLamportBreaksUnderCrashRecoveryWithoutStableStorage(t *testing.T) {
	broke := 0
	for seed := uint64(1); seed <= 20; seed++ {
		s := seed
		r, _ := simulate(t, "clocks", "lamport", func(o *Options) {
			o.Nodes = 4
			o.Seed = &s
			o.Faults = []string{"crash 1 at 10500us", "recover 1 at 11500us"}
		})
		if !checkOf(r, "clock-condition").OK {
			broke++
		}
	}
	// Whether it shows depends on whether the recovered process acts before
	// a message with a large timestamp corrects it.
	if broke < 5 {
		t.Errorf("fresh-state recovery broke the clock condition in only %d of 20 seeds", broke)
	}
}
