package mutex

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Acquire asks to enter the critical section.
type Acquire struct{}

// Release leaves the critical section.
type Release struct{}

func (Acquire) Kind() string { return "acquire" }
func (Release) Kind() string { return "release" }

// Enter reports that the process entered the critical section. Token is
// the grant's fencing token when the algorithm provides one (0 if not):
// it strictly increases across the grants of a run, so a resource can
// refuse a holder whose token is older than one it has seen.
type Enter struct {
	Token uint64 `json:"token,omitempty"`
}

// Exit reports that the process left the critical section.
type Exit struct{}

func (Enter) Kind() string { return "enter" }
func (Exit) Kind() string  { return "exit" }

// Waiting reports whom a requesting process still waits for (replies,
// votes, the token); an empty For means it waits for nobody.
type Waiting struct {
	For []proc.ID `json:"for"`
}

func (Waiting) Kind() string { return "waiting" }
func (w Waiting) String() string {
	parts := make([]string, len(w.For))
	for i, id := range w.For {
		parts[i] = id.String()
	}
	return "waiting for {" + strings.Join(parts, ",") + "}"
}

// Lent reports that this process's permission (its vote, grant or token)
// is now held by To; To is None when it came back.
type Lent struct {
	To proc.ID `json:"to"`
}

func (Lent) Kind() string     { return "lent" }
func (l Lent) String() string { return "lent to " + l.To.String() }

// Tell asks a process to send an application message to To. The
// application's own messages are what can order two requests by
// happened-before — the seed's ME3 counterexample: A requests, then tells
// B, and B requests after hearing from A — so the family carries them for
// every algorithm (see withApp).
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
// timestamps. The application's messages must advance the same clock — the
// seed's Lamport clock lives in the middleware and stamps every message —
// or a request that happened after another could carry the smaller
// timestamp, and ME3 would break.
type clocked interface {
	appSend() uint64   // a send event: tick, and return the timestamp to carry
	appRecv(ts uint64) // a receive event: C = max(C, ts) + 1
}

// withApp carries the application's messages beside an algorithm: a Tell
// input becomes an App message, an arriving App becomes a Told output; all
// else goes to the algorithm.
type withApp struct{ proc.Process }

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

// Inputs builds the family's inputs by name, for scenario files.
func Inputs(name string, args []string) (proc.Input, error) {
	if name == "tell" {
		return tellInput(args)
	}
	if len(args) > 0 {
		return nil, fmt.Errorf("input %q takes no arguments, got %q", name, strings.Join(args, " "))
	}
	switch name {
	case "acquire":
		return Acquire{}, nil
	case "release":
		return Release{}, nil
	}
	return nil, fmt.Errorf("unknown input %q (want acquire or release)", name)
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

// Stamp is a Lamport timestamp in pair form, (C, P), ordered by C and then
// by process id: the total order the permission-based algorithms agree on.
type Stamp struct {
	C uint64  `json:"c"`
	P proc.ID `json:"p"`
}

// Less orders stamps: (C, P) < (C', P') iff C < C' or C = C' and P < P'.
func (s Stamp) Less(o Stamp) bool { return s.C < o.C || (s.C == o.C && s.P < o.P) }

func (s Stamp) String() string { return fmt.Sprintf("%d.%d", s.C, s.P) }

// Fencing packs the stamp into a fencing token that keeps its order:
// C in the high bits, the process id (below 2^16) in the low ones. An
// algorithm that grants requests in stamp order hands out increasing
// tokens.
func (s Stamp) Fencing() uint64 { return s.C<<16 | uint64(uint16(s.P)) }

// others returns every process but self, in id order.
func others(self proc.ID, n int) []proc.ID {
	ids := make([]proc.ID, 0, n-1)
	for i := 0; i < n; i++ {
		if proc.ID(i) != self {
			ids = append(ids, proc.ID(i))
		}
	}
	return ids
}

// waitingFor returns the ids of want not yet in got, sorted.
func waitingFor(want []proc.ID, got map[proc.ID]bool) []proc.ID {
	var w []proc.ID
	for _, id := range want {
		if !got[id] {
			w = append(w, id)
		}
	}
	slices.Sort(w)
	return w
}

// Algorithms is the family's registry, in the order of the seeds. Each
// algorithm's file adds its entries in register calls.
var Algorithms []proc.Algorithm

var order = []string{
	"central", "token-ring", "lamport", "ricart-agrawala", "ricart-agrawala-jr",
	"ricart-agrawala-majority", "maekawa", "maekawa-safe", "decentralized",
	"suzuki-kasami", "raymond",
}

// register adds entries to Algorithms, keeping the canonical order.
func register(as ...proc.Algorithm) {
	for _, a := range as {
		a.Family = "mutex"
		if a.Inputs == nil {
			a.Inputs = Inputs
		}
		// Every algorithm also carries the application's messages (withApp),
		// tagged after its own.
		a.Messages = append(slices.Clone(a.Messages), App{})
		if inner := a.New; inner != nil {
			a.New = func(id proc.ID, n int) proc.Process { return withApp{inner(id, n)} }
		}
		if a.Checks == nil {
			a.Checks = []string{"integrity", "no-duplicates", "ME1", "ME2", "ME3"}
		}
		Algorithms = append(Algorithms, a)
	}
	slices.SortStableFunc(Algorithms, func(a, b proc.Algorithm) int {
		return rank(a.Name) - rank(b.Name)
	})
}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}
