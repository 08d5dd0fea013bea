package rpc_test

import (
	"testing"
	"time"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/rpc"
)

// TestOrphans: clients crash (every 100ms on average, down for 10ms)
// while their 40ms procedures run, on a network with one-way delays of
// at most 2ms. Every remedy leaves no orphan running at the end; without
// one, orphans outlive their client's reboot. Expiration kills an orphan
// within one lease (15ms) of the crash, plus the delay of the last
// renewal; extermination and reincarnation kill it one delay after the
// reboot, when the kill or the new epoch arrives.
func TestOrphans(t *testing.T) {
	f, err := lab.Lookup("rpc")
	if err != nil {
		t.Fatal(err)
	}
	const delay = 2.0 // ms, the most a message takes
	for _, a := range f.Algorithms {
		o := f.Options(a)
		w := &lab.RPCLoad{Calls: 300, Work: 40 * time.Millisecond, ClientCrashEvery: 100 * time.Millisecond}
		o.Workload = w
		seed := uint64(2)
		o.Seed = &seed
		r, _, err := lab.Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		m := r.Metrics
		for _, c := range r.Checks {
			if !c.OK {
				t.Errorf("%s: %s: %s", a.Name, c.Name, c.Detail)
			}
		}
		if m["orphans"] < 5 {
			t.Fatalf("%s: %v orphans: the run made too few to judge", a.Name, m["orphans"])
		}
		if m["orphans_left"] != 0 {
			t.Errorf("%s: %v orphans left running at the end", a.Name, m["orphans_left"])
		}
		after, life := m["orphan_after_reboot_ms_max"], m["orphan_life_ms_max"]
		switch a.Name {
		case "plain":
			if after <= delay {
				t.Errorf("plain: orphans ran at most %vms after their client's reboot: the run shows nothing", after)
			}
		case "expiration":
			if life > 15+delay {
				t.Errorf("expiration: an orphan ran %vms after its client crashed, the lease is 15ms", life)
			}
		default:
			if after > delay {
				t.Errorf("%s: an orphan ran %vms after its client's reboot, want at most one delay (%vms)", a.Name, after, delay)
			}
		}
		t.Logf("%s: %v orphans, longest %.1fms after the crash, %.1fms after the reboot", a.Name, m["orphans"], life, after)
	}
}

// TestSameSeedSameTrace: a run with retries, crashes, renewals and
// kills replays byte for byte from its seed.
func TestSameSeedSameTrace(t *testing.T) {
	f, err := lab.Lookup("rpc")
	if err != nil {
		t.Fatal(err)
	}
	hash := func(seed uint64) string {
		o := f.Options(algo(t, "expiration"))
		w := o.Workload.(*lab.RPCLoad)
		w.Sem, w.ServerCrashEvery = rpc.AtLeastOnce, 50*time.Millisecond
		loss := 0.2
		o.Seed, o.Network = &seed, lab.NetworkFlags{Loss: &loss}
		r, _, err := lab.Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		return r.TraceSHA
	}
	if a, b, c := hash(4), hash(4), hash(5); a != b || a == "" || a == c {
		t.Fatalf("seed 4 twice: %s and %s; seed 5: %s", a, b, c)
	}
}
