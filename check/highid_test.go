package check_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/trace"
)

// highIDTrace is the merged trace of a live cluster of three founders
// that a member joined under process ID 60000: the four exchange
// messages round a ring, rounds times, each event stamped with the
// vector clock it has (by process ID, as an open trace writes them).
// bad, if >= 0, is a receipt whose clock forgets what its send knew.
func highIDTrace(rounds, bad int) []byte {
	procs := []int{0, 1, 2, 60000}
	clocks := make([]map[int]uint64, len(procs))
	for k := range clocks {
		clocks[k] = map[int]uint64{}
	}
	var b strings.Builder
	b.WriteString(`{"format":"cohort-trace/1","nodes":3,"ids":65536,"family":"overlay","algo":"scribe","seed":0}` + "\n")
	i, lamport := 0, uint64(0)
	event := func(k int, kind string, msg uint64, peer int, forget bool) {
		clocks[k][procs[k]]++
		lamport++
		vc := make([]string, 0, len(procs))
		for _, p := range procs {
			if c := clocks[k][p]; c > 0 && !(forget && p != procs[k]) {
				vc = append(vc, fmt.Sprintf(`"%d":%d`, p, c))
			}
		}
		fmt.Fprintf(&b, `{"i":%d,"t":%d,"node":%d,"kind":%q,"local":%d,"lamport":%d,"vc":{%s}`,
			i, 1000*i, procs[k], kind, 1000*i, lamport, strings.Join(vc, ","))
		if msg != 0 {
			fmt.Fprintf(&b, `,"msg":%d`, msg)
		}
		fmt.Fprintf(&b, `,"peer":%d,"type":"m"}`+"\n", peer)
		i++
	}
	for k, p := range procs {
		clocks[k][p]++
		lamport++
		fmt.Fprintf(&b, `{"i":%d,"t":%d,"node":%d,"kind":"start","local":%d,"lamport":%d,"vc":{"%d":1},"peer":-1}`+"\n", i, 1000*i, p, 1000*i, lamport, p)
		i++
	}
	msg := uint64(0)
	for r := range rounds {
		for k := range procs {
			to := (k + 1) % len(procs)
			msg++
			event(k, "send", msg, procs[to], false)
			sent := clocks[k]
			for p, c := range sent {
				clocks[to][p] = max(clocks[to][p], c)
			}
			event(to, "recv", msg, procs[k], r*len(procs)+k == bad)
		}
	}
	return []byte(b.String())
}

// A trace naming process 60000 reads, checks and writes back as one whose
// processes all have low IDs: its clocks are held by process ID, a few
// words each, not as arrays of 60001 entries; the generic checks hold,
// and a clock that forgets its sender's knowledge is caught.
func TestHighProcessIDStaysSparse(t *testing.T) {
	in := highIDTrace(50, -1)
	tr, err := trace.Read(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Nodes != 60001 {
		t.Fatalf("nodes = %d, want 60001 (lanes up to the joined member)", tr.Header.Nodes)
	}
	last := tr.Events[len(tr.Events)-1]
	if !last.VC.Sparse() || last.VC.Len() != 60001 || last.VC.At(60000) == 0 || last.VC.At(59999) != 0 {
		t.Fatalf("last event's clock %v: want it sparse, entry 60000 counted", last.VC)
	}
	var out bytes.Buffer
	if err := trace.Write(&out, tr); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), strings.Replace(string(in), `"nodes":3`, `"nodes":60001`, 1); got != want {
		t.Errorf("written back differs from what was read")
	}
	rs, err := check.Run(tr, "integrity", "no-duplicates", "clock-condition")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Status != check.OK {
			t.Errorf("%s: %v %s", r.Name, r.Status, r.Detail)
		}
	}

	bad, err := trace.Read(bytes.NewReader(highIDTrace(50, 7)))
	if err != nil {
		t.Fatal(err)
	}
	rs, err = check.Run(bad, "clock-condition")
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[0]; r.Status != check.Violated || !strings.Contains(r.Detail, "p60000") {
		t.Errorf("a receipt that forgets its sender's clock: %v %q; want a violation naming p60000's entry", r.Status, r.Detail)
	}
}

// BenchmarkReadCheckHighProcessID reads a trace like TestHighProcessIDStaysSparse's
// (1,604 events, a member with process ID 60000) and runs the checks
// cohort trace check runs on a live trace: see B/op for memory.
func BenchmarkReadCheckHighProcessID(b *testing.B) {
	in := highIDTrace(200, -1)
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		tr, err := trace.Read(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		rs, err := check.Run(tr, "integrity", "no-duplicates", "clock-condition")
		if err != nil || rs[2].Status != check.OK {
			b.Fatal(err, rs)
		}
		events = len(tr.Events)
	}
	b.ReportMetric(float64(events), "events")
}
