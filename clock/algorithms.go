package clock

import "github.com/cohort-go/cohort/proc"

// The checkers every clock demonstration is judged by.
var clockChecks = []string{"integrity", "no-duplicates", "clock-condition"}

// Algorithms are the clock family's registry entries.
var Algorithms = []proc.Algorithm{
	{
		Family: "clocks", Name: "lamport-figure",
		Summary:  "three clocks ticking 6, 8 and 10 per tick, corrected by Lamport's rule (the textbook figure)",
		Source:   "Lamport 1978; Tanenbaum & van Steen §6.2",
		Assumes:  proc.Assumptions{},
		New:      newFigure(true),
		Validate: exactly(3),
		Checks:   clockChecks,
		Scenario: figureScenario,
		Messages: []proc.Message{
			Stamped{},
		},
	},
	{
		Family: "clocks", Name: "physical-figure",
		Summary:  "the same three clocks left uncorrected: m3 and m4 arrive before they were sent",
		Source:   "Lamport 1978; Tanenbaum & van Steen §6.2",
		Assumes:  proc.Assumptions{},
		New:      newFigure(false),
		Validate: exactly(3),
		Checks:   clockChecks,
		Breaks:   []string{"clock-condition"},
		Scenario: figureScenario,
		Messages: []proc.Message{
			Stamped{},
		},
	},
	{
		Family: "clocks", Name: "lamport",
		Summary: "N clocks at different rates exchanging random messages, corrected by Lamport's rule",
		Source:  "Lamport 1978; Tanenbaum & van Steen §6.2",
		// Crash-stop is harmless; recovery with fresh state restarts the
		// clock and breaks the clock condition (it needs stable storage).
		Assumes: proc.Assumptions{Failures: "crash-stop"},
		New:     newChatter(true),
		Checks:  clockChecks,
		Messages: []proc.Message{
			Stamped{},
		},
	},
	{
		Family: "clocks", Name: "physical",
		Summary: "the same clocks without correction: the clock condition breaks",
		Source:  "Lamport 1978; Tanenbaum & van Steen §6.2",
		Assumes: proc.Assumptions{},
		New:     newChatter(false),
		Checks:  clockChecks,
		Breaks:  []string{"clock-condition"},
		Messages: []proc.Message{
			Stamped{},
		},
	},
	{
		Family: "clocks", Name: "vector-a",
		Summary:  "vector clocks, situation (a): ts(m2)=(2,1,0) < ts(m4)=(4,3,0), m2 may causally precede m4",
		Source:   "Fidge 1988, Mattern 1989; Tanenbaum & van Steen §6.2",
		Assumes:  proc.Assumptions{},
		New:      newVectorFigure("a"),
		Validate: exactly(3),
		Checks:   clockChecks,
		Scenario: "nodes: 3\n",
		Messages: []proc.Message{
			VStamped{},
		},
	},
	{
		Family: "clocks", Name: "vector-b",
		Summary:  "vector clocks, situation (b): ts(m2)=(4,1,0) and ts(m4)=(2,3,0) are concurrent, m2 and m4 may conflict",
		Source:   "Fidge 1988, Mattern 1989; Tanenbaum & van Steen §6.2",
		Assumes:  proc.Assumptions{},
		New:      newVectorFigure("b"),
		Validate: exactly(3),
		Checks:   clockChecks,
		Scenario: "nodes: 3\n",
		Messages: []proc.Message{
			VStamped{},
		},
	},
	{
		Family: "clocks", Name: "cristian",
		Summary: "Cristian's algorithm: clients ask a time server, correct by θ of each exchange (steps forward, slews back)",
		Source:  "Cristian 1989; Tanenbaum & van Steen §6.1",
		// A recovered client starts again from its hardware clock.
		Assumes:  proc.Assumptions{Failures: "crash-recover"},
		New:      must(NewTimeSync(DefaultCristian)),
		Checks:   syncChecks,
		Scenario: timeServerScenario,
		Messages: []proc.Message{TimeRequest{}, TimeReply{}},
	},
	{
		Family: "clocks", Name: "ntp",
		Summary: "NTP's clock filter: the same exchange; of the last 8 samples (θ, δ), correct by the θ of the smallest δ",
		Source:  "Mills, RFC 5905; Tanenbaum & van Steen §6.1",
		Assumes: proc.Assumptions{Failures: "crash-recover"},
		New:     must(NewTimeSync(DefaultNTP)),
		Checks:  syncChecks,
		// The same network and clocks as Cristian's, to compare them.
		Scenario: timeServerScenario,
		Messages: []proc.Message{TimeRequest{}, TimeReply{}},
	},
	{
		Family: "clocks", Name: "berkeley",
		Summary:  "the Berkeley algorithm: a daemon polls every clock, averages those near the median, sends each its adjustment",
		Source:   "Gusella & Zatti 1989; Tanenbaum & van Steen §6.1",
		Assumes:  proc.Assumptions{Failures: "crash-stop"},
		New:      must(NewBerkeley(DefaultBerkeley)),
		Checks:   syncChecks,
		Scenario: berkeleyScenario,
		Messages: []proc.Message{Poll{}, ClockValue{}, Adjust{}},
	},
	{
		Family: "clocks", Name: "rbs",
		Summary:  "reference broadcast synchronization: receivers compare beacon arrival times, offsets and drift by regression over 8 beacons",
		Source:   "Elson, Girod & Estrin 2002; Tanenbaum & van Steen §6.1",
		Assumes:  proc.Assumptions{Failures: "crash-stop"},
		New:      must(NewRBS(DefaultRBS)),
		Checks:   syncChecks,
		Scenario: rbsScenario,
		Messages: []proc.Message{Beacon{}, Observation{}},
	},
	{
		Family: "clocks", Name: "hlc",
		Summary: "hybrid logical clocks (l, c): respect happened-before and stay within ε of physical time",
		Source:  "Kulkarni et al., Logical Physical Clocks (2014); beyond the textbooks",
		// A recovered process would forget the l it had heard of.
		Assumes:  proc.Assumptions{Failures: "crash-stop"},
		New:      must(NewHLCDemo(DefaultHLC)),
		Checks:   append(syncChecks[:len(syncChecks):len(syncChecks)], "hlc"),
		Scenario: hlcScenario,
		Messages: []proc.Message{HLCMsg{}},
	},
}

// The checkers the physical clock synchronizations are judged by.
var syncChecks = append(clockChecks[:len(clockChecks):len(clockChecks)], "monotonic-clock")

// must returns the constructor of a registered configuration, which is
// valid by construction.
func must(f func(proc.ID, int) proc.Process, err error) func(proc.ID, int) proc.Process {
	if err != nil {
		panic(err)
	}
	return f
}

// The default settings of the physical clock algorithms: every hardware
// clock drifts by up to ρ = 1e-4 and starts up to 5 ms off, latency is
// jittery (lognormal, median 1 ms), and the link from p1 to p0 is twice as
// slow as the way back (asymmetric delay). A time server (p0) has a
// perfect clock; Berkeley has none.
const (
	timeServerScenario = `nodes: 4
network:
  latency: lognormal:1ms,0.5
  links:
    - {from: 1, to: 0, latency: "lognormal:2ms,0.5"}
clocks:
  max_offset: 5ms
  max_drift: 1e-4
  nodes:
    - {node: 0, offset: 0, drift: 0}
stop:
  deadline: 10s
`
	berkeleyScenario = `nodes: 5
network:
  latency: lognormal:1ms,0.5
  links:
    - {from: 1, to: 0, latency: "lognormal:2ms,0.5"}
clocks:
  max_offset: 5ms
  max_drift: 1e-4
stop:
  deadline: 10s
`
	// RBS's beacons share one medium: the same propagation to every
	// receiver, and a little receive-side jitter (σ = 20 µs).
	rbsScenario = `nodes: 5
network:
  latency: normal:1ms,20us
clocks:
  max_offset: 5ms
  max_drift: 1e-4
stop:
  deadline: 10s
`
	hlcScenario = `nodes: 4
network:
  latency: lognormal:1ms,0.5
  links:
    - {from: 1, to: 0, latency: "lognormal:2ms,0.5"}
clocks:
  max_offset: 2ms
  max_drift: 1e-4
`
)
