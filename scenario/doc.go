// Package scenario reads scenario files: YAML documents that script one
// simulated run — how many processes, the network, the hardware clocks, the
// faults, the application inputs and when to stop — and turns them into a
// sim.Config.
//
//	s, err := scenario.Load("run.yaml")
//	if err != nil {
//		return err // run.yaml:12: faults[2]: node 9 out of range 0..7
//	}
//	cfg, err := s.Config(makeInput) // the family's inputs, by name
//	if err != nil {
//		return err
//	}
//	cfg.New = alg.New
//	run, err := sim.New(cfg)
//	...
//	res, err := run.Run()
//
// Every error names the file, the line and the field at fault:
//
//	run.yaml:3: unknown field "nodez" (did you mean "nodes"?)
//	run.yaml:4: network.latency: distribution "fast": bad duration "fast" (want e.g. 250us, 1ms, 2s)
//	run.yaml:14: faults[1]: "partition {0,1} | {2,x}": column 22: want a node id, got "x"
//
// Errors are of type *Error, which carries the line and field apart.
//
// # Format
//
// A scenario is one YAML mapping. Only nodes is required; every other field
// has a default. Unknown fields, fields given twice and YAML aliases (*name)
// are errors. Lists are numbered from 0 in error messages: faults[2] is the
// third fault.
//
//	# comments allowed
//	family: mutex            # optional: the family the scenario is for
//	algo: ricart-agrawala    # optional: the algorithm (command-line flags may override both)
//	nodes: 8                 # required: 1 .. 10,000,000 processes, ids 0 .. nodes-1
//	initial: 6               # optional: only 0 .. initial-1 are present at the start; the rest join later
//	seed: 1                  # optional, default 1: seeds every random choice of the run
//	topology: random         # full | ring | line | grid | random (default full)
//	degree: 3                # random only, and required: every process gets at least this many neighbours
//
//	network:
//	  latency: exp:1ms       # one-way delay, a distribution (below); default const:1ms
//	  fifo: true             # channels deliver in send order; default false
//	  loss: 0.01             # probabilities in [0,1]; default 0
//	  duplicate: 0
//	  reorder: 0
//	  links:                 # overrides for single directed links
//	    - {from: 0, to: 1, latency: 5ms, loss: 0.1}
//	    - {from: 1, to: 0, latency: 1ms}
//
//	clocks:                  # hardware clocks; default: perfect clocks
//	  max_offset: 1ms        # random offset in [-max_offset, max_offset] per process
//	  max_drift: 1e-4        # random drift in [-max_drift, max_drift] per process
//	  nodes:                 # explicit clocks; they replace the random ones
//	    - {node: 1, offset: 5ms, drift: 1e-4}
//	    - {node: 2, offset: -3ms}
//
//	faults:                  # one fault per string, in the fault language (below)
//	  - crash 7 at 0ms
//	  - recover 7 at 50ms
//	  - partition {0,1} | {2,3} from 20ms to 40ms
//	  - pause 3 from 10ms to 20ms
//	  - slow 3 by 2ms from 0ms to 100ms
//	  - join 7 at 10ms
//	  - leave 2 at 30ms
//	  - churn join 2/s fail 1/s leave 1/s from 1s to 10s
//
//	inputs:                  # scripted application inputs
//	  - at 10ms node 4 acquire
//	  - at 12ms node 2 multicast hello world
//
//	workload:                # generated inputs
//	  input: acquire         # every process issues count of these ...
//	  think: exp:10ms        # ... separated by think times from this distribution
//	  count: 5
//
//	stop:
//	  deadline: 1s           # virtual time; default none: run until quiescent
//	  max_events: 1000000    # default none
//
// # Values
//
// Durations are Go durations: 250us (or 250µs), 1ms, 1.5s, 2m; a bare 0
// is zero. Times are measured from the start of the run, in virtual (true)
// time, and are never negative; only clock offsets may be.
//
// Distributions (latency, think) are written as sim.ParseDist reads them:
// 1ms or const:1ms, uniform:1ms,3ms, exp:2ms, normal:5ms,1ms and
// lognormal:5ms,0.5 (median and sigma).
//
// Clock drift is a rate error: 1e-4 runs 100 ppm fast, -1e-4 as much slow.
// An explicit drift lies strictly between -1 and 1 and max_drift in [0, 1);
// offsets are at most 1000h either way. The random clocks are drawn with
// sim.Skew from the scenario's seed.
//
// Each network.links entry needs from and to and overrides latency, loss or
// both on that directed link; a link may be given only once. Inside braces,
// quote a distribution with a comma: {from: 0, to: 1, latency: "uniform:1ms,3ms"}.
//
// # Faults
//
// Each entry of faults is a string in a small language:
//
//	crash N at T                      N stops, losing its state and timers
//	recover N at T                    N restarts with a fresh state
//	pause N from T1 to T2             N handles nothing in [T1, T2); events wait
//	slow N by D from T1 to T2         every event N handles in [T1, T2) takes D
//	partition G | G ... [from T1] [to T2]
//	                                  messages between groups are lost
//	join N at T                       N joins the running system (fresh state)
//	leave N at T                      N gets the leave input, then is gone
//	churn [join R/s] [fail R/s] [leave R/s] [from T1] to T2
//	                                  random joins, crashes and leaves
//
// N is a process id (0 .. nodes-1) and T a time; pause and slow need T2
// after T1, and slow a positive D. A group G is a brace-delimited list of
// ids, {0,1,2}; the groups of one partition are disjoint, and the processes
// named in none form one more group. A partition starts at 0 unless from is
// given and lasts for ever unless to is given. Whether a fault makes sense
// — recovering a process that never crashed, say — is the simulator's
// business: it ignores such faults.
//
// Membership may change during a run. A process named in a join whose
// first join, leave or crash is that join is absent until it; with
// initial: K, processes K .. nodes-1 are absent at the start too. An
// absent or departed process receives nothing (messages to it are lost). A
// joining process is introduced to one present member, drawn with the
// run's seed (proc.Joiner). A churn entry adds joins, crashes and leaves as
// Poisson processes with the given rates (events per second of virtual
// time) between T1 (default 0) and T2: a join picks an absent process, a
// crash or leave a present one, uniformly with the run's seed. One churn
// entry may expect at most 10,000,000 events (rates × duration).
//
// Write faults and inputs as block list items (one "- " per line), and quote
// an entry that contains " #" or ": ", which YAML would read otherwise.
//
// # Inputs
//
// Each entry of inputs is a string
//
//	at T node N NAME [ARG ...]
//
// which delivers the input NAME, with the whitespace-separated words after
// it as arguments, to process N at time T. Inputs at the same time arrive in
// file order. The workload's input field is written the same way, NAME
// [ARG ...]. What the names mean is up to the family: Scenario.Config asks
// an InputMaker to build each one, and reports the line of any it rejects.
//
// # Limits
//
// To keep a hostile or mistaken file from exhausting memory, a file is at
// most 16 MiB; faults, inputs, network.links and clocks.nodes hold at most
// 100,000 entries each; workload.count × nodes is at most 100,000,000;
// partitions × nodes is at most 100,000,000; and a random topology's
// nodes × degree is at most 10,000,000.
package scenario
