package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

const ms = time.Millisecond

func ptr[T any](v T) *T { return &v }

func TestParseFullExample(t *testing.T) {
	s, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		File:     "testdata/full.yaml",
		Family:   "mutex",
		Algo:     "ricart-agrawala",
		Nodes:    8,
		Seed:     42,
		Topology: "full",
		Network: sim.Network{
			Latency:   sim.Exponential{MeanD: ms},
			FIFO:      true,
			Loss:      0.01,
			Duplicate: 0.002,
			Links: []sim.Link{
				{From: 0, To: 1, Latency: sim.Constant(5 * ms), Loss: ptr(0.1)},
				{From: 1, To: 0, Latency: sim.Uniform{Min: ms, Max: 2 * ms}},
			},
			Partitions: []sim.Partition{
				{Groups: [][]proc.ID{{0, 1}, {2, 3}}, From: 20 * ms, To: 40 * ms},
				{Groups: [][]proc.ID{{4}}, From: 60 * ms},
			},
		},
		Clocks: &Clocks{
			MaxOffset: ms,
			MaxDrift:  1e-4,
			Nodes: map[proc.ID]sim.HWClock{
				1: {Offset: 5 * ms, Drift: 1e-4},
				2: {Offset: -3 * ms},
			},
		},
		Faults: []sim.Fault{
			{Kind: sim.Crash, Node: 7, At: 0},
			{Kind: sim.Recover, Node: 7, At: 50 * ms},
			{Kind: sim.Pause, Node: 3, At: 10 * ms, Until: 20 * ms},
			{Kind: sim.Slow, Node: 3, At: 0, Until: 100 * ms, Delay: 2 * ms},
		},
		Inputs: []Input{
			{At: 10 * ms, Node: 4, Name: "acquire", Line: 34},
			{At: 12 * ms, Node: 2, Name: "tell", Args: []string{"5"}, Line: 35},
		},
		Workload:  &Workload{Input: "acquire", Think: sim.Exponential{MeanD: 10 * ms}, Count: 5, Line: 38},
		Deadline:  time.Second,
		MaxEvents: 1000000,
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got\n%#v\nwant\n%#v", s, want)
	}

	cfg, err := s.Config(makeCall)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Nodes != 8 || cfg.Seed != 42 || cfg.Deadline != time.Second || cfg.MaxEvents != 1000000 {
		t.Errorf("config: nodes %d seed %d deadline %v max events %d", cfg.Nodes, cfg.Seed, cfg.Deadline, cfg.MaxEvents)
	}
	if !reflect.DeepEqual(cfg.Network, want.Network) || !reflect.DeepEqual(cfg.Faults, want.Faults) {
		t.Errorf("config network or faults differ from the scenario's")
	}
	if got := cfg.Topology.String(); got != "full" {
		t.Errorf("topology %s, want full", got)
	}
	skew := sim.Skew(ms, 1e-4, 42)
	for id := proc.ID(0); id < 8; id++ {
		want := skew(id)
		if hw, ok := s.Clocks.Nodes[id]; ok {
			want = hw
		}
		if got := cfg.Clocks(id); got != want {
			t.Errorf("clock of node %d = %+v, want %+v", id, got, want)
		}
	}
	wl, ok := cfg.Workload.(sim.Combine)
	if !ok || len(wl) != 2 {
		t.Fatalf("workload %T, want a script and a generator", cfg.Workload)
	}
	script := sim.Script{
		{At: 10 * ms, Node: 4, Input: call{Name: "acquire"}},
		{At: 12 * ms, Node: 2, Input: call{Name: "tell", Args: []string{"5"}}},
	}
	if !reflect.DeepEqual(wl[0], script) {
		t.Errorf("script %v, want %v", wl[0], script)
	}
	gen := wl[1].(sim.Poisson)
	if gen.Count != 5 || gen.Think != (sim.Exponential{MeanD: 10 * ms}) || !reflect.DeepEqual(gen.Make(3, 0), call{Name: "acquire"}) {
		t.Errorf("generator %+v", gen)
	}
}

// TestErrors checks that every kind of mistake is reported with the file,
// the line and the field.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "nodez: 8\n",
			`run.yaml:1: unknown field "nodez" (did you mean "nodes"?)`},
		{"unknown key without a near miss", "nodes: 8\ncolour: blue\n",
			`run.yaml:2: unknown field "colour" (want family, algo, nodes, initial, seed, topology, degree, network, clocks, faults, inputs, workload or stop)`},
		{"unknown nested key", "nodes: 8\nnetwork:\n  latency: 1ms\n  lossy: 0.1\n",
			`run.yaml:4: network: unknown field "lossy" (did you mean "loss"?)`},
		{"swapped letters", "nodes: 8\nclocks:\n  max_ofsfet: 1ms\n",
			`run.yaml:3: clocks: unknown field "max_ofsfet" (did you mean "max_offset"?)`},
		{"duplicate key", "nodes: 8\nseed: 1\nseed: 2\n",
			`run.yaml:3: field "seed" given twice (first at line 2)`},
		{"missing nodes", "seed: 1\n",
			`run.yaml:1: missing field "nodes" (the number of processes)`},
		{"wrong type", "nodes: eight\n",
			`run.yaml:1: nodes: want an integer, got "eight"`},
		{"quoted number", "nodes: \"8\"\n",
			`run.yaml:1: nodes: want an integer, got "8"`},
		{"fraction", "nodes: 8.5\n",
			`run.yaml:1: nodes: want an integer, got 8.5`},
		{"huge", "nodes: 99999999999999999999\n",
			`run.yaml:1: nodes: 99999999999999999999 is out of range`},
		{"negative seed", "nodes: 8\nseed: -1\n",
			`run.yaml:2: seed: want a non-negative integer, got -1`},
		{"huge negative seed", "nodes: 8\nseed: -99999999999999999999\n",
			`run.yaml:2: seed: want a non-negative integer, got -99999999999999999999`},
		{"infinite seed", "nodes: 8\nseed: .inf\n",
			`run.yaml:2: seed: want an integer, got .inf`},
		{"mapping for a list", "nodes: 8\nfaults:\n  crash: 1\n",
			`run.yaml:3: faults: want a list, got a mapping`},
		{"list for a mapping", "nodes: 8\nnetwork: [1ms]\n",
			`run.yaml:2: network: want a mapping of fields, got a list`},
		{"bool", "nodes: 8\nnetwork:\n  fifo: 1\n",
			`run.yaml:3: network.fifo: want true or false, got 1`},
		{"nodes 0", "nodes: 0\n",
			`run.yaml:1: nodes: want 1..10000000, got 0`},
		{"too many nodes", "nodes: 20000000\n",
			`run.yaml:1: nodes: want 1..10000000, got 20000000`},
		{"bad topology", "nodes: 8\ntopology: rign\n",
			`run.yaml:2: topology: unknown topology "rign" (did you mean "ring"?)`},
		{"random without degree", "nodes: 8\ntopology: random\n",
			`run.yaml:2: topology: random needs a degree (the least number of neighbours of a process)`},
		{"degree too large", "nodes: 8\ntopology: random\ndegree: 8\n",
			`run.yaml:3: degree: 8 is too many neighbours for 8 nodes (want 1..7)`},
		{"degree without random", "nodes: 8\ndegree: 3\ntopology: ring\n",
			`run.yaml:2: degree: only for topology random (this one is ring)`},
		{"node out of range in a fault", "nodes: 8\nfaults:\n  - crash 1 at 0ms\n  - recover 1 at 5ms\n  - crash 9 at 10ms\n",
			`run.yaml:5: faults[2]: node 9 out of range 0..7`},
		{"nodes after faults", "faults:\n  - crash 8 at 0ms\nnodes: 8\n",
			`run.yaml:2: faults[0]: node 8 out of range 0..7`},
		{"missing keyword", "nodes: 8\nfaults:\n  - crash 7 0ms\n",
			`run.yaml:3: faults[0]: "crash 7 0ms": column 9: want "at", got "0ms"`},
		{"bad node id", "nodes: 8\nfaults:\n  - crash 7 at 0ms\n  - partition {0,1} | {2,x}\n",
			`run.yaml:4: faults[1]: "partition {0,1} | {2,x}": column 22: want a node id, got "x"`},
		{"fault cut short", "nodes: 8\nfaults:\n  - pause 3 from 10ms\n",
			`run.yaml:3: faults[0]: "pause 3 from 10ms": column 18: want "to", got end of text`},
		{"bad time", "nodes: 8\nfaults:\n  - slow 3 by 2 from 0ms to 1ms\n",
			`run.yaml:3: faults[0]: "slow 3 by 2 from 0ms to 1ms": column 11: bad duration "2" (want e.g. 250us, 1ms, 2s)`},
		{"negative time", "nodes: 8\nfaults:\n  - crash 3 at -1ms\n",
			`run.yaml:3: faults[0]: "crash 3 at -1ms": column 12: negative duration "-1ms"`},
		{"unknown fault", "nodes: 8\nfaults:\n  - crsh 1 at 0ms\n",
			`run.yaml:3: faults[0]: "crsh 1 at 0ms": column 1: unknown fault "crsh" (did you mean "crash"?)`},
		{"trailing words", "nodes: 8\nfaults:\n  - crash 1 at 0ms now\n",
			`run.yaml:3: faults[0]: "crash 1 at 0ms now": column 16: unexpected "now" after the end of the fault`},
		{"unclosed group", "nodes: 8\nfaults:\n  - partition {0,1 {2}\n",
			`run.yaml:3: faults[0]: "partition {0,1 {2}": column 16: want "," or "}", got "{"`},
		{"group without braces", "nodes: 8\nfaults:\n  - partition 0,1 | 2\n",
			`run.yaml:3: faults[0]: "partition 0,1 | 2": column 11: want "{" to open a group of nodes, got "0"`},
		{"empty fault", "nodes: 8\nfaults:\n  - \"  \"\n",
			`run.yaml:3: faults[0]: "  ": column 3: empty fault (want crash, recover, pause, slow, partition, join, leave or churn)`},
		{"fault not a string", "nodes: 8\nfaults:\n  - {crash: 1}\n",
			`run.yaml:3: faults[0]: want a fault such as "crash 3 at 10ms", got a mapping`},
		{"overlapping groups", "nodes: 8\nfaults:\n  - partition {0,1} | {1,2} from 5ms\n",
			`run.yaml:3: faults[0]: node 1 is in two groups: the groups of a partition must be disjoint`},
		{"node twice in a group", "nodes: 8\nfaults:\n  - partition {0,0}\n",
			`run.yaml:3: faults[0]: node 0 is listed twice in one group`},
		{"partition ends before it starts", "nodes: 8\nfaults:\n  - partition {0} from 5ms to 5ms\n",
			`run.yaml:3: faults[0]: partition ends at 5ms, not after it starts at 5ms`},
		{"pause ends before it starts", "nodes: 8\nfaults:\n  - pause 1 from 20ms to 10ms\n",
			`run.yaml:3: faults[0]: ends at 10ms, not after it starts at 20ms`},
		{"slow by nothing", "nodes: 8\nfaults:\n  - slow 1 by 0ms from 0ms to 10ms\n",
			`run.yaml:3: faults[0]: slow by 0s: the delay must be positive`},
		{"join out of range", "nodes: 8\nfaults:\n  - join 8 at 10ms\n",
			`run.yaml:3: faults[0]: node 8 out of range 0..7`},
		{"churn without rate", "nodes: 8\nfaults:\n  - churn to 1s\n",
			`run.yaml:3: faults[0]: "churn to 1s": column 7: want a rate (join R/s, fail R/s or leave R/s), got "to"`},
		{"churn bad rate", "nodes: 8\nfaults:\n  - churn join 2 to 1s\n",
			`run.yaml:3: faults[0]: "churn join 2 to 1s": column 12: join rate: want events per second such as 2/s or 0.5/s, got "2"`},
		{"churn negative rate", "nodes: 8\nfaults:\n  - churn fail -1/s to 1s\n",
			`run.yaml:3: faults[0]: "churn fail -1/s to 1s": column 12: fail rate: want events per second such as 2/s or 0.5/s, got "-1/s"`},
		{"churn without end", "nodes: 8\nfaults:\n  - churn leave 1/s from 1s\n",
			`run.yaml:3: faults[0]: "churn leave 1/s from 1s": column 24: want "to", got end of text`},
		{"churn too much", "nodes: 8\nfaults:\n  - churn join 1e9/s to 1h\n",
			`run.yaml:3: faults[0]: churn of 3600000000000 expected events (rates × duration): at most 10000000`},
		{"initial above nodes", "nodes: 8\ninitial: 9\n",
			`run.yaml:2: initial: want 1..8 (nodes), got 9`},
		{"bad distribution", "nodes: 8\nnetwork:\n  latency: fast\n",
			`run.yaml:3: network.latency: distribution "fast": bad duration "fast" (want e.g. 250us, 1ms, 2s)`},
		{"bad distribution kind", "nodes: 8\nworkload:\n  input: acquire\n  think: poisson:1ms\n  count: 1\n",
			`run.yaml:4: workload.think: distribution "poisson:1ms": unknown kind "poisson" (want const, uniform, exp, normal or lognormal)`},
		{"probability 1.5", "nodes: 8\nnetwork:\n  loss: 1.5\n",
			`run.yaml:3: network.loss: 1.5 is not a probability (want a number in [0,1])`},
		{"probability nan", "nodes: 8\nnetwork:\n  reorder: .nan\n",
			`run.yaml:3: network.reorder: want a number, got .nan`},
		{"link probability", "nodes: 8\nnetwork:\n  links:\n    - {from: 0, to: 1}\n    - {from: 1, to: 2, loss: -0.5}\n",
			`run.yaml:5: network.links[1].loss: -0.5 is not a probability (want a number in [0,1])`},
		{"link node out of range", "nodes: 8\nnetwork:\n  links:\n    - {from: 0, to: 8}\n",
			`run.yaml:4: network.links[0].to: node 8 out of range 0..7`},
		{"link without from", "nodes: 8\nnetwork:\n  links:\n    - {to: 1, loss: 0.5}\n",
			`run.yaml:4: network.links[0]: missing field "from"`},
		{"link twice", "nodes: 8\nnetwork:\n  links:\n    - {from: 0, to: 1}\n    - {from: 0, to: 1, loss: 1}\n",
			`run.yaml:5: network.links[1]: link 0→1 given twice (first at line 4)`},
		{"clock drift", "nodes: 8\nclocks:\n  nodes:\n    - {node: 3, drift: -1}\n",
			`run.yaml:4: clocks.nodes[0].drift: want a number between -1 and 1, got -1`},
		{"clock max drift", "nodes: 8\nclocks:\n  max_drift: 1\n",
			`run.yaml:3: clocks.max_drift: want a number in [0, 1), got 1`},
		{"clock offset too large", "nodes: 8\nclocks:\n  max_offset: 2000h\n",
			`run.yaml:3: clocks.max_offset: 2000h0m0s is too large (at most 1000h0m0s)`},
		{"clock twice", "nodes: 8\nclocks:\n  nodes:\n    - {node: 3, offset: 1ms}\n    - {node: 3, offset: 2ms}\n",
			`run.yaml:5: clocks.nodes[1]: node 3 given twice (first at line 4)`},
		{"deadline negative", "nodes: 8\nstop:\n  deadline: -1s\n",
			`run.yaml:3: stop.deadline: negative duration "-1s"`},
		{"deadline without unit", "nodes: 8\nstop:\n  deadline: 100\n",
			`run.yaml:3: stop.deadline: bad duration "100" (want e.g. 250us, 1ms, 2s)`},
		{"max events negative", "nodes: 8\nstop:\n  max_events: -5\n",
			`run.yaml:3: stop.max_events: want 0 (no limit) or more, got -5`},
		{"input for unknown node", "nodes: 8\ninputs:\n  - at 10ms node 4 acquire\n  - at 12ms node 12 acquire\n",
			`run.yaml:4: inputs[1]: node 12 out of range 0..7`},
		{"input without a name", "nodes: 8\ninputs:\n  - at 10ms node 4\n",
			`run.yaml:3: inputs[0]: "at 10ms node 4": column 15: want the name of the input, got end of text`},
		{"input out of order", "nodes: 8\ninputs:\n  - node 4 at 10ms acquire\n",
			`run.yaml:3: inputs[0]: "node 4 at 10ms acquire": column 1: want "at", got "node"`},
		{"workload without think", "nodes: 8\nworkload:\n  input: acquire\n  count: 3\n",
			`run.yaml:3: workload: missing field "think"`},
		{"workload count", "nodes: 8\nworkload:\n  input: acquire\n  think: 1ms\n  count: 0\n",
			`run.yaml:5: workload.count: want 1..100000000, got 0`},
		{"workload too large", "nodes: 10000000\nworkload:\n  input: acquire\n  think: 1ms\n  count: 11\n",
			`run.yaml:3: workload.count: 11 inputs at each of 10000000 nodes is too many (at most 100000000 in all)`},
		{"alias value", "nodes: &n 8\nnetwork:\n  links:\n    - {from: 0, to: *n}\n",
			`run.yaml:4: network.links[0].to: aliases (*n) are not supported: write the value out`},
		{"merge key", "nodes: 8\nnetwork:\n  <<: {fifo: true}\n",
			`run.yaml:3: network: merge keys (<<) are not supported: write the fields out`},
		{"null value", "nodes: 8\nseed:\n",
			`run.yaml:2: seed: want a non-negative integer, got nothing`},
		{"syntax error", "nodes: 8\nnetwork:\n  fifo: true\n loss: 0.1\n",
			`run.yaml:3: did not find expected key`},
		{"not a mapping", "- nodes: 8\n",
			`run.yaml:1: want a mapping of fields, got a list`},
		{"empty", "# nothing here\n",
			`run.yaml: empty scenario (want at least "nodes: N")`},
		{"two documents", "nodes: 8\n---\nnodes: 9\n",
			`run.yaml:2: a second YAML document: a scenario file holds one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("run.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error; parsed %+v", s)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n  %s\nwant\n  %s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error is a %T, not an *Error", err)
			}
		})
	}
}

func TestYAMLSyntaxErrorHasLine(t *testing.T) {
	_, err := Parse("run.yaml", []byte("nodes: 8\nnetwork:\n  fifo: [true\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line == 0 {
		t.Errorf("error %v has no line", err)
	}
}

func TestSemanticsAreTheSimulators(t *testing.T) {
	// A recovery before any crash, a crash of a crashed process, a pause
	// inside a slow spell: all well-formed, for the simulator to judge.
	s, err := Parse("run.yaml", []byte(`
nodes: 4
faults:
  - recover 1 at 0ms
  - crash 1 at 10ms
  - crash 1 at 20ms
  - slow 2 by 1ms from 0ms to 100ms
  - pause 2 from 10ms to 20ms
  - partition {0} | {1} | {2} | {3}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Faults) != 5 || len(s.Network.Partitions) != 1 || s.Network.Partitions[0].To != 0 {
		t.Errorf("faults %+v, partitions %+v", s.Faults, s.Network.Partitions)
	}
	if _, _, err := run(t, s); err != nil {
		t.Fatal(err)
	}
}

func TestFaultSpelling(t *testing.T) {
	// White space is free; ids and groups may be written tight or loose.
	for _, src := range []string{
		"partition {0,1}|{2,3} from 1ms to 2ms",
		"  partition  { 0 , 1 }  |  { 2 ,3 }  from 1ms  to 2ms ",
		"partition\t{0,1} | {2,3}\tfrom 1000us to 0.002s",
	} {
		e, err := parseFault(src, 4)
		part := e.Partition
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		want := sim.Partition{Groups: [][]proc.ID{{0, 1}, {2, 3}}, From: ms, To: 2 * ms}
		if !reflect.DeepEqual(*part, want) {
			t.Errorf("%q: %+v, want %+v", src, *part, want)
		}
	}
	if e, _ := parseFault("partition {3} to 7ms", 4); e.Partition == nil || e.Partition.From != 0 || e.Partition.To != 7*ms {
		t.Errorf("partition without from: %+v", e.Partition)
	}
}

func TestTopologies(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"nodes: 9\n", "full"},
		{"nodes: 9\ntopology: ring\n", "ring"},
		{"nodes: 9\ntopology: line\n", "line"},
		{"nodes: 9\ntopology: grid\n", "grid(3 cols)"},
		{"nodes: 9\ntopology: random\ndegree: 3\n", "random(degree 3)"},
	} {
		s, err := Parse("run.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := s.Config(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Topology.String(); got != tc.want {
			t.Errorf("%q: topology %s, want %s", tc.yaml, got, tc.want)
		}
	}
}

// The test family: processes that report when they start and what inputs
// they get, and greet their neighbours on every input.

type call struct {
	Name string
	Args []string
}

func (c call) Kind() string { return c.Name }

type started struct{}

func (started) Kind() string { return "started" }

type hello struct{}

func (hello) Kind() string { return "hello" }

type echo struct{}

func (echo) Start(env proc.Env) { env.Output(started{}) }
func (echo) Input(env proc.Env, in proc.Input) {
	if c, ok := in.(call); ok { // not proc.Leave
		env.Output(c)
	}
	for _, nb := range env.Neighbors() {
		env.Send(nb, hello{})
	}
}
func (echo) Receive(proc.Env, proc.ID, proc.Message) {}
func (echo) Timeout(proc.Env, any)                   {}

func newEcho(proc.ID, int) proc.Process { return echo{} }

var callNames = []string{"acquire", "release", "multicast", "ping", "elect", "tell"}

func makeCall(name string, args []string) (proc.Input, error) {
	if !slices.Contains(callNames, name) {
		return nil, fmt.Errorf("unknown input %q (want %s)", name, orList(callNames))
	}
	return call{name, args}, nil
}

type event struct {
	At   time.Duration
	Node proc.ID
	What string // "started" or the input with its arguments
}

// run runs s with the test family and returns what the processes output.
func run(t *testing.T, s *Scenario) ([]event, sim.Result, error) {
	t.Helper()
	cfg, err := s.Config(makeCall)
	if err != nil {
		return nil, sim.Result{}, err
	}
	cfg.New = newEcho
	var evs []event
	cfg.Observe = func(at time.Duration, node proc.ID, o proc.Output) {
		what := o.Kind()
		if c, ok := o.(call); ok {
			what = strings.Join(append([]string{c.Name}, c.Args...), " ")
		}
		evs = append(evs, event{at, node, what})
	}
	sm, err := sim.New(cfg)
	if err != nil {
		return nil, sim.Result{}, err
	}
	res, err := sm.Run()
	return evs, res, err
}

func TestConfigRuns(t *testing.T) {
	s, err := Parse("run.yaml", []byte(`
nodes: 3
faults:
  - crash 2 at 0ms
  - crash 1 at 30ms
  - recover 1 at 40ms
inputs:
  - at 10ms node 0 ping
  - at 15ms node 1 multicast a b
  - at 20ms node 2 ping          # lost: 2 never started
  - at 35ms node 1 ping          # lost: 1 is down
  - at 45ms node 1 release
`))
	if err != nil {
		t.Fatal(err)
	}
	evs, res, err := run(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []event{
		{0, 0, "started"},
		{0, 1, "started"},
		{10 * ms, 0, "ping"},
		{15 * ms, 1, "multicast a b"},
		{40 * ms, 1, "started"},
		{45 * ms, 1, "release"},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("outputs\n%v\nwant\n%v", evs, want)
	}
	if res.Inputs != 3 || res.InputsLost != 2 {
		t.Errorf("%d inputs handled, %d lost; want 3 and 2", res.Inputs, res.InputsLost)
	}
}

func TestMembershipEntries(t *testing.T) {
	s, err := Parse("run.yaml", []byte(`
nodes: 10
initial: 6
faults:
  - join 7 at 10ms
  - leave 3 at 20ms
  - churn join 2/s fail 0.5/s leave 1/s from 1s to 10s
  - churn fail 3/s to 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	wantFaults := []sim.Fault{{Kind: sim.Join, Node: 7, At: 10 * ms}, {Kind: sim.Leave, Node: 3, At: 20 * ms}}
	wantChurn := []sim.Churn{{Join: 2, Fail: 0.5, Leave: 1, From: time.Second, Until: 10 * time.Second},
		{Fail: 3, Until: 2 * time.Second}}
	if !reflect.DeepEqual(s.Faults, wantFaults) || !reflect.DeepEqual(s.Churn, wantChurn) || s.Initial != 6 {
		t.Fatalf("faults %+v churn %+v initial %d", s.Faults, s.Churn, s.Initial)
	}
	cfg, err := s.Config(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Initial != 6 || !reflect.DeepEqual(cfg.Churn, wantChurn) || !reflect.DeepEqual(cfg.Faults, wantFaults) {
		t.Errorf("config: initial %d churn %+v faults %+v", cfg.Initial, cfg.Churn, cfg.Faults)
	}
}

func TestConfigWorkload(t *testing.T) {
	s, err := Parse("run.yaml", []byte(`
nodes: 4
workload:
  input: multicast x
  think: uniform:1ms,2ms
  count: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	evs, res, err := run(t, s)
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[proc.ID]int{}
	for _, e := range evs {
		if e.What == "multicast x" {
			perNode[e.Node]++
		}
	}
	if res.Inputs != 12 || len(perNode) != 4 || perNode[0] != 3 {
		t.Errorf("%d inputs, per node %v; want 3 at each of 4", res.Inputs, perNode)
	}
}

func TestConfigInputErrors(t *testing.T) {
	s, err := Parse("run.yaml", []byte("nodes: 2\ninputs:\n  - at 1ms node 0 acquire\n  - at 2ms node 1 aquire\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Config(makeCall)
	want := `run.yaml:4: inputs[1]: unknown input "aquire" (want acquire, release, multicast, ping, elect or tell)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	_, err = s.Config(nil)
	want = `run.yaml:3: inputs[0]: this run takes no inputs`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}

	s, err = Parse("run.yaml", []byte("nodes: 2\nworkload:\n  input: relase\n  think: 1ms\n  count: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Config(makeCall)
	want = `run.yaml:3: workload.input: unknown input "relase" (want acquire, release, multicast, ping, elect or tell)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestExamples parses and runs every example scenario.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			evs, res, err := run(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 || res.Events == 0 {
				t.Errorf("nothing happened: %+v", res)
			}
		})
	}
}

func TestExamplePartitionHeal(t *testing.T) {
	s, err := Load("testdata/partition-heal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evs, res, err := run(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var starts []event
	for _, e := range evs {
		if e.What == "started" {
			starts = append(starts, e)
		}
	}
	if len(starts) != 6 || starts[5] != (event{80 * ms, 0, "started"}) {
		t.Errorf("starts %v: want 5 at 0 and node 0 again at 80ms", starts)
	}
	if res.Dropped == 0 {
		t.Errorf("no message was cut by the partition")
	}
}

func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("nodes: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	_, err := Load(big)
	if err == nil || !strings.Contains(err.Error(), "a scenario is at most 16777216 (16 MiB)") {
		t.Errorf("big file: %v", err)
	}
	if _, err := Parse("big.yaml", make([]byte, MaxFileSize+1)); err == nil {
		t.Errorf("Parse took a file over the limit")
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}

	var b strings.Builder
	b.WriteString("nodes: 2\nfaults:\n")
	for range MaxEntries + 1 {
		b.WriteString("- crash 1 at 1ms\n")
	}
	_, err = Parse("many.yaml", []byte(b.String()))
	if want := "many.yaml:3: faults: 100001 entries is too many (at most 100000)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestAliasBomb(t *testing.T) {
	bomb := `
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
nodes: 8
`
	_, err := Parse("bomb.yaml", []byte(bomb))
	if err == nil || !strings.HasPrefix(err.Error(), "bomb.yaml:2: unknown field") {
		t.Errorf("error %v", err)
	}
	_, err = Parse("bomb.yaml", []byte("nodes: 2\ninputs: &i\n  - at 1ms node 0 ping\nworkload: *i\n"))
	if want := "bomb.yaml:4: workload: aliases (*i) are not supported: write the value out"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestDocExample parses the example of the package documentation.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "// # Format\n")
	block, _, _ := strings.Cut(rest, "// # Values\n")
	var example strings.Builder
	for _, line := range strings.Split(block, "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			example.WriteString(code + "\n")
		} else if line == "//" && example.Len() > 0 {
			example.WriteString("\n")
		}
	}
	s, err := Parse("doc.go", []byte(example.String()))
	if err != nil {
		t.Fatalf("%v in\n%s", err, example.String())
	}
	if s.Nodes != 8 || s.Initial != 6 || len(s.Faults) != 6 || len(s.Churn) != 1 || len(s.Network.Partitions) != 1 || len(s.Inputs) != 2 || s.Workload == nil || s.Clocks == nil {
		t.Errorf("parsed %+v", s)
	}
	if _, _, err := run(t, s); err != nil {
		t.Fatal(err)
	}
}

func TestResizeChecksEveryNodeReference(t *testing.T) {
	s, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Resize(9); err != nil || r.Nodes != 9 || s.Nodes != 8 {
		t.Fatalf("resize to 9: %v (nodes %d; original %d)", err, r.Nodes, s.Nodes)
	}
	if _, err := s.Resize(5); err == nil || !strings.Contains(err.Error(), "fault crash names process 7, which 5 nodes leave out") {
		t.Errorf("resize to 5: %v", err)
	}
	s.Faults = nil
	if _, err := s.Resize(4); err == nil || !strings.Contains(err.Error(), `input "acquire" (line 34) names process 4`) {
		t.Errorf("resize to 4 without faults: %v", err)
	}
	if _, err := s.Resize(0); err == nil {
		t.Error("resize to 0 accepted")
	}
}
