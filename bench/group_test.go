package bench

import (
	"context"
	"strings"
	"testing"
	"time"

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
