package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/cohort-go/cohort/trace"
)

// Status is a checker's verdict.
type Status int

// The verdicts. Unknown means the trace cannot decide the property (it is
// malformed, or a bound on the search was hit). It is the zero value, so a
// Result whose status was never set does not claim that anything held.
const (
	Unknown Status = iota
	OK
	Violated
)

var statusNames = [...]string{"unknown", "ok", "violated"}

// String returns "ok", "violated" or "unknown".
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// MarshalJSON encodes the status as its name.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON decodes a status name.
func (s *Status) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("check status: %w", err)
	}
	i := slices.Index(statusNames[:], name)
	if i < 0 {
		return fmt.Errorf("unknown check status %q", name)
	}
	*s = Status(i)
	return nil
}

// Result is what a checker found.
type Result struct {
	Name   string `json:"name"`   // the checker's name
	Status Status `json:"status"` // the verdict
	Detail string `json:"detail"` // what broke, or why the trace cannot tell; "" if OK
	// Events are the indexes of the trace events that make up the
	// counterexample, in trace order.
	Events []int `json:"events,omitempty"`
	// Edges, for a deadlock, are the edges of its wait-for cycle (in
	// cycle order), or of the strongly connected component of the
	// wait-for graph it lies in, each with the event that shows it: for
	// the viewer to draw, where Detail says the same for a person. nil
	// for every other verdict.
	Edges []Edge `json:"edges,omitempty"`
}

// Edge is an edge of a wait-for graph (trace.WaitFor).
type Edge = trace.WaitFor

// OK reports whether the property held.
func (r Result) OK() bool { return r.Status == OK }

// String renders the result on one line: "integrity: violated: ...".
func (r Result) String() string {
	s := r.Name + ": " + r.Status.String()
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Counterexample renders the result as String does, followed by each cited
// event of t on its own line.
func (r Result) Counterexample(t *trace.Trace) string {
	var b strings.Builder
	b.WriteString(r.String())
	for _, i := range r.Events {
		b.WriteString("\n  ")
		if i >= 0 && i < len(t.Events) {
			b.WriteString(t.Events[i].String())
		} else {
			fmt.Fprintf(&b, "#%d (not in the trace)", i)
		}
	}
	return b.String()
}

// Checker judges one property of a trace.
type Checker interface {
	// Name is the registry name: lower case, stable ("clock-condition").
	Name() string
	// Doc states the property in one sentence.
	Doc() string
	// Check judges t. It must not modify t, and must not panic, however t
	// is malformed: a trace it cannot judge gives Unknown.
	Check(t *trace.Trace) Result
}

var registry = struct {
	sync.Mutex
	m map[string]Checker
}{m: map[string]Checker{}}

// Register adds c to the registry. It panics if c's name is empty or
// already taken: registration happens in init functions, and two checkers
// under one name is a programming error.
func Register(c Checker) {
	registry.Lock()
	defer registry.Unlock()
	name := c.Name()
	if name == "" {
		panic("check: Register of a checker with no name")
	}
	if _, dup := registry.m[name]; dup {
		panic("check: Register called twice for " + name)
	}
	registry.m[name] = c
}

// Lookup returns the checker registered under name.
func Lookup(name string) (Checker, bool) {
	registry.Lock()
	defer registry.Unlock()
	c, ok := registry.m[name]
	return c, ok
}

// All returns every registered checker, sorted by name.
func All() []Checker {
	registry.Lock()
	defer registry.Unlock()
	cs := make([]Checker, 0, len(registry.m))
	for _, c := range registry.m {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Checker) int { return strings.Compare(a.Name(), b.Name()) })
	return cs
}

// ErrUnknownChecker is wrapped by Run's error for a name nobody registered.
var ErrUnknownChecker = errors.New("unknown checker")

// Run runs the named checkers on t and returns their results in the order
// of names. If a name is not registered it runs nothing and returns an
// error wrapping ErrUnknownChecker that names every unknown one. No names,
// no results.
func Run(t *trace.Trace, names ...string) ([]Result, error) {
	cs := make([]Checker, len(names))
	var unknown []string
	for i, name := range names {
		c, ok := Lookup(name)
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
		cs[i] = c
	}
	if unknown != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownChecker, strings.Join(unknown, ", "))
	}
	results := make([]Result, len(cs))
	services := Services(t)
	for i, c := range cs {
		if len(services) <= 1 {
			results[i] = c.Check(t)
		} else {
			results[i] = perService(c, t, services)
		}
	}
	return results, nil
}

// Services lists, sorted, the live services whose events a trace holds
// (Event.Service): none for a simulated run.
func Services(t *trace.Trace) []string {
	seen := map[string]bool{}
	var names []string
	for i := range t.Events {
		if s := t.Events[i].Service; s != "" && !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	slices.Sort(names)
	return names
}

// perService judges a trace of several live services (a node's locks
// "lock/a" and "lock/b", each an instance of the algorithm) one service at
// a time: one node holding two different locks at once breaks nothing.
// The verdict is the first violation, naming its service; else Unknown if
// any service's was; else OK.
func perService(c Checker, t *trace.Trace, services []string) Result {
	var unknown []string
	for _, s := range services {
		r := c.Check(Only(t, s))
		r.Name = c.Name()
		switch r.Status {
		case Violated:
			r.Detail = s + ": " + r.Detail
			return r
		case Unknown:
			unknown = append(unknown, s+": "+r.Detail)
		}
	}
	if unknown != nil {
		return Result{Name: c.Name(), Status: Unknown, Detail: strings.Join(unknown, "; ")}
	}
	return Result{Name: c.Name(), Status: OK}
}

// Only is t with the inputs, outputs and timers of services other than
// service made inert: local events with no type, in their places, so that
// event indexes still point into t. Messages stay, whatever their service:
// the node's clocks (vector, Lamport) count them all, and happened-before
// runs through them. Events of the whole node (no service) stay.
func Only(t *trace.Trace, service string) *trace.Trace {
	u := &trace.Trace{Header: t.Header, Events: make([]trace.Event, len(t.Events))}
	for i, e := range t.Events {
		local := e.Kind == trace.Input || e.Kind == trace.Output || e.Kind == trace.Timer
		if local && e.Service != "" && e.Service != service {
			e = trace.Event{Index: e.Index, Time: e.Time, Node: e.Node, Kind: trace.Timer,
				Local: e.Local, Lamport: e.Lamport, VC: e.VC, Peer: -1, Service: e.Service}
		}
		u.Events[i] = e
	}
	return u
}

// checker is a Checker made of a function. Its Check names the result, so
// the function need not.
type checker struct {
	name, doc string
	check     func(t *trace.Trace) Result
}

func (c checker) Name() string { return c.name }
func (c checker) Doc() string  { return c.doc }

func (c checker) Check(t *trace.Trace) Result {
	r := c.check(t)
	r.Name = c.name
	return r
}

// finding is one place where a trace breaks a property.
type finding struct {
	detail string
	events []int
}

// verdict turns a checker's findings into its Result: OK if there are none,
// else Violated with the finding completed earliest in the trace (the one
// whose last event comes first), and a count of the others.
func verdict(fs []finding) Result {
	if len(fs) == 0 {
		return Result{Status: OK}
	}
	f := fs[first(fs)]
	events := slices.Clone(f.events)
	slices.Sort(events)
	detail := f.detail
	if len(fs) > 1 {
		detail += fmt.Sprintf(" (and %d more)", len(fs)-1)
	}
	return Result{Status: Violated, Detail: detail, Events: slices.Compact(events)}
}

// first is the index of the finding verdict reports: the one completed
// earliest in the trace (the first of those, at a tie).
func first(fs []finding) int {
	// A finding without events (a process with none in the trace) is
	// completed at the end.
	last := func(f finding) int {
		if len(f.events) == 0 {
			return math.MaxInt
		}
		return slices.Max(f.events)
	}
	k := 0
	for i, f := range fs {
		if last(f) < last(fs[k]) {
			k = i
		}
	}
	return k
}

// unknown is the Result for a trace a checker cannot read.
func unknown(err error) Result {
	return Result{Status: Unknown, Detail: err.Error()}
}

// msgName names a message as the textbooks do: "m3".
func msgName(id uint64) string { return fmt.Sprintf("m%d", id) }
