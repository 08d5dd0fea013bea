package deadlock

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The detectors' default waits: CMH begins a probe computation after a
// transaction has been blocked 2 ms (and every 2 ms after); the timeout
// detector aborts one blocked 5 ms. The family's default runs hold
// resources 1 ms, with one-way delays of 0.5 to 2 ms.
const (
	DefaultProbeWait = 2 * time.Millisecond
	DefaultTimeout   = 5 * time.Millisecond
	// DefaultBackoff: CMH's waits between computations double up to this
	// many times the first (16 ms after 2 ms).
	DefaultBackoff = 8
)

// backoff times a blocked process's computations (CMH, both models): the
// first after wait, each next after twice the wait before, up to a bound
// (binary exponential backoff, bounded). It is reset when the process
// blocks again. It keeps no instant, only the current wait: the explorer
// merges states that differ only in time.
type backoff struct {
	cur time.Duration // the wait before the computation now due
}

// start arms the first computation's timer, wait from now.
func (b *backoff) start(env proc.Env, wait time.Duration, tag any) proc.TimerID {
	b.cur = wait
	return env.SetTimer(wait, tag)
}

// next arms the timer of the computation after the one now begun: twice
// the last wait, at most maxWait (at least wait).
func (b *backoff) next(env proc.Env, wait, maxWait time.Duration, tag any) proc.TimerID {
	d := min(2*b.cur, max(maxWait, wait))
	if b.cur == 0 {
		d = wait
	}
	b.cur = d
	return env.SetTimer(d, tag)
}

// hurry, if the process has backed off, brings its next computation to
// wait from now and backs off from wait again; it returns the timer.
func (b *backoff) hurry(env proc.Env, t proc.TimerID, wait time.Duration, tag any) proc.TimerID {
	if b.cur <= wait {
		return t
	}
	env.CancelTimer(t)
	return b.start(env, wait, tag)
}

// Algorithms lists the family's detectors: Chandy–Misra–Haas, the
// timeout baseline, then Chandy–Misra–Haas for the OR model (on its own
// workload: waits for any one of a set).
var Algorithms = []proc.Algorithm{
	{
		Family:  "deadlock",
		Name:    "cmh",
		Summary: "edge chasing, AND model: a blocked process sends probes along its wait-for edges; one that comes back proves a cycle, and its initiator, the highest process on it, aborts",
		Source:  "Chandy, Misra & Haas 1983; Kshemkalyani & Singhal §10.6; Coulouris et al. §17.5",
		Assumes: proc.Assumptions{FIFO: true, Reliable: true},
		New:     func(proc.ID, int) proc.Process { return NewCMH(DefaultProbeWait) },
		Checks:  checks,
		// A victim's abort can cross a probe of an overlapping cycle on its
		// way: rarely, the second declaration is a phantom (Coulouris et
		// al. §17.5.1). The sweeps measure how rarely.
		Breaks: []string{"deadlock-no-phantom"},
		Notes: map[string]string{
			"phantom_detections":   "none without concurrent resolutions; an abort that crosses a probe of an overlapping cycle can make one",
			"probe_messages":       "two messages per wait-for edge (by the resource's owner) per computation, forwarded only below the initiator",
			"detection_latency_ms": "at most the longest wait between computations (MaxWait, 8× the first) plus two delays per edge of the cycle; about the first wait plus those delays where a lower process's probe hurries the highest",
		},
		Scenario: scenario,
	},
	{
		Family:  "deadlock",
		Name:    "timeout",
		Summary: "the naive detector: a transaction blocked longer than T is declared deadlocked and aborted, cycle or not",
		Source:  "Coulouris et al. §16.4 (timeouts); Kshemkalyani & Singhal ch. 10",
		Assumes: proc.Assumptions{FIFO: true, Reliable: true},
		New:     func(proc.ID, int) proc.Process { return NewTimeout(DefaultTimeout) },
		Checks:  checks,
		// A long wait is not a deadlock: the timeout declares phantoms.
		Breaks: []string{"deadlock-no-phantom"},
		Notes: map[string]string{
			"phantom_detections":   "every wait longer than T is declared a deadlock, cycle or not",
			"detection_latency_ms": "at most T after the last process of the cycle blocked",
		},
		Scenario: scenario,
	},
	{
		Family:  "deadlock",
		Name:    "cmh-or",
		Summary: "diffusing computation, OR model: a process blocked for any one of a set queries it; blocked processes pass a computation's first query on and reply once all theirs have; replies from all prove that all it reaches waits (a knot ahead), and the highest such process gives its wait up",
		Source:  "Chandy, Misra & Haas 1983 (communication deadlock); Kshemkalyani & Singhal §10.7",
		Assumes: proc.Assumptions{FIFO: true, Reliable: true},
		New:     func(proc.ID, int) proc.Process { return NewCMHOR(DefaultProbeWait) },
		Checks:  orChecks,
		// Without resolution a declaration is always real (the paper's
		// theorem). With it, a process outside a knot, higher than all it
		// reaches, may gather replies that the knot's victim's answers
		// follow down the same channels: its declaration comes when the
		// knot is already unwinding, a phantom (Coulouris et al. §17.5.1
		// warn of the same in the AND model). The sweeps measure how
		// rarely.
		Breaks: []string{"or-deadlock-no-phantom"},
		Notes: map[string]string{
			"query_messages":         "one query per wait-for edge reachable from the initiator, per computation",
			"reply_messages":         "one reply per query that reached a process blocked since its engaging query",
			"detection_latency_ms":   "at most the longest wait between computations (MaxWait, 8× the first) plus two delays per edge of the longest path from the initiator",
			"messages_per_detection": "2e for the declaring computation, e the edges reachable from the initiator; the others' computations, cut short by the priority rule, come on top",
		},
		Scenario: scenario,
	},
}

var (
	checks   = []string{"deadlock-detected", "deadlock-no-phantom"}
	orChecks = []string{"or-deadlock-detected", "or-deadlock-no-phantom"}
)

func init() {
	for i := range Algorithms {
		Algorithms[i].Inputs = Inputs
	}
	Algorithms[0].Messages = []proc.Message{Request{}, Grant{}, Release{}, Probe{}}
	Algorithms[1].Messages = []proc.Message{Request{}, Grant{}, Release{}}
	Algorithms[2].Messages = []proc.Message{Ask{}, Answer{}, Query{}, Reply{}}
}

// The default scenario: five processes, jittery FIFO channels.
const scenario = `nodes: 5
network:
  latency: uniform:500us,2ms
  fifo: true
`

// WithWait returns a (cmh, cmh-or or timeout) with its wait set to d: the
// probe (query) wait of CMH, T of the timeout detector.
func WithWait(a proc.Algorithm, d time.Duration) (proc.Algorithm, error) {
	if d <= 0 {
		return a, fmt.Errorf("wait %v: must be positive", d)
	}
	switch a.Name {
	case "cmh":
		a.New = func(proc.ID, int) proc.Process { return NewCMH(d) }
	case "timeout":
		a.New = func(proc.ID, int) proc.Process { return NewTimeout(d) }
	case "cmh-or":
		a.New = func(proc.ID, int) proc.Process { return NewCMHOR(d) }
	default:
		return a, fmt.Errorf("%s is not a deadlock detector", a.Name)
	}
	return a, nil
}

// Inputs builds the family's inputs by name: "begin R1 R2 ..." (a
// transaction wanting the resources of processes R1, R2 ...), "finish",
// and for the OR model "await P1 P2 ..." (block until any one of P1, P2
// ... answers).
func Inputs(name string, args []string) (proc.Input, error) {
	switch name {
	case "begin", "await":
		var ps []proc.ID
		for _, a := range args {
			r, err := strconv.Atoi(a)
			if err != nil || r < 0 {
				return nil, fmt.Errorf("%s: %q is not a process ID", name, a)
			}
			ps = append(ps, proc.ID(r))
		}
		if name == "await" {
			if len(ps) == 0 {
				return nil, fmt.Errorf("await: name the processes to wait for")
			}
			return Await{From: ps}, nil
		}
		return Begin{Res: ps}, nil
	case "finish":
		if len(args) > 0 {
			return nil, fmt.Errorf("finish: takes no arguments, got %q", args)
		}
		return Finish{}, nil
	}
	return nil, fmt.Errorf("unknown deadlock input %q (known: begin, finish, await)", name)
}
