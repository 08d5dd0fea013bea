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
func TestRunGroupStages(t *testing.T) {
	a := group.ReplicatedAlgorithm(consensus.DefaultConfig)
	ps, err := RunGroup(context.Background(), GroupConfig{Algorithms: []proc.Algorithm{a}, Windows: []int{16}, Duration: 500 * time.Millisecond, Rate: 500, Stages: true})
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	at := map[string]StagePoint{}
	for _, s := range p.Stages {
		at[s.Stage] = s
	}
	order := []string{"appended at the leader", "committed at the leader", "commit known to the last follower", "applied by the last member", "delivered to the last listener"}
	for i, name := range order {
		s, ok := at[name]
		if !ok || s.Messages == 0 || s.Messages > p.Delivered || s.P99Ms < s.P50Ms {
			t.Errorf("stage %q: %+v (of %d messages delivered)", name, s, p.Delivered)
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
	if last := at["delivered to the last listener"]; last.P50Ms != p.LatencyP50Ms {
		t.Errorf("the last stage's p50 %v is not the latency's %v", last.P50Ms, p.LatencyP50Ms)
	}
}
