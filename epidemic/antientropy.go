package epidemic

import (
	"math"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Anti-entropy (Demers et al. 1987; Tanenbaum & van Steen §4.5): every
// round, node P picks a random node Q and the two resolve their
// differences, in one of three ways:
//
//	push:       P → (key, value, version) of everything it has → Q
//	pull:       P → (key, version) digest → Q
//	            Q → (key, value, version) newer than the digest → P
//	push-pull:  P → (key, version) digest → Q
//	            Q → (key, value, version) newer than the digest,
//	                (key, version) of what P has newer than Q → P
//	            P → (key, value, version) Q asked for → Q
//
// and Q adopts, key by key, whatever is newer than what it has. With
// fanout f, P does so with f distinct random nodes per round. A message
// that would carry nothing is not sent (a node with an empty map pushes
// nothing; Q does not answer a digest it has nothing newer for).
//
// Deletions are versioned tombstones (death certificates), spread like
// any write and dropped when they are Params.ReapAfter old; one that
// arrives older than that deletes what it is newer than and is not kept.
//
// A node that joins a running system pulls from its contact at once, then
// gossips like the others; one that recovers from a crash starts empty and
// catches up the same way, in its rounds.
//
// Assumptions: none on the channels (a lost message is a lost exchange;
// the next round repairs it), crash-recover failures (a recovered node has
// forgotten everything and pulls it back; a write made at a node that
// crashes before its first exchange is lost with it). Every node knows the
// names of all. A deletion survives only if every node holding the old
// value hears of it within ReapAfter.
//
// Cost: per node and round, f messages for push, up to 2f for pull, up to
// 3f for push-pull; every message carries the map, or its digest, or the
// difference. With pᵢ the susceptible fraction after round i, pull gives
// pᵢ₊₁ = pᵢ², push pᵢ₊₁ ≈ pᵢ/e in the tail; every node has an update
// after about log_{f+1}(n) + ln(n)/f + O(1) rounds.
type antiEntropy struct {
	mode mode
	p    *Params // shared by every process of the run
	db   store
	// pick chooses the round's f partners; nil: f of the N−1 others at
	// random. (members.go: the members SWIM holds alive.)
	pick func(env proc.Env, f int) []proc.ID
	// checksumFirst opens a push-pull exchange with the map's checksum
	// instead of its digest (members.go): a Q whose checksum differs
	// answers with its own digest, and the exchange goes on from Q's side;
	// one whose map is the same says nothing. Replicas that agree — a
	// quiet cluster's — then exchange 10 bytes where a digest names
	// every key (Demers et al. §1.3).
	checksumFirst bool
}

type mode uint8

const (
	push mode = iota
	pull
	pushPull
)

// Update carries entries: a push, the answer to a pull, push-pull's third
// step.
type Update struct{ Entries []Entry }

// Pull asks for what is newer than the digest.
type Pull struct{ Digest []Sum }

// Digest opens a push-pull exchange: the answer is a Reply.
type Digest struct{ Digest []Sum }

// Checksum opens a push-pull exchange whose opener expects to agree: the
// checksum of its map (store.checksum). It is answered with a Digest, or
// not at all.
type Checksum struct{ Sum uint64 }

// Reply answers a Digest: the entries newer than it, and what its sender
// has that is newer than the replier's.
type Reply struct {
	Entries []Entry
	Want    []Sum
}

func (Update) Kind() string { return "update" }
func (Pull) Kind() string   { return "pull" }
func (Digest) Kind() string { return "digest" }
func (Reply) Kind() string  { return "reply" }

func (Checksum) Kind() string { return "checksum" }

// A rumor's Update and an exchange's opening Checksum may be lost
// (proc.Lossy): anti-entropy assumes nothing of its channels — a lost
// rumor is the residue the next exchange repairs, a lost checksum a
// skipped exchange — and both are small, so a live host sends them as
// datagrams, as memberlist gossips its broadcasts over UDP, without a
// connection to each random partner. The digests, and the answers that
// carry a map's difference, may be long and take the reliable channel.
func (Update) Lossy()   {}
func (Checksum) Lossy() {}

func (u Update) String() string { return label("UPDATE", u.Entries) }
func (p Pull) String() string {
	if len(p.Digest) == 0 {
		return "PULL{}" // most of a dissemination's messages: no allocation
	}
	return label("PULL", p.Digest)
}
func (d Digest) String() string {
	if len(d.Digest) == 0 {
		return "DIGEST{}"
	}
	return label("DIGEST", d.Digest)
}
func (c Checksum) String() string { return "CHECKSUM(" + strconv.FormatUint(c.Sum, 16) + ")" }
func (r Reply) String() string {
	return label("REPLY", r.Entries) + " want" + label("", r.Want)
}

// aeMessages are anti-entropy's messages, in wire-tag order (append-only).
var aeMessages = []proc.Message{Update{}, Pull{}, Digest{}, Reply{}}

func init() {
	for _, v := range []struct {
		name, summary string
		mode          mode
	}{
		{"push", "anti-entropy by push: each round a node sends its map to f random nodes (p ← p/e per round in the tail)", push},
		{"pull", "anti-entropy by pull: each round a node sends its digest to f random nodes and gets what is newer (p ← p² per round)", pull},
		{"push-pull", "anti-entropy by push-pull: digest, then both directions' differences (three messages per exchange)", pushPull},
	} {
		v := v
		builders[v.name] = func(p Params) func(proc.ID, int) proc.Process {
			return func(proc.ID, int) proc.Process {
				return &antiEntropy{mode: v.mode, p: &p, db: store{reapAfter: p.ReapAfter}}
			}
		}
		register(proc.Algorithm{
			Name:    v.name,
			Summary: v.summary,
			Source:  "Demers et al. 1987 (anti-entropy); Tanenbaum & van Steen §4.5",
			Assumes: proc.Assumptions{Failures: "crash-recover"},
			New:     builders[v.name](Params{}.withDefaults()),
			Theory: func(n int) map[string]float64 {
				if v.mode != push {
					return nil // the notes' count of rounds is push's
				}
				return map[string]float64{"rounds_to_all": RoundsToAll(n, 1)}
			},
			Notes: map[string]string{
				"rounds_to_all": "log_{f+1}(n) + ln(n)/f is the notes' estimate for push (an infective node tries f random nodes a round), up to O(1); pull and push-pull have no such figure in the sources and finish sooner, since once most nodes have the update each round squares what is left (p ← p²)",
			},
			Checks:   []string{"integrity", "gossip-convergence", "gossip-no-resurrection"},
			Messages: aeMessages,
			Scenario: "nodes: 16\nstop:\n  deadline: 2s\n",
		})
	}
}

// RoundsToAll is the notes' estimate of the rounds an update takes to
// reach all n nodes with fanout f: log_{f+1}(n) + ln(n)/f (the O(1) left
// out).
func RoundsToAll(n, f int) float64 {
	N, F := float64(n), float64(f)
	return math.Log(N)/math.Log(F+1) + math.Log(N)/F
}

func (a *antiEntropy) Start(env proc.Env) { env.SetTimer(a.p.next(env, a.p.Period), round{}) }

// Join starts the node and pulls from its contact at once.
func (a *antiEntropy) Join(env proc.Env, contact proc.ID) {
	a.Start(env)
	if contact != proc.None {
		env.Send(contact, Pull{Digest: a.db.digest()})
	}
}

func (a *antiEntropy) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Put:
		a.db.put(env, in)
	case Delete:
		a.db.write(env, in.Key, "", true)
	}
}

func (a *antiEntropy) Timeout(env proc.Env, tag any) {
	if _, ok := tag.(round); !ok {
		return
	}
	a.db.reap(env)
	var qs []proc.ID
	if a.pick != nil {
		qs = a.pick(env, a.p.Fanout)
	} else {
		var buf [4]proc.ID
		qs = peers(env, a.p.Fanout, buf[:])
	}
	for _, q := range qs {
		a.exchange(env, q)
	}
	env.SetTimer(a.p.next(env, a.p.Period), round{})
}

// exchange opens one exchange with q.
func (a *antiEntropy) exchange(env proc.Env, q proc.ID) {
	switch a.mode {
	case push:
		if len(a.db.items) > 0 {
			env.Send(q, Update{Entries: a.db.entries()})
		}
	case pull:
		env.Send(q, Pull{Digest: a.db.digest()})
	case pushPull:
		if a.checksumFirst {
			env.Send(q, Checksum{Sum: a.db.checksum()})
			return
		}
		env.Send(q, Digest{Digest: a.db.digest()})
	}
}

// Receive is Q's side of an exchange (an Update or a Pull, a Digest) and
// P's end of one (the Reply): see store.exchange.
func (a *antiEntropy) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if c, ok := m.(Checksum); ok {
		if c.Sum != a.db.checksum() {
			env.Send(from, Digest{Digest: a.db.digest()})
		}
		return
	}
	a.db.exchange(env, from, m, func(es []Entry) { a.onUpdate(env, es) })
}

func (a *antiEntropy) onUpdate(env proc.Env, es []Entry) {
	for _, e := range es {
		a.db.apply(env, e)
	}
}
