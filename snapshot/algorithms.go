package snapshot

import (
	"fmt"

	"github.com/cohort-go/cohort/proc"
)

// Algorithms lists the family's algorithms, each wrapping an account of
// the bank workload (Bank): Chandy–Lamport, then Lai–Yang. Wrap either
// around another algorithm with WithChandyLamport or WithLaiYang.
var Algorithms = []proc.Algorithm{
	{
		Family:  "snapshot",
		Name:    "chandy-lamport",
		Summary: "markers on FIFO channels: a process records its state on its first marker and each channel until that channel's marker",
		Source:  "Chandy & Lamport 1985; Coulouris et al. §14.5.3",
		Assumes: proc.Assumptions{FIFO: true, Reliable: true, Topology: "connected"},
		New:     func(proc.ID, int) proc.Process { return NewChandyLamport(NewBank(DefaultBalance)) },
		Checks:  checks,
		Theory:  theory,
		Notes: map[string]string{
			"markers_per_channel": "one marker per directed channel per snapshot",
			"complete_delays":     "the farthest process records after diameter delays; its channels' markers arrive one delay later",
		},
		Scenario: fifoScenario,
	},
	{
		Family:  "snapshot",
		Name:    "lai-yang",
		Summary: "colours on non-FIFO channels: messages carry their sender's colour, a red message turns its receiver red first; channel states by Mattern's white-message counters",
		Source:  "Lai & Yang 1987; Mattern 1993; Kshemkalyani & Singhal §4.4",
		Assumes: proc.Assumptions{Reliable: true, Topology: "connected"},
		New:     func(proc.ID, int) proc.Process { return NewLaiYang[Money](NewBank(DefaultBalance)) },
		Checks:  checks,
		Theory:  theory,
		Notes: map[string]string{
			"markers_per_channel": "one marker per directed channel per snapshot, carrying the white count",
			"complete_delays":     "diameter + 1 delays, unless a white message in flight takes longer",
		},
		Scenario: reorderScenario,
	},
}

func init() {
	for i := range Algorithms {
		Algorithms[i].Inputs = Inputs
	}
	Algorithms[0].Messages = []proc.Message{Marker{}, Money{}}
	Algorithms[1].Messages = []proc.Message{Marker{}, Coloured[Money]{}}
}

var checks = []string{"snapshot-consistent", "snapshot-channels", "bank-conserved"}

// The default scenarios: four accounts on the complete graph with jittery
// latency, FIFO for Chandy–Lamport, reordering for Lai–Yang; the lab's
// workload makes the payments and begins the snapshots.
const (
	fifoScenario = `nodes: 4
network:
  latency: uniform:500us,2ms
  fifo: true
`
	reorderScenario = `nodes: 4
network:
  latency: uniform:500us,2ms
  reorder: 0.3
`
)

// theory: one marker per directed channel per snapshot.
func theory(int) map[string]float64 {
	return map[string]float64{"markers_per_channel": 1}
}

// WithChandyLamport returns a with Chandy–Lamport wrapped around each of
// its processes, the snapshot checkers added to its own, and reliable
// FIFO channels to its assumptions.
func WithChandyLamport(a proc.Algorithm) proc.Algorithm {
	a.Assumes.FIFO, a.Assumes.Reliable = true, true
	return with(a, "chandy-lamport", func(p proc.Process) proc.Process { return NewChandyLamport(p) })
}

// WithLaiYang returns a with Lai–Yang wrapped around each of its
// processes, the snapshot checkers added to its own, and reliable
// channels to its assumptions.
func WithLaiYang(a proc.Algorithm) proc.Algorithm {
	a.Assumes.Reliable = true
	return with(a, "lai-yang", func(p proc.Process) proc.Process { return NewLaiYang[proc.Message](p) })
}

func with(a proc.Algorithm, name string, wrap func(proc.Process) proc.Process) proc.Algorithm {
	newProc, inputs := a.New, a.Inputs
	a.Name += "+" + name
	a.New = func(id proc.ID, n int) proc.Process { return wrap(newProc(id, n)) }
	a.Checks = append(append([]string(nil), a.Checks...), "snapshot-consistent", "snapshot-channels")
	a.Inputs = func(name string, args []string) (proc.Input, error) {
		if name == "take" {
			return Take{}, nil
		}
		if inputs == nil {
			return nil, fmt.Errorf("unknown input %q", name)
		}
		return inputs(name, args)
	}
	return a
}

// Inputs builds the family's inputs by name: "take" (begin a snapshot)
// and "pay" (send a payment).
func Inputs(name string, args []string) (proc.Input, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%s: takes no arguments, got %q", name, args)
	}
	switch name {
	case "take":
		return Take{}, nil
	case "pay":
		return Pay{}, nil
	}
	return nil, fmt.Errorf("unknown snapshot input %q (known: take, pay)", name)
}
