package clock

import "github.com/cohort-go/cohort/proc"

// The checkers every clock demonstration is judged by.
var clockChecks = []string{"integrity", "no-duplicates", "clock-condition"}

// Algorithms are the clock family's registry entries.
var Algorithms = []proc.Algorithm{
	{
		Family: "clocks", Name: "lamport-figure",
		Summary:  "three clocks ticking 6, 8 and 10 per tick, corrected by Lamport's rule (the seed's figure)",
		Source:   "seed 003 §6.2",
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
		Source:   "seed 003 §6.2",
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
		Source:  "seed 003 §6.2",
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
		Source:  "seed 003 §6.2",
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
		Source:   "seed 003 §6.2",
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
		Source:   "seed 003 §6.2",
		Assumes:  proc.Assumptions{},
		New:      newVectorFigure("b"),
		Validate: exactly(3),
		Checks:   clockChecks,
		Scenario: "nodes: 3\n",
		Messages: []proc.Message{
			VStamped{},
		},
	},
}
