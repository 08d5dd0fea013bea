package epidemic

import (
	"slices"

	"github.com/cohort-go/cohort/proc"
)

// Rumor mongering (Demers et al. 1987; Tanenbaum & van Steen §4.5). n
// nodes start inactive (susceptible); a node that learns an update
// becomes active (infective) and spreads it as a "hot rumor":
//
//  1. a node becomes active and starts the protocol;
//  2. every round, each active node picks a random node (f of them, with
//     fanout f) and tells it the rumor:
//     a. if that node is inactive, it becomes active too;
//     b. if it is active or removed (it knew), the teller becomes
//     removed — stops spreading — with probability 1/k.
//
// That is the default: push, feedback (the receiver says whether it
// knew), coin (probability 1/k). Demers et al.'s variants are Params:
//
//   - blind (Params.Blind): interest is lost on every contact, whether
//     the peer knew or not, and no feedback is sent;
//   - counter (Params.Counter): interest is lost after k qualifying
//     contacts in a row instead of with probability 1/k at each: a useful
//     contact (the peer did not know) restarts the count, so with
//     feedback the receiver answers every contact;
//   - pull (Params.Pull): every node, each round, asks a random node for
//     its hot rumors with its digest; the asked node sends those the
//     asker lacks, and applies the loss-of-interest rule to each hot
//     rumor the asker already had (feedback) or to each it sent (blind);
//   - cycles (Params.Cycles): feedback judged against the state at the
//     start of the round, as in a simulation by synchronous cycles: two
//     mongers that reach a node in the same round both hear that it did
//     not know;
//   - backup (Params.Backup): push-pull anti-entropy every BackupEvery
//     rounds too, so the nodes the rumor missed get it in the end. A
//     node with a hot rumor ticks every round; without backup or pull an
//     idle node sets no timer, so a run falls silent when the last
//     monger is removed.
//
// Rumors are entries of the same versioned map as anti-entropy's: a Put
// or Delete makes its writer active for the new entry; a node that adopts
// a newer entry becomes active for it. Each hot rumor has its own counter.
//
// Assumptions: none on the channels, crash-recover failures (a lost
// message is a contact wasted; a crashed monger takes its rumors with it,
// and only backup anti-entropy repairs that). Rumor mongering does not
// guarantee that every node gets the update — the residue s of nodes
// never infected satisfies s = e^{−(k+1)(1−s)} in the notes' model
// (s ≈ 0.203, 0.060, 0.020 for k = 1, 2, 3) — so gossip-convergence is
// not among its checks; the tests judge it on runs with backup.
//
// Cost: per active node and round one RUMOR message, plus one FEEDBACK
// when the peer knew (feedback variants; every time with a counter);
// pull costs every node one request per round. Demers et al.'s Table 1
// (1000 nodes, push, feedback, counter, k = 1..5) measures a residue of
// 0.176, 0.037, 0.011, 0.0036, 0.0012 at a traffic of 1.74, 3.30, 4.53,
// 5.64, 6.68 updates sent per node; counter with cycles reproduces it.
type rumor struct {
	p      *Params // shared by every process of the run
	db     store
	hot    []hotRumor // sorted by key
	rounds int
	timer  bool // the round timer is set
}

// hotRumor is a rumor this node is still spreading.
type hotRumor struct {
	key     string
	version Version
	count   int // qualifying contacts so far (counter variant)
}

// Rumor carries hot rumors: pushed by a monger, or sent in answer to a
// RumorPull.
type Rumor struct{ Entries []Entry }

// Feedback tells a monger which of the rumors it sent the receiver knew
// already and, for the counter, which it did not: those contacts were
// useful.
type Feedback struct {
	Known  []Sum
	Useful []Sum
}

// RumorPull asks for the hot rumors newer than the digest.
type RumorPull struct{ Digest []Sum }

func (Rumor) Kind() string     { return "rumor" }
func (Feedback) Kind() string  { return "feedback" }
func (RumorPull) Kind() string { return "rumor-pull" }

func (r Rumor) String() string { return label("RUMOR", r.Entries) }
func (f Feedback) String() string {
	if len(f.Useful) == 0 {
		return label("KNEW", f.Known)
	}
	return label("KNEW", f.Known) + " " + label("NEW", f.Useful)
}
func (r RumorPull) String() string { return label("RPULL", r.Digest) }

// Infective reports that a node became active for a rumor; Removed that
// it lost interest in it.
type Infective struct {
	Key     string  `json:"key"`
	Version Version `json:"version"`
}

// Removed reports that a node stopped spreading a rumor.
type Removed struct {
	Key     string  `json:"key"`
	Version Version `json:"version"`
}

func (Infective) Kind() string { return "infective" }
func (Removed) Kind() string   { return "removed" }

func (i Infective) String() string { return "infective " + Sum{i.Key, i.Version}.String() }
func (r Removed) String() string   { return "removed " + Sum{r.Key, r.Version}.String() }

func init() {
	builders["rumor"] = func(p Params) func(proc.ID, int) proc.Process {
		return func(proc.ID, int) proc.Process { return &rumor{p: &p, db: store{reapAfter: p.ReapAfter}} }
	}
	register(proc.Algorithm{
		Name:    "rumor",
		Summary: "rumor mongering: an active node loses interest with probability 1/k when it tells a node that knew (variants: blind, counter, pull, cycles, anti-entropy backup)",
		Source:  "Demers et al. 1987 (rumor mongering); Tanenbaum & van Steen §4.5",
		Assumes: proc.Assumptions{Failures: "crash-recover"},
		New:     builders["rumor"](Params{}.withDefaults()),
		Theory: func(n int) map[string]float64 {
			return map[string]float64{"residue": Residue(1)}
		},
		Notes: map[string]string{
			"residue": "the notes' residue e^{−(k+1)(1−s)} is the limit of the infinite-population model; Demers et al.'s Table 1 is a simulation of 1000 nodes with counters",
		},
		Checks:   []string{"integrity", "gossip-no-resurrection"},
		Messages: append(slices.Clone(aeMessages), Rumor{}, Feedback{}, RumorPull{}),
		Scenario: "nodes: 64\nstop:\n  deadline: 5s\n",
	})
}

// Residue is the notes' fraction of nodes a rumor never reaches when
// mongers lose interest with probability 1/k: the root of
// s = e^{−(k+1)(1−s)} in (0, 1), by fixed-point iteration.
func Residue(k int) float64 {
	s := 0.5
	for range 200 {
		s = exp(-float64(k+1) * (1 - s))
	}
	return s
}

func (r *rumor) Start(env proc.Env) {
	if r.p.Pull || r.p.Backup {
		r.tick(env)
	}
}

// Join starts the node and, with backup anti-entropy, pulls the map from
// its contact at once.
func (r *rumor) Join(env proc.Env, contact proc.ID) {
	r.Start(env)
	if r.p.Backup && contact != proc.None {
		env.Send(contact, Pull{Digest: r.db.digest()})
	}
}

// tick makes sure the round timer is set.
func (r *rumor) tick(env proc.Env) {
	if !r.timer {
		r.timer = true
		env.SetTimer(nextRound(env, r.p.Period), round{})
	}
}

func (r *rumor) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Put:
		r.infect(env, r.db.put(env, in))
	case Delete:
		r.infect(env, r.db.write(env, in.Key, "", true))
	}
}

// infect makes the node active for e (it has just adopted it).
func (r *rumor) infect(env proc.Env, e Entry) {
	i, ok := slices.BinarySearchFunc(r.hot, e.Key, func(h hotRumor, k string) int { return cmpString(h.key, k) })
	if ok {
		r.hot[i] = hotRumor{key: e.Key, version: e.Version}
	} else {
		r.hot = slices.Insert(r.hot, i, hotRumor{key: e.Key, version: e.Version})
	}
	env.Output(Infective{Key: e.Key, Version: e.Version})
	if !r.p.Pull {
		r.tick(env)
	}
}

func (r *rumor) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(round); !ok {
		return
	}
	r.timer = false
	r.rounds++
	r.db.reap(env)
	for _, q := range peers(env, r.p.Fanout, nil) {
		switch {
		case r.p.Pull:
			env.Send(q, RumorPull{Digest: r.db.digest()})
		case len(r.hot) > 0:
			env.Send(q, Rumor{Entries: r.hotEntries(nil)})
			if r.p.Blind {
				r.loseInterest(env, r.hotSums())
			}
		}
	}
	if r.p.Backup && r.rounds%r.p.BackupEvery == 0 {
		if q := peers(env, 1, nil); len(q) > 0 {
			env.Send(q[0], Digest{Digest: r.db.digest()})
		}
	}
	if len(r.hot) > 0 || r.p.Pull || r.p.Backup {
		r.tick(env)
	}
}

// hotEntries are the entries of the hot rumors newer than digest d has
// (all of them for d = nil).
func (r *rumor) hotEntries(d []Sum) []Entry {
	var out []Entry
	for _, h := range r.hot {
		j, ok := slices.BinarySearchFunc(d, h.key, func(x Sum, k string) int { return cmpString(x.Key, k) })
		if ok && d[j].Version >= h.version {
			continue
		}
		if i, ok := r.db.find(h.key); ok && r.db.items[i].Version == h.version {
			out = append(out, r.db.items[i].Entry)
		}
	}
	return out
}

func (r *rumor) hotSums() []Sum {
	out := make([]Sum, len(r.hot))
	for i, h := range r.hot {
		out[i] = Sum{h.key, h.version}
	}
	return out
}

// loseInterest applies the 1/k rule to each of the rumors named: a coin
// of probability 1/k, or a counter that removes at k.
func (r *rumor) loseInterest(env proc.Env, rumors []Sum) {
	for _, s := range rumors {
		i, ok := slices.BinarySearchFunc(r.hot, s.Key, func(h hotRumor, k string) int { return cmpString(h.key, k) })
		if !ok || r.hot[i].version != s.Version {
			continue // not hot any more, or hot with a newer version
		}
		h := &r.hot[i]
		h.count++
		lose := env.Rand().IntN(r.p.K) == 0
		if r.p.Counter {
			lose = h.count >= r.p.K
		}
		if lose {
			env.Output(Removed{Key: h.key, Version: h.version})
			r.hot = slices.Delete(r.hot, i, i+1)
		}
	}
}

// resetCounters restarts the counters of the rumors named: a useful
// contact. Demers et al.'s counter counts the useless contacts since the
// last useful one: their bound on the traffic charges every useless
// message to a useful one at most k cycles before it.
func (r *rumor) resetCounters(rumors []Sum) {
	if !r.p.Counter {
		return
	}
	for _, s := range rumors {
		i, ok := slices.BinarySearchFunc(r.hot, s.Key, func(h hotRumor, k string) int { return cmpString(h.key, k) })
		if ok && r.hot[i].version == s.Version {
			r.hot[i].count = 0
		}
	}
}

func (r *rumor) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Rumor:
		var known, useful []Sum
		for _, e := range m.Entries {
			switch {
			case r.db.apply(env, e):
				r.infect(env, e)
				useful = append(useful, Sum{e.Key, e.Version})
			case !r.p.Cycles || r.knewBefore(env, e):
				known = append(known, Sum{e.Key, e.Version})
			default: // learned this round: still news, as of the round's start
				useful = append(useful, Sum{e.Key, e.Version})
			}
		}
		if !r.p.Counter {
			useful = nil // only a counter needs to hear of useful contacts
		}
		if (len(known) > 0 || len(useful) > 0) && !r.p.Blind && !r.p.Pull {
			env.Send(from, Feedback{Known: known, Useful: useful})
		}
	case Feedback:
		r.loseInterest(env, m.Known)
		r.resetCounters(m.Useful)
	case RumorPull:
		es := r.hotEntries(m.Digest)
		if len(es) > 0 {
			env.Send(from, Rumor{Entries: es})
		}
		if r.p.Blind {
			r.loseInterest(env, sumsOf(es))
		} else {
			r.resetCounters(sumsOf(es))
			// The asker already had every hot rumor not sent.
			var knew []Sum
			for _, h := range r.hot {
				if !slices.ContainsFunc(es, func(e Entry) bool { return e.Key == h.key }) {
					knew = append(knew, Sum{h.key, h.version})
				}
			}
			r.loseInterest(env, knew)
		}
	// Backup anti-entropy: the exchange of push-pull, whose news make
	// the node active as any news does.
	case Pull, Digest, Reply, Update:
		r.db.exchange(env, from, m, func(es []Entry) { r.adopt(env, es) })
	}
}

// knewBefore reports whether the node had e (or newer) before the current
// round began on its clock.
func (r *rumor) knewBefore(env proc.Env, e Entry) bool {
	i, ok := r.db.find(e.Key)
	if !ok {
		return true // reaped: known long ago
	}
	now := env.Now()
	return r.db.items[i].since < now-now%r.p.Period
}

// adopt applies entries learned by anti-entropy: each news is a rumor.
func (r *rumor) adopt(env proc.Env, es []Entry) {
	for _, e := range es {
		if r.db.apply(env, e) {
			r.infect(env, e)
		}
	}
}

func sumsOf(es []Entry) []Sum {
	out := make([]Sum, len(es))
	for i, e := range es {
		out[i] = Sum{e.Key, e.Version}
	}
	return out
}
