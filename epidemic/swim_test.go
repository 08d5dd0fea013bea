package epidemic_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/sim/simtest"
)

// crashes is a fault schedule: c members crash at staggered moments.
func crashes(n, c int, seed uint64) []sim.Fault {
	rng := rand.New(rand.NewPCG(seed, 11))
	var fs []sim.Fault
	for _, p := range rng.Perm(n)[:c] {
		fs = append(fs, sim.Fault{Kind: sim.Crash, Node: proc.ID(p), At: time.Duration(50+rng.IntN(200)) * time.Millisecond})
	}
	return fs
}

// TestSwimDetectsCrashes: on a clean network every crash is detected by
// every live member, and nobody live is declared dead.
func TestSwimDetectsCrashes(t *testing.T) {
	for _, c := range []struct {
		name string
		p    epidemic.Params
	}{
		{"lifeguard", epidemic.Params{}},
		{"nolifeguard", epidemic.Params{NoLHM: true, NoDynamicSuspicion: true, NoBuddy: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := algorithm(t, "swim", c.p)
			for seed := uint64(1); seed <= 5; seed++ {
				n := 8 + int(seed)*3
				r := simtest.Run(t, "gossip", sim.Config{Nodes: n, Seed: seed, New: a.New, Faults: crashes(n, 2, seed), Deadline: 2 * time.Second})
				r.Hold(t, "integrity", "swim-completeness", "swim-accuracy")
			}
		})
	}
}
