package sim

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// described is a counter that describes itself, and counts how often it
// was asked to.
type described struct {
	counter
	asked *int
}

func (d *described) Describe() any {
	*d.asked++
	return struct {
		Got []int `json:"got"`
	}{append([]int{}, d.got...)}
}

// TestStatesAreRecordedOnTheLastEventOfEachStep: with States, the state
// after each step is on the step's last event of the process; without,
// Describe is never called and the trace is what it was.
func TestStatesAreRecordedOnTheLastEventOfEachStep(t *testing.T) {
	runWith := func(states bool) (*trace.Trace, int, string) {
		asked := 0
		rec := &trace.Recorder{}
		hdr := trace.Header{Nodes: 2, Seed: 3}
		h := trace.NewHasher(hdr)
		run(t, Config{Nodes: 2, Seed: 3, States: states, Trace: trace.Tee(rec, h),
			New:     func(proc.ID, int) proc.Process { return &described{counter: counter{count: 3}, asked: &asked} },
			Network: Network{Latency: Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}}})
		return &rec.Trace, asked, h.Sum()
	}
	off, askedOff, hashOff := runWith(false)
	if askedOff != 0 {
		t.Errorf("States off: Describe called %d times, want 0", askedOff)
	}
	for i := range off.Events {
		if off.Events[i].State != nil {
			t.Fatalf("States off: event %v has a state", off.Events[i].String())
		}
	}
	on, askedOn, hashOn := runWith(true)
	if len(on.Events) != len(off.Events) {
		t.Fatalf("States on: %d events, off: %d", len(on.Events), len(off.Events))
	}
	if hashOn == hashOff {
		t.Error("a trace with states hashes as one without")
	}
	if _, _, again := runWith(true); again != hashOn {
		t.Errorf("same seed with states: hash %s, then %s", hashOn, again)
	}
	// p0's start and its three sends (one step), p1's start, then three
	// receipts at p1.
	want := map[int]string{3: `{"got":[]}`, 4: `{"got":[]}`}
	var got []int
	states := 0
	for i := range on.Events {
		e := &on.Events[i]
		e2 := off.Events[i]
		e2.State = e.State
		if a, b := e.AppendJSON(nil), e2.AppendJSON(nil); !bytes.Equal(a, b) {
			t.Fatalf("event %d differs beyond its state:\n%s\n%s", i, a, b)
		}
		if e.State == nil {
			continue
		}
		states++
		if e.Kind == trace.Recv {
			var d struct{ Got []int }
			if err := json.Unmarshal(e.State, &d); err != nil {
				t.Fatal(err)
			}
			got = d.Got
		}
		if w, ok := want[i]; ok && string(e.State) != w {
			t.Errorf("event %d state %s, want %s", i, e.State, w)
		}
	}
	// A step of p0 (its start with three sends) ends at its last send.
	if last := on.Events[3]; last.Kind != trace.Send || last.State == nil || on.Events[0].State != nil || on.Events[2].State != nil {
		t.Errorf("p0's start step: the state is not on its last send alone:\n%v\n%v", on.Events[0].String(), last.String())
	}
	if states != askedOn || states != 5 {
		t.Errorf("%d states recorded, Describe called %d times; want 5 (two starts, three receipts)", states, askedOn)
	}
	if len(got) != 3 {
		t.Errorf("the last receipt's state holds %v, want three numbers", got)
	}
}
