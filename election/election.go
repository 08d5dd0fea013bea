package election

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Elect asks a process to start an election (it noticed the coordinator
// is gone, or the run begins).
type Elect struct{}

func (Elect) Kind() string { return "elect" }

// Elected reports that the process's elected variable is now Leader.
type Elected struct {
	Leader proc.ID `json:"leader"`
	// Term numbers leaderships, for algorithms that keep one (bully-fd):
	// a new leader takes a term above every term it has heard of, so a
	// resource can refuse a deposed leader's late requests.
	Term uint64 `json:"term,omitempty"`
}

func (Elected) Kind() string     { return "elected" }
func (e Elected) String() string { return "elected " + e.Leader.String() }

// Inputs builds the family's inputs by name, for scenario files.
func Inputs(name string, args []string) (proc.Input, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("input %q takes no arguments, got %q", name, strings.Join(args, " "))
	}
	if name == "elect" {
		return Elect{}, nil
	}
	return nil, fmt.Errorf("unknown input %q (want elect)", name)
}

// Algorithms is the family's registry, in the textbooks' order; each
// algorithm's file adds its entries with register.
var Algorithms []proc.Algorithm

var order = []string{"bully", "ring", "ring-list", "flooding", "echo", "superpeer-prefix", "superpeer-tokens"}

func register(as ...proc.Algorithm) {
	for _, a := range as {
		a.Family = "election"
		if a.Inputs == nil {
			a.Inputs = Inputs
		}
		if a.Checks == nil {
			a.Checks = []string{"integrity", "no-duplicates", "E1", "E2", "agreement"}
		}
		Algorithms = append(Algorithms, a)
	}
	slices.SortStableFunc(Algorithms, func(a, b proc.Algorithm) int { return rank(a.Name) - rank(b.Name) })
}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}
