package mutex

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// The application's own messages, for the simulator's workloads. They are
// not part of any algorithm: a live lock service never sends them. They
// exist because the application's messages are what can order two
// requests by happened-before — ME3's counterexample: A requests, then
// tells B, and B requests after hearing from A — so a run that checks ME3
// must carry them beside the algorithm (WithApp).

// Tell asks a process to send an application message to To. The
// application's own messages are what can order two requests by
// happened-before — Coulouris et al.'s ME3 counterexample: A requests, then
// tells B, and B requests after hearing from A — so the family carries them
// for every algorithm (see withApp).
type Tell struct {
	To proc.ID `json:"to"`
}

// App is an application message sent on a Tell. TS carries the
// algorithm's Lamport clock, if it keeps one (see clocked).
type App struct {
	TS uint64 `json:"ts,omitempty"`
}

// Told reports that an application message from From arrived.
type Told struct {
	From proc.ID `json:"from"`
}

func (Tell) Kind() string     { return "tell" }
func (App) Kind() string      { return "app" }
func (Told) Kind() string     { return "told" }
func (t Tell) String() string { return "tell " + t.To.String() }

// clocked is implemented by the algorithms that order requests by Lamport
// timestamps. The application's messages must advance the same clock — in
// Tanenbaum & van Steen's picture the Lamport clock lives in the middleware
// and stamps every message — or a request that happened after another could
// carry the smaller timestamp, and ME3 would break.
type clocked interface {
	appSend() uint64   // a send event: tick, and return the timestamp to carry
	appRecv(ts uint64) // a receive event: C = max(C, ts) + 1
}

// withApp carries the application's messages beside an algorithm: a Tell
// input becomes an App message, an arriving App becomes a Told output; all
// else goes to the algorithm.
type withApp struct{ proc.Process }

// Clone copies the wrapped process if it copies itself (a model
// checker's fast path: it forks runs instead of replaying them), and
// returns nil if it does not (the checker then copies it its own way).
func (w withApp) Clone() proc.Process {
	if c, ok := w.Process.(interface{ Clone() proc.Process }); ok {
		return withApp{c.Clone()}
	}
	return nil
}

func (w withApp) Input(env proc.Env, in proc.Input) {
	if t, ok := in.(Tell); ok {
		var m App
		if c, ok := w.Process.(clocked); ok {
			m.TS = c.appSend()
		}
		env.Send(t.To, m)
		return
	}
	w.Process.Input(env, in)
}

func (w withApp) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if app, ok := m.(App); ok {
		if c, ok := w.Process.(clocked); ok {
			c.appRecv(app.TS)
		}
		env.Output(Told{From: from})
		return
	}
	w.Process.Receive(env, from, m)
}

// Describe passes the algorithm's description through (proc.Describer);
// nil, recorded as nothing, for one that does not describe itself.
func (w withApp) Describe() any {
	if d, ok := w.Process.(proc.Describer); ok {
		return d.Describe()
	}
	return nil
}

// WithApp returns a's entry for runs whose workload sends application
// messages (Tell inputs): its processes carry them beside the algorithm
// (withApp), and App is tagged on the wire after a's own messages.
func WithApp(a proc.Algorithm) proc.Algorithm {
	a.Messages = append(slices.Clone(a.Messages), App{})
	if inner := a.New; inner != nil {
		a.New = func(id proc.ID, n int) proc.Process { return withApp{inner(id, n)} }
	}
	return a
}

// WithApps applies WithApp to every entry of as.
func WithApps(as []proc.Algorithm) []proc.Algorithm {
	out := make([]proc.Algorithm, len(as))
	for i, a := range as {
		out[i] = WithApp(a)
	}
	return out
}

// tellInput builds "tell N" for scenario files.
func tellInput(args []string) (proc.Input, error) {
	var to int
	if len(args) != 1 {
		return nil, fmt.Errorf("input \"tell\" takes one process id, got %q", strings.Join(args, " "))
	}
	if _, err := fmt.Sscanf(args[0], "%d", &to); err != nil || to < 0 {
		return nil, fmt.Errorf("input \"tell\": %q is not a process id", args[0])
	}
	return Tell{To: proc.ID(to)}, nil
}
