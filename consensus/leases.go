package consensus

import (
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// leaderLeases is the leader's side of the leases of a replicated state
// machine (Locks' sessions, Queues' leased messages). The leases live in
// the replicated state; their deadlines do not: only a ready leader (one
// that has applied everything ever committed, Raft.Ready) keeps them, on
// its own clock. It gives every lease its full length from the moment it
// becomes that leader, and proposes the expiry of each one past its
// deadline at every sweep; a server that stops leading forgets them. So
// no lease expires before its holder's last renewal plus its length, as
// the leader's clock runs (the argument in locks.go and queues.go). The
// zero value is ready to use.
type leaderLeases[K comparable] struct {
	leading  bool
	term     uint64 // the term it leads in
	deadline map[K]time.Duration
	expiring map[K]bool // an Expire entry is proposed
	sweep    proc.TimerID
}

// follow follows the leadership, after every event: a server that became
// a ready leader gives each lease that all lists its full length from now
// and sweeps every period (a timer tagged tag); one that stopped leading
// forgets the deadlines.
func (ls *leaderLeases[K]) follow(env proc.Env, r *Raft, every time.Duration, tag any, all func(set func(K, time.Duration))) {
	ready := r.Ready()
	_, term := r.Leader()
	if ready && ls.leading && term == ls.term || !ready && !ls.leading {
		return
	}
	clear(ls.deadline)
	clear(ls.expiring)
	if ls.sweep != 0 {
		env.CancelTimer(ls.sweep)
		ls.sweep = 0
	}
	ls.leading, ls.term = ready, term
	if ready {
		now := env.Now()
		all(func(k K, length time.Duration) { ls.renewAt(now, k, length) })
		ls.sweep = env.SetTimer(every, tag)
	}
}

// forget drops the deadlines of a server whose state is replaced (by a
// snapshot): follow sets them again if it leads. The sweep timer stays
// known, for follow to cancel.
func (ls *leaderLeases[K]) forget() {
	clear(ls.deadline)
	clear(ls.expiring)
	ls.leading = false
}

// swept handles the sweep timer: at the leader, expire proposes the
// expiry of what is due, and the next sweep is set.
func (ls *leaderLeases[K]) swept(env proc.Env, every time.Duration, tag any, expire func()) {
	ls.sweep = 0
	if ls.leading {
		expire()
		ls.sweep = env.SetTimer(every, tag)
	}
}

// renew gives lease k its full length from now, at the leader.
func (ls *leaderLeases[K]) renew(env proc.Env, k K, length time.Duration) {
	if ls.leading {
		ls.renewAt(env.Now(), k, length)
	}
}

func (ls *leaderLeases[K]) renewAt(now time.Duration, k K, length time.Duration) {
	if ls.deadline == nil {
		ls.deadline, ls.expiring = map[K]time.Duration{}, map[K]bool{}
	}
	ls.deadline[k] = now + length
	delete(ls.expiring, k) // an expiry under way is ignored once a renewal applied (Locks.touch)
}

// drop forgets lease k: it ended.
func (ls *leaderLeases[K]) drop(k K) {
	delete(ls.deadline, k)
	delete(ls.expiring, k)
}

// due returns the leases past their deadline whose expiry is not yet
// proposed, in the order of cmp, and counts their expiry as proposed.
func (ls *leaderLeases[K]) due(now time.Duration, cmp func(a, b K) int) []K {
	var due []K
	for k, d := range ls.deadline {
		if now >= d && !ls.expiring[k] {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, cmp)
	for _, k := range due {
		ls.expiring[k] = true
	}
	return due
}
