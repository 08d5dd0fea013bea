package scenario

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Limits on what a scenario may ask for (see the package documentation).
const (
	MaxFileSize = 16 << 20   // bytes
	MaxNodes    = 10_000_000 // processes
	MaxEntries  = 100_000    // faults, inputs, network.links, clocks.nodes: each

	maxGenerated      = 100_000_000 // workload.count × nodes
	maxPartitionCells = 100_000_000 // partitions × nodes
	maxGraphSize      = 10_000_000  // nodes × degree of a random topology
	maxClockOffset    = 1000 * time.Hour
)

// Scenario is a parsed scenario file. Its values are checked: node ids are
// in range, probabilities in [0,1], pauses end after they start. Config
// turns it into a sim.Config.
type Scenario struct {
	// File is the name errors are reported against.
	File string
	// Family and Algo name what the scenario is for; either may be empty.
	Family, Algo string
	Nodes        int
	// Initial, if above 0, is how many processes are present at the start
	// (0 .. Initial-1); the others join later (see sim.Config.Initial).
	Initial int
	Seed    uint64
	// Topology is full, ring, line, grid or random; Degree is the minimum
	// degree of a random one (0 otherwise).
	Topology string
	Degree   int
	// Network is the network model, with the partitions of the fault list
	// in Network.Partitions. Latency is never nil.
	Network sim.Network
	// Clocks are the hardware clocks; nil means perfect clocks.
	Clocks *Clocks
	// Faults are the crashes, recoveries, pauses, slow spells, joins and
	// leaves, in file order.
	Faults []sim.Fault
	// Churn are the churn entries of the fault list, in file order.
	Churn []sim.Churn
	// Inputs are the scripted inputs, in file order.
	Inputs []Input
	// Workload generates inputs; nil means none.
	Workload *Workload
	// Deadline stops the run at this virtual time; 0 runs to quiescence.
	Deadline time.Duration
	// MaxEvents stops the run after this many events; 0 is unlimited.
	MaxEvents int64
}

// Clocks describes the hardware clocks of a run.
type Clocks struct {
	// MaxOffset and MaxDrift bound the random clocks every process gets
	// (sim.Skew); both zero means perfect clocks.
	MaxOffset time.Duration
	MaxDrift  float64
	// Nodes are explicit clocks; they replace the random ones.
	Nodes map[proc.ID]sim.HWClock
}

// Model returns the clock model: the explicit clocks, and for the other
// processes random ones drawn from seed (or perfect ones if there are no
// random bounds).
func (c *Clocks) Model(seed uint64) sim.ClockModel {
	var random sim.ClockModel
	if c.MaxOffset > 0 || c.MaxDrift > 0 {
		random = sim.Skew(c.MaxOffset, c.MaxDrift, seed)
	}
	explicit := maps.Clone(c.Nodes)
	return func(id proc.ID) sim.HWClock {
		if hw, ok := explicit[id]; ok {
			return hw
		}
		if random != nil {
			return random(id)
		}
		return sim.HWClock{}
	}
}

// Input is one scripted input: Name with Args, delivered to Node at At.
type Input struct {
	At   time.Duration
	Node proc.ID
	Name string
	Args []string
	Line int // where it is in the file
}

// Workload generates inputs: every process issues Count inputs Name(Args),
// separated by think times drawn from Think.
type Workload struct {
	Input string
	Args  []string
	Think sim.Dist
	Count int
	Line  int // where the workload's input is in the file
}

// InputMaker builds a family's input from its name and arguments, or
// reports what is wrong with them (`unknown input "aquire" (want acquire or
// release)`).
type InputMaker func(name string, args []string) (proc.Input, error)

// Error is a problem in a scenario file.
type Error struct {
	File  string
	Line  int    // 1-based; 0 when the problem is not at one line
	Field string // the field at fault, e.g. "network.links[1].loss"; empty at the top level
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads and parses the scenario file at path; errors name the file as
// path.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, tooBig(path, fi.Size())
	}
	// Read one byte more than the limit, to catch files that grow or are
	// not regular.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

func tooBig(name string, size int64) error {
	return &Error{File: name, Err: fmt.Errorf("file is %d bytes; a scenario is at most %d (16 MiB)", size, MaxFileSize)}
}

// Config builds the sim.Config of the scenario: everything but New, the
// algorithm's constructor, which the caller sets. mk builds the scripted
// and generated inputs; it may be nil if the scenario has none. An error
// from mk is reported with the line of the input.
func (s *Scenario) Config(mk InputMaker) (sim.Config, error) {
	topo, err := s.topology()
	if err != nil {
		return sim.Config{}, &Error{File: s.File, Field: "topology", Err: err}
	}
	cfg := sim.Config{
		Nodes:     s.Nodes,
		Seed:      s.Seed,
		Topology:  topo,
		Network:   s.Network,
		Faults:    slices.Clone(s.Faults),
		Initial:   s.Initial,
		Churn:     slices.Clone(s.Churn),
		Deadline:  s.Deadline,
		MaxEvents: s.MaxEvents,
	}
	cfg.Network.Links = slices.Clone(s.Network.Links)
	cfg.Network.Partitions = slices.Clone(s.Network.Partitions)
	if s.Clocks != nil {
		cfg.Clocks = s.Clocks.Model(s.Seed)
	}
	build := func(name string, args []string, line int, field string) (proc.Input, error) {
		if mk == nil {
			return nil, &Error{File: s.File, Line: line, Field: field, Err: errors.New("this run takes no inputs")}
		}
		in, err := mk(name, args)
		if err == nil && in == nil {
			err = fmt.Errorf("no input made for %q", name)
		}
		if err != nil {
			return nil, &Error{File: s.File, Line: line, Field: field, Err: err}
		}
		return in, nil
	}
	var wl sim.Combine
	if len(s.Inputs) > 0 {
		script := make(sim.Script, 0, len(s.Inputs))
		for i, in := range s.Inputs {
			v, err := build(in.Name, in.Args, in.Line, fmt.Sprintf("inputs[%d]", i))
			if err != nil {
				return sim.Config{}, err
			}
			script = append(script, sim.TimedInput{At: in.At, Node: in.Node, Input: v})
		}
		wl = append(wl, script)
	}
	if w := s.Workload; w != nil {
		v, err := build(w.Input, w.Args, w.Line, "workload.input")
		if err != nil {
			return sim.Config{}, err
		}
		wl = append(wl, sim.Poisson{
			Make:  func(proc.ID, int) proc.Input { return v },
			Think: w.Think,
			Count: w.Count,
		})
	}
	switch len(wl) {
	case 0:
	case 1:
		cfg.Workload = wl[0]
	default:
		cfg.Workload = wl
	}
	return cfg, nil
}

// topology builds the scenario's graph.
func (s *Scenario) topology() (sim.Topology, error) {
	switch s.Topology {
	case "", "full":
		return sim.NewFull(s.Nodes), nil
	case "ring":
		return sim.Ring(s.Nodes), nil
	case "line":
		return sim.Line(s.Nodes), nil
	case "grid":
		return sim.Grid(s.Nodes), nil
	case "random":
		return sim.RandomGraph(s.Nodes, s.Degree, s.Seed)
	}
	return nil, fmt.Errorf("unknown topology %q", s.Topology)
}

// topologies are the names the topology field takes.
var topologies = []string{"full", "ring", "line", "grid", "random"}

// Resize returns a copy of s for n processes, or an error naming the first
// process that s refers to (in a fault, an input, a link, a partition, an
// explicit clock) and that n processes would leave out, or an initial
// count above n. It is how a command-line --nodes overrides a scenario.
func (s *Scenario) Resize(n int) (*Scenario, error) {
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("%d nodes: want 1..%d", n, MaxNodes)
	}
	out := *s
	out.Nodes = n
	bad := func(what string, id proc.ID) error {
		return fmt.Errorf("%s names process %d, which %d nodes leave out", what, id, n)
	}
	for _, f := range s.Faults {
		if int(f.Node) >= n {
			return nil, bad("fault "+f.Kind.String(), f.Node)
		}
	}
	for _, in := range s.Inputs {
		if int(in.Node) >= n {
			return nil, bad(fmt.Sprintf("input %q (line %d)", in.Name, in.Line), in.Node)
		}
	}
	for _, l := range s.Network.Links {
		if int(max(l.From, l.To)) >= n {
			return nil, bad(fmt.Sprintf("link %d→%d", l.From, l.To), max(l.From, l.To))
		}
	}
	for _, p := range s.Network.Partitions {
		for _, g := range p.Groups {
			for _, id := range g {
				if int(id) >= n {
					return nil, bad("a partition", id)
				}
			}
		}
	}
	if s.Clocks != nil {
		for _, id := range slices.Sorted(maps.Keys(s.Clocks.Nodes)) {
			if int(id) >= n {
				return nil, bad("an explicit clock", id)
			}
		}
	}
	if s.Initial > n {
		return nil, fmt.Errorf("initial %d is more than %d nodes", s.Initial, n)
	}
	if s.Topology == "random" && s.Degree >= n {
		return nil, fmt.Errorf("a random topology of degree %d needs more than %d nodes", s.Degree, n)
	}
	return &out, nil
}
