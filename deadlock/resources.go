package deadlock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Txn names a transaction: the process that runs it and its count of
// transactions begun, this one included (1, 2, ...). Seq 0 is no
// transaction.
type Txn struct {
	P   proc.ID `json:"p"`
	Seq int     `json:"seq"`
}

// String renders the transaction as "p3.2".
func (t Txn) String() string { return fmt.Sprintf("%s.%d", t.P, t.Seq) }

// Begin is the input that makes a process begin a transaction that wants
// the resources Res (owners' IDs, distinct, not its own).
type Begin struct {
	Res []proc.ID `json:"res"`
}

func (Begin) Kind() string { return "begin" }

// Finish is the input that ends the transaction holding its resources:
// it releases them.
type Finish struct{}

func (Finish) Kind() string { return "finish" }

// Request asks the receiver, the owner of a resource, to lock it for Txn.
type Request struct {
	Txn Txn `json:"txn"`
}

func (Request) Kind() string     { return "request" }
func (m Request) String() string { return "req " + m.Txn.String() }

// Grant tells Txn's process that the sender's resource is locked for it.
type Grant struct {
	Txn Txn `json:"txn"`
}

func (Grant) Kind() string     { return "grant" }
func (m Grant) String() string { return "grant " + m.Txn.String() }

// Release frees the receiver's resource if Txn holds it, or withdraws
// Txn's request if it is queued.
type Release struct {
	Txn Txn `json:"txn"`
}

func (Release) Kind() string     { return "release" }
func (m Release) String() string { return "rel " + m.Txn.String() }

// The outputs of the resource model (see the package documentation).
type (
	// Began: the process began Txn, asking for Res.
	Began struct {
		Txn  Txn       `json:"txn"`
		Want []proc.ID `json:"want"`
	}
	// Acquired: Txn holds every resource it asked for.
	Acquired struct {
		Txn Txn `json:"txn"`
	}
	// Released: Txn ended and released its resources.
	Released struct {
		Txn Txn `json:"txn"`
	}
	// Aborted: a detector aborted Txn, which released what it held and
	// withdrew what it asked for; Reason says which detector.
	Aborted struct {
		Txn    Txn    `json:"txn"`
		Reason string `json:"reason"`
	}
	// Granted: the owner locked its resource Res for Txn.
	Granted struct {
		Res proc.ID `json:"res"`
		Txn Txn     `json:"txn"`
	}
	// Blocked: the owner queued Txn's request for Res behind Holder: the
	// wait-for edge Txn → Holder.
	Blocked struct {
		Res    proc.ID `json:"res"`
		Txn    Txn     `json:"txn"`
		Holder Txn     `json:"holder"`
	}
	// Freed: Txn released Res, which it held.
	Freed struct {
		Res proc.ID `json:"res"`
		Txn Txn     `json:"txn"`
	}
	// Withdrawn: Txn's queued request for Res was removed (Txn aborted).
	Withdrawn struct {
		Res proc.ID `json:"res"`
		Txn Txn     `json:"txn"`
	}
	// Detector states, at start, the detector's promise: it declares a
	// deadlock within Wait of its forming, plus its messages' travel (for
	// CMH with backoff, the longest wait between its computations).
	Detector struct {
		Wait time.Duration `json:"wait_ns"`
	}
	// Deadlock: the process declares its transaction Txn deadlocked.
	// Cycle is the cycle of processes the declaration rests on, from the
	// declaring one; nil if the detector cannot name one.
	Deadlock struct {
		Txn   Txn       `json:"txn"`
		Cycle []proc.ID `json:"cycle"`
	}
)

func (Began) Kind() string     { return "txn" }
func (Acquired) Kind() string  { return "acquired" }
func (Released) Kind() string  { return "released" }
func (Aborted) Kind() string   { return "aborted" }
func (Granted) Kind() string   { return "granted" }
func (Blocked) Kind() string   { return "blocked" }
func (Freed) Kind() string     { return "freed" }
func (Withdrawn) Kind() string { return "withdrawn" }
func (Detector) Kind() string  { return "detector" }
func (Deadlock) Kind() string  { return "deadlock" }

func (o Began) String() string     { return fmt.Sprintf("%s wants %s", o.Txn, resList(o.Want)) }
func (o Acquired) String() string  { return o.Txn.String() + " holds all" }
func (o Released) String() string  { return o.Txn.String() + " released" }
func (o Aborted) String() string   { return fmt.Sprintf("abort %s (%s)", o.Txn, o.Reason) }
func (o Granted) String() string   { return fmt.Sprintf("r%d → %s", o.Res, o.Txn) }
func (o Blocked) String() string   { return fmt.Sprintf("%s waits for %s (r%d)", o.Txn, o.Holder, o.Res) }
func (o Freed) String() string     { return fmt.Sprintf("r%d freed by %s", o.Res, o.Txn) }
func (o Withdrawn) String() string { return fmt.Sprintf("r%d: %s withdrawn", o.Res, o.Txn) }
func (o Detector) String() string  { return "detector wait " + o.Wait.String() }

func (o Deadlock) String() string {
	if o.Cycle == nil {
		return "deadlock? " + o.Txn.String()
	}
	var b strings.Builder
	b.WriteString("deadlock ")
	for _, p := range o.Cycle {
		b.WriteString(p.String())
		b.WriteString("→")
	}
	b.WriteString(o.Cycle[0].String())
	return b.String()
}

func resList(rs []proc.ID) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("r%d", int(r))
	}
	return strings.Join(parts, ",")
}

// Site is one process of the resource model: the owner of resource Self
// (its lock table) and the runner of one transaction at a time. The
// detectors embed it and add what they do while its transaction waits.
//
// Assumes reliable FIFO channels: a Release must not overtake the Request
// it cancels, nor a Grant be lost.
type Site struct {
	// The lock table of the resource this process owns.
	holder Txn   // the transaction holding it; Seq 0 if it is free
	queue  []Txn // the transactions waiting for it, in arrival order

	// The transaction this process runs.
	seq     int       // transactions begun
	txn     Txn       // the current one; Seq 0 if none
	res     []proc.ID // the resources it asked for
	pending []proc.ID // those not granted yet
}

// SiteState is a site's lock table and transaction as a described state
// (proc.Describer): who holds its resource and who waits for it, and what
// its own transaction holds and still waits for.
type SiteState struct {
	Holder  string   `json:"holder"`  // the transaction holding this site's resource, or "free"
	Queue   []string `json:"queue"`   // the transactions waiting for it
	Txn     string   `json:"txn"`     // this process's transaction, or "none"
	Asked   []string `json:"asked"`   // the resources it asked for
	Pending []string `json:"pending"` // those not granted yet: its wait-for edges go to their holders
}

// State describes the site (for Describe).
func (s *Site) State() SiteState {
	d := SiteState{Holder: "free", Txn: "none", Queue: []string{}, Asked: []string{}, Pending: []string{}}
	if s.holder.Seq != 0 {
		d.Holder = s.holder.String()
	}
	for _, t := range s.queue {
		d.Queue = append(d.Queue, t.String())
	}
	if s.txn.Seq != 0 {
		d.Txn = s.txn.String()
		for _, r := range s.res {
			d.Asked = append(d.Asked, "r"+strconv.Itoa(int(r)))
		}
		for _, r := range s.pending {
			d.Pending = append(d.Pending, "r"+strconv.Itoa(int(r)))
		}
	}
	return d
}

// Waiting reports whether the process's transaction is blocked.
func (s *Site) Waiting() bool { return s.txn.Seq != 0 && len(s.pending) > 0 }

// Pending lists the resources the blocked transaction still waits for:
// its wait-for edges go to their holders.
func (s *Site) Pending() []proc.ID { return s.pending }

// Current is the process's transaction (Seq 0 if none).
func (s *Site) Current() Txn { return s.txn }

// begin starts a transaction and asks for its resources. A process that
// is still running one ignores the input, and so does one asked for a
// resource twice or for one no process owns.
func (s *Site) begin(env proc.Env, in Begin) bool {
	if s.txn.Seq != 0 {
		return false
	}
	for i, r := range in.Res {
		if r < 0 || int(r) >= env.N() || slices.Contains(in.Res[:i], r) {
			return false
		}
	}
	s.seq++
	s.txn = Txn{P: env.Self(), Seq: s.seq}
	s.res = slices.Clone(in.Res)
	s.pending = slices.Clone(in.Res)
	env.Output(Began{Txn: s.txn, Want: s.res})
	for _, r := range s.res {
		env.Send(r, Request{Txn: s.txn})
	}
	if len(s.pending) == 0 {
		env.Output(Acquired{Txn: s.txn})
	}
	return true
}

// onGrant records a grant; it reports whether the transaction now holds
// everything. A grant for an aborted transaction is ignored: its Release
// is on the way to the owner already.
func (s *Site) onGrant(env proc.Env, from proc.ID, m Grant) bool {
	i := slices.Index(s.pending, from)
	if m.Txn != s.txn || i < 0 {
		return false
	}
	s.pending = slices.Delete(s.pending, i, i+1)
	if len(s.pending) == 0 {
		env.Output(Acquired{Txn: s.txn})
		return true
	}
	return false
}

// finish ends a transaction that holds everything.
func (s *Site) finish(env proc.Env) {
	if s.txn.Seq == 0 || len(s.pending) > 0 {
		return
	}
	env.Output(Released{Txn: s.txn})
	s.end(env)
}

// abort aborts the current transaction: it releases what it holds and
// withdraws what it asked for.
func (s *Site) abort(env proc.Env, reason string) {
	env.Output(Aborted{Txn: s.txn, Reason: reason})
	s.end(env)
}

func (s *Site) end(env proc.Env) {
	for _, r := range s.res {
		env.Send(r, Release{Txn: s.txn})
	}
	s.txn, s.res, s.pending = Txn{}, nil, nil
}

// onRequest is the owner's lock: grant if free, else queue.
func (s *Site) onRequest(env proc.Env, m Request) {
	if s.holder.Seq == 0 {
		s.grant(env, m.Txn)
		return
	}
	s.queue = append(s.queue, m.Txn)
	env.Output(Blocked{Res: env.Self(), Txn: m.Txn, Holder: s.holder})
}

// onRelease is the owner's unlock: free the resource and grant it to the
// first in the queue, or withdraw a queued request.
func (s *Site) onRelease(env proc.Env, m Release) {
	if m.Txn == s.holder {
		env.Output(Freed{Res: env.Self(), Txn: m.Txn})
		s.holder = Txn{}
		if len(s.queue) > 0 {
			next := s.queue[0]
			s.queue = slices.Delete(s.queue, 0, 1)
			s.grant(env, next)
		}
		return
	}
	if i := slices.Index(s.queue, m.Txn); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		env.Output(Withdrawn{Res: env.Self(), Txn: m.Txn})
	}
}

func (s *Site) grant(env proc.Env, t Txn) {
	s.holder = t
	env.Output(Granted{Res: env.Self(), Txn: t})
	env.Send(t.P, Grant{Txn: t})
}

// queued reports whether t waits in this owner's queue, and for whom.
func (s *Site) queued(t Txn) (Txn, bool) {
	return s.holder, s.holder.Seq != 0 && slices.Contains(s.queue, t)
}

// receive handles the resource model's messages; it reports whether m was
// one, and whether it was a grant that completed the transaction.
func (s *Site) receive(env proc.Env, from proc.ID, m proc.Message) (handled, acquired bool) {
	switch m := m.(type) {
	case Request:
		s.onRequest(env, m)
	case Grant:
		return true, s.onGrant(env, from, m)
	case Release:
		s.onRelease(env, m)
	default:
		return false, false
	}
	return true, false
}

// clone is an independent copy of the site (its slices are changed in
// place).
func (s *Site) clone() Site {
	c := *s
	c.queue, c.res, c.pending = slices.Clone(s.queue), slices.Clone(s.res), slices.Clone(s.pending)
	return c
}
