package mutex

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Acquire asks to enter the critical section. Hold, if not zero, is how
// long the holder may go on acting in the section without hearing from
// this process — the lease a live node granted a remote client. An
// algorithm that survives restarts (Ricart–Agrawala) keeps it on stable
// storage while it holds the section, and a process restarted from
// inside the section takes part again only after it has passed.
type Acquire struct {
	Hold time.Duration `json:"hold,omitempty"`
}

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

// names renders processes for a described state (proc.Describer):
// ["p0","p2"], never null.
func names(ids []proc.ID) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.String())
	}
	return out
}

// members renders a set of processes in order, as names does.
func members(set map[proc.ID]bool) []string {
	var ids []proc.ID
	for id, in := range set {
		if in {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return names(ids)
}

// stamps renders requests' timestamps ⟨T, p⟩ as "T.p", never null.
func stamps(q []Stamp) []string {
	out := make([]string, 0, len(q))
	for _, s := range q {
		out = append(out, s.String())
	}
	return out
}

// Algorithms is the family's registry, in the textbooks' order. Each
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
