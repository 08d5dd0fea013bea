package deadlock

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// The OR model (communication deadlock; Chandy, Misra & Haas 1983 §4;
// Kshemkalyani & Singhal §10.5.3): a blocked process waits for a message
// from ANY ONE of a set of processes, its dependent set — a receive from
// any of several servers, a request answered by the first replica that
// can. Here the message is an answer to an ask:
//
//	on Await{From}:   ask every process of From; block
//	on an ask:        if active, answer it at once; if blocked, keep it
//	on an answer:     if it answers the current wait, resume (active);
//	                  answer every ask kept while blocked
//
// A wait is numbered as a transaction is (Txn: the waiting process and its
// count of waits). An answer to an older wait is ignored, and so is a
// second answer to the current one. A detector may give a wait up (abort
// it): the process is active again and answers what it kept.
//
// The OR wait-for graph, as the checkers rebuild it from a trace: p → q
// while p waits (from "waits" until "resumed" or "gave-up"), q is in its
// dependent set and no process has answered p's wait yet ("answered" at the
// answerer). Once one has, p is as good as resumed: its answer is on the
// way. A blocked process answers nothing, so a set of waiting processes
// whose dependent sets lie inside the set waits for ever: p is deadlocked
// iff every process reachable from p waits — in the OR model a cycle is not
// enough, every path out of p must end in a waiting process; the smallest
// such sets are the knots of the graph (strongly connected, no edge out).
//
// The outputs that make the graph up (package check, or-deadlock-*):
//
//   - "waits" {wait, from}: the process blocks for any one of from;
//   - "answered" {wait}: the process answered the wait (sent its Answer);
//   - "resumed" {wait, by}: an answer from by ended the wait;
//   - "gave-up" {wait, reason}: a detector aborted the wait;
//   - "detector" {wait_ns} as in the AND model, and "deadlock" {wait,
//     comp}: the process declares its wait deadlocked, shown by its
//     computation comp.

// Await is the input that makes a process block until any one of From
// (distinct process IDs, not its own) answers it.
type Await struct {
	From []proc.ID `json:"from"`
}

func (Await) Kind() string { return "await" }

// Ask asks the receiver to answer Wait.
type Ask struct {
	Wait Txn `json:"wait"`
}

func (Ask) Kind() string     { return "ask" }
func (m Ask) String() string { return "ask " + m.Wait.String() }

// Answer answers Wait: it ends it, if it is still on.
type Answer struct {
	Wait Txn `json:"wait"`
}

func (Answer) Kind() string     { return "answer" }
func (m Answer) String() string { return "answer " + m.Wait.String() }

// The outputs of the OR model.
type (
	// Awaiting: the process blocks in Wait until any one of From answers.
	Awaiting struct {
		Wait Txn       `json:"wait"`
		From []proc.ID `json:"from"`
	}
	// Answered: the process answered Wait (its Answer is on the way).
	Answered struct {
		Wait Txn `json:"wait"`
	}
	// Resumed: the answer of By ended Wait; the process is active.
	Resumed struct {
		Wait Txn     `json:"wait"`
		By   proc.ID `json:"by"`
	}
	// GaveUp: a detector aborted Wait; the process is active.
	GaveUp struct {
		Wait   Txn    `json:"wait"`
		Reason string `json:"reason"`
	}
	// Knot: the process declares its Wait deadlocked in the OR model:
	// every process it waits for, directly or not, waits too. Comp is the
	// computation that showed it.
	Knot struct {
		Wait Txn `json:"wait"`
		Comp int `json:"comp"`
	}
)

func (Awaiting) Kind() string { return "waits" }
func (Answered) Kind() string { return "answered" }
func (Resumed) Kind() string  { return "resumed" }
func (GaveUp) Kind() string   { return "gave-up" }
func (Knot) Kind() string     { return "deadlock" }

func (o Awaiting) String() string {
	return fmt.Sprintf("%s waits for any of %s", o.Wait, procList(o.From))
}
func (o Answered) String() string { return "answered " + o.Wait.String() }
func (o Resumed) String() string  { return fmt.Sprintf("%s resumed by %s", o.Wait, o.By) }
func (o GaveUp) String() string   { return fmt.Sprintf("gave up %s (%s)", o.Wait, o.Reason) }
func (o Knot) String() string     { return fmt.Sprintf("deadlock (OR) %s, computation %d", o.Wait, o.Comp) }

func procList(ps []proc.ID) string {
	s := "{"
	for i, p := range ps {
		if i > 0 {
			s += ","
		}
		s += p.String()
	}
	return s + "}"
}

// ORSite is one process of the OR model: it waits for one of a set, and
// answers the others' asks when it is active. The OR detectors embed it.
//
// Assumes reliable channels: an answer, once sent, arrives.
type ORSite struct {
	seq  int       // waits begun
	wait Txn       // the current wait; Seq 0 if active
	from []proc.ID // its dependent set
	kept []Txn     // the asks received while blocked, one per asker, unanswered
}

// ORSiteState is an OR site as a described state (proc.Describer).
type ORSiteState struct {
	Wait string   `json:"wait"` // the current wait, or "active"
	From []string `json:"from"` // its dependent set
	Kept []string `json:"kept"` // the asks it will answer when active
}

// State describes the site (for Describe).
func (s *ORSite) State() ORSiteState {
	d := ORSiteState{Wait: "active", From: []string{}, Kept: []string{}}
	if s.Blocked() {
		d.Wait = s.wait.String()
		for _, p := range s.from {
			d.From = append(d.From, "p"+strconv.Itoa(int(p)))
		}
	}
	for _, t := range s.kept {
		d.Kept = append(d.Kept, t.String())
	}
	return d
}

// Blocked reports whether the process waits.
func (s *ORSite) Blocked() bool { return s.wait.Seq != 0 }

// DependentSet is the blocked process's dependent set.
func (s *ORSite) DependentSet() []proc.ID { return s.from }

// await blocks the process until one of in.From answers; a blocked
// process ignores it, and so does one asked to wait for an empty set, for
// itself, for a process twice or for one that does not exist.
func (s *ORSite) await(env proc.Env, in Await) bool {
	if s.Blocked() || len(in.From) == 0 {
		return false
	}
	for i, q := range in.From {
		if q < 0 || int(q) >= env.N() || q == env.Self() || slices.Contains(in.From[:i], q) {
			return false
		}
	}
	s.seq++
	s.wait = Txn{P: env.Self(), Seq: s.seq}
	s.from = slices.Clone(in.From)
	env.Output(Awaiting{Wait: s.wait, From: s.from})
	for _, q := range s.from {
		env.Send(q, Ask{Wait: s.wait})
	}
	return true
}

// onAsk answers at once if active, else keeps the ask (the asker's
// latest wait only: FIFO channels bring its waits in order).
func (s *ORSite) onAsk(env proc.Env, m Ask) {
	if !s.Blocked() {
		s.answer(env, m.Wait)
		return
	}
	s.kept = slices.DeleteFunc(s.kept, func(t Txn) bool { return t.P == m.Wait.P })
	s.kept = append(s.kept, m.Wait)
}

// onAnswer resumes the process if m answers its current wait; it
// reports whether it did.
func (s *ORSite) onAnswer(env proc.Env, from proc.ID, m Answer) bool {
	if m.Wait != s.wait || !s.Blocked() {
		return false
	}
	env.Output(Resumed{Wait: s.wait, By: from})
	s.activate(env)
	return true
}

// giveUp aborts the current wait (a detector's resolution).
func (s *ORSite) giveUp(env proc.Env, reason string) {
	env.Output(GaveUp{Wait: s.wait, Reason: reason})
	s.activate(env)
}

// activate ends the wait and answers every ask kept meanwhile.
func (s *ORSite) activate(env proc.Env) {
	s.wait, s.from = Txn{}, nil
	kept := s.kept
	s.kept = nil
	for _, t := range kept {
		s.answer(env, t)
	}
}

func (s *ORSite) answer(env proc.Env, t Txn) {
	env.Output(Answered{Wait: t})
	env.Send(t.P, Answer{Wait: t})
}

// receiveOR handles the OR model's messages; it reports whether m was
// one, and whether it was an answer that resumed the process.
func (s *ORSite) receiveOR(env proc.Env, from proc.ID, m proc.Message) (handled, resumed bool) {
	switch m := m.(type) {
	case Ask:
		s.onAsk(env, m)
	case Answer:
		return true, s.onAnswer(env, from, m)
	default:
		return false, false
	}
	return true, false
}

// clone is an independent copy of the site (kept is changed in place;
// from never is, but is cloned all the same).
func (s *ORSite) clone() ORSite {
	c := *s
	c.from, c.kept = slices.Clone(s.from), slices.Clone(s.kept)
	return c
}
