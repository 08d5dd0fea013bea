// Package registry is the list of Cohort's algorithms, by family: where the
// live runtime, the services and the CLI look an algorithm up by name. It
// imports the algorithm packages and nothing else of Cohort: no simulator,
// no harness. What runs, measures and compares algorithms in the simulator
// (workloads, metrics, comparisons) is package lab, built on this one.
//
// A new algorithm registers itself in its family's package (one file and
// its test); a new family adds one line to families below.
package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/deadlock"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/multicast"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
	"github.com/cohort-go/cohort/snapshot"
	"github.com/cohort-go/cohort/synchronizer"
)

// Family is a family of algorithms.
type Family struct {
	Name       string
	Summary    string
	Algorithms []proc.Algorithm
}

var families = []Family{
	{"clocks", "clocks: Lamport's correction of drifting clocks, vector clocks (Tanenbaum & van Steen §6.2); physical clock synchronization — Cristian, NTP, Berkeley, RBS (§6.1) — and hybrid logical clocks (Kulkarni et al. 2014)", clock.Algorithms},
	{"mutex", "mutual exclusion: central, token ring, Lamport, Ricart–Agrawala, Maekawa, decentralized, Suzuki–Kasami, Raymond (Coulouris et al.; Tanenbaum & van Steen §6.3)", mutex.Algorithms},
	{"election", "leader election: bully, ring, flooding, echo (Coulouris et al.; Tanenbaum & van Steen §6.5)", election.Algorithms},
	{"multicast", "ordered multicast: basic, reliable (+ NACK), FIFO, causal, total (sequencer, ISIS, Lamport), FIFO-total, causal-total (Coulouris et al.; Tanenbaum & van Steen §6.2)", multicast.Algorithms},
	{"gossip", "epidemic protocols: anti-entropy by push, pull and push-pull, rumor mongering, push-sum aggregation, SWIM membership with Lifeguard (Demers et al. 1987; Kempe et al. 2003; Das et al. 2002; Dadgar et al. 2018; Tanenbaum & van Steen §4.5)", epidemic.Algorithms},
	{"overlay", "structured peer-to-peer overlays: Pastry's prefix routing and join, and circular routing along the leaf set, the baseline (Rowstron & Druschel 2001; Coulouris et al. §10.5; Tanenbaum & van Steen §5.2)", overlay.Algorithms},
	{"snapshot", "global states: snapshot algorithms wrapped around any algorithm's run — Chandy–Lamport's markers on FIFO channels, Lai–Yang's colours on reordering ones — on a bank-transfer workload (Chandy & Lamport 1985; Lai & Yang 1987; Mattern 1993; Coulouris et al. §14.5)", snapshot.Algorithms},
	{"deadlock", "distributed deadlock detection: in the AND model, Chandy–Misra–Haas edge chasing with one victim per cycle, beside the timeout detector, on transactions locking resources at other processes; in the OR model, their diffusing computation with one victim per knot, on processes waiting for any one of a set (Chandy, Misra & Haas 1983; Kshemkalyani & Singhal §10.6–10.7; Coulouris et al. §17.5)", deadlock.Algorithms},
	{"synchronizer", "synchronizers: a synchronous algorithm (the flooding election) run unchanged on an asynchronous network under Awerbuch's α, β and γ (Awerbuch 1985; Lynch 1996 ch. 16)", synchronizer.Algorithms},
	{"rpc", "remote procedure call: client and server stubs with maybe, at-least-once and at-most-once calls, gRPC-style bounded retries, and orphans killed by extermination, reincarnation or expiration (Birrell & Nelson 1984; Nelson 1981; Tanenbaum & van Steen §4.2, §8.3.2)", rpc.Algorithms},
	{"consensus", "a replicated log on stable storage: Raft with PreVote, CheckQuorum, pipelining, snapshots and leases (Ongaro & Ousterhout 2014)", consensus.Algorithms},
}

// Families lists the families in the order of the textbooks' chapters.
func Families() []Family { return families }

// Lookup finds a family by name; the error lists the known ones.
func Lookup(family string) (Family, error) {
	i := slices.IndexFunc(families, func(f Family) bool { return f.Name == family })
	if i < 0 {
		var names []string
		for _, f := range families {
			names = append(names, f.Name)
		}
		return Family{}, fmt.Errorf("unknown family %q (known: %s)", family, strings.Join(names, ", "))
	}
	return families[i], nil
}

// Find finds algorithm name of family.
func Find(family, name string) (proc.Algorithm, error) {
	f, err := Lookup(family)
	if err != nil {
		return proc.Algorithm{}, err
	}
	return f.Algorithm(name)
}

// Algorithm finds an algorithm of the family by name; the error lists the
// family's algorithms.
func (f Family) Algorithm(name string) (proc.Algorithm, error) {
	i := slices.IndexFunc(f.Algorithms, func(a proc.Algorithm) bool { return a.Name == name })
	if i < 0 {
		return proc.Algorithm{}, fmt.Errorf("unknown %s algorithm %q (known: %s)", f.Name, name, strings.Join(f.Names(), ", "))
	}
	return f.Algorithms[i], nil
}

// Names lists the family's algorithm names.
func (f Family) Names() []string {
	var names []string
	for _, a := range f.Algorithms {
		names = append(names, a.Name)
	}
	return names
}
