package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/proc"
)

// A short run of each total order delivers messages at every member and
// reports latencies in order; bad settings are refused by name.
func TestRunGroup(t *testing.T) {
	var algos []proc.Algorithm
	for _, name := range []string{"total-sequencer", "total-isis"} {
		a, err := group.Algorithm(name)
		if err != nil {
			t.Fatal(err)
		}
		algos = append(algos, a)
	}
	ps, err := RunGroup(context.Background(), GroupConfig{Algorithms: algos, Windows: []int{4}, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("points %+v", ps)
	}
	for _, p := range ps {
		if p.Delivered <= 0 || p.PerSecond <= 0 || p.LatencyP50Ms <= 0 || p.LatencyP99Ms < p.LatencyP50Ms || p.Window != 4 {
			t.Errorf("point %+v", p)
		}
	}
	// At a rate, the senders offer that many messages a second, not more.
	ps, err = RunGroup(context.Background(), GroupConfig{Algorithms: algos[:1], Windows: []int{16}, Duration: 500 * time.Millisecond, Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Rate != 500 || p.Delivered <= 0 || p.PerSecond > 500*1.5 {
		t.Errorf("at 500 a second: %+v", p)
	}
	for _, c := range []struct {
		cfg  GroupConfig
		want string
	}{
		{GroupConfig{Algorithms: algos, Windows: []int{1}, Duration: time.Millisecond, Rate: -1}, "rate -1"},
		{GroupConfig{Algorithms: algos, Windows: []int{1}}, "duration"},
		{GroupConfig{Algorithms: algos, Windows: []int{0}, Duration: time.Millisecond}, "window 0"},
		{GroupConfig{Algorithms: algos, Windows: []int{1}, Duration: time.Millisecond, Size: -1}, "size -1"},
	} {
		if _, err := RunGroup(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// The replicated group's run with Stages follows its messages through the
// log: every stage is reached by messages measured, and a message's
// stages come in the log's order (appended before committed, committed
// before every member applied, applied before every listener had it).
// An election during the run leaves out the messages of the indexes two
// leaders appended (StagesLeftOut): on a loaded machine, every message of
// a short run may be; that run is made again, at most five times.
func TestRunGroupStages(t *testing.T) {
	a := group.ReplicatedAlgorithm(consensus.DefaultConfig)
	var p GroupPoint
	at := map[string]StagePoint{}
	for run := 1; ; run++ {
		ps, err := RunGroup(context.Background(), GroupConfig{Algorithms: []proc.Algorithm{a}, Windows: []int{16}, Duration: 500 * time.Millisecond, Rate: 500, Stages: true})
		if err != nil {
			t.Fatal(err)
		}
		p = ps[0]
		clear(at)
		for _, s := range p.Stages {
			at[s.Stage] = s
		}
		if at["delivered to the last listener"].Messages > 0 || p.StagesLeftOut == 0 || run == 5 {
			break
		}
		t.Logf("run %d: an election left out all %d messages measured; again", run, p.StagesLeftOut)
	}
	order := []string{"appended at the leader", "committed at the leader", "commit known to the last follower", "applied by the last member", "delivered to the last listener"}
	for i, name := range order {
		s, ok := at[name]
		if !ok || s.Messages == 0 || s.Messages > p.Delivered || s.P99Ms < s.P50Ms {
			t.Errorf("stage %q: %+v (of %d messages delivered, %d left out)", name, s, p.Delivered, p.StagesLeftOut)
			continue
		}
		// Each stage follows the one before, but for the last two: a
		// member hands an entry's messages to its listeners while it
		// applies the entry, before the probe marks it applied, so
		// delivery follows the commit's news, not the apply.
		prev := order[max(i-1, 0)]
		if name == "delivered to the last listener" {
			prev = "commit known to the last follower"
		}
		if i > 0 && (s.P50Ms < at[prev].P50Ms || s.P99Ms < at[prev].P99Ms) {
			t.Errorf("stage %q (%+v) comes before %q (%+v)", name, s, prev, at[prev])
		}
	}
	// The last stage is the latency, of the same messages unless some
	// were left out.
	if last := at["delivered to the last listener"]; p.StagesLeftOut == 0 && last.P50Ms != p.LatencyP50Ms {
		t.Errorf("the last stage's p50 %v is not the latency's %v", last.P50Ms, p.LatencyP50Ms)
	}
}

// After an election, the new leader's first append covers its whole log
// (ProbePoint: entries up to Upto), but it appended only the entries past
// those it accepted as a follower: the others stay the old leader's. A
// message whose index both appended (the old leader's entry there never
// reached the new one, which appended its own) is in no stage, and
// counted as left out.
func TestStagesAfterAnElection(t *testing.T) {
	s := newStageRecorder()
	sent := time.Now()
	for _, p := range []consensus.ProbePoint{
		{Server: 0, Peer: 0, Stage: consensus.StageAppended, Upto: 3},  // leader 0 appends 1..3
		{Server: 1, Peer: 1, Stage: consensus.StageAccepted, Upto: 2},  // follower 1 accepts 1..2
		{Server: 0, Peer: 0, Stage: consensus.StageCommitted, Upto: 2}, // and leader 0 commits them
		{Server: 1, Peer: 1, Stage: consensus.StageAppended, Upto: 3},  // leader 1 appends its own at 3
	} {
		s.probe(p)
	}
	s.output(consensus.Delivered{Index: 1, Messages: []consensus.GroupMessage{{Origin: 0, Seq: 1}}})
	s.output(consensus.Delivered{Index: 3, Messages: []consensus.GroupMessage{{Origin: 2, Seq: 1}}})
	s.sample(0, 1, sent, sent.Add(time.Millisecond))
	s.sample(2, 1, sent, sent.Add(time.Millisecond))
	figs, leftOut := s.figures()
	if leftOut != 1 {
		t.Errorf("%d messages left out, want 1 (index 3's)", leftOut)
	}
	for _, f := range figs {
		want := 0 // index 1's message reached no other stage
		switch f.Stage {
		case "appended at the leader", "  (sent through the leader)", "committed at the leader", "delivered to the last listener":
			want = 1
		}
		if f.Messages != want {
			t.Errorf("stage %q: %d messages, want %d", f.Stage, f.Messages, want)
		}
	}
}
