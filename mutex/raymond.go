package mutex

import (
	"github.com/cohort-go/cohort/proc"
)

// Raymond's tree algorithm (K. Raymond, "A tree-based algorithm for
// distributed mutual exclusion", ACM TOCS 7(1), 1989; beyond the
// textbooks): one token, and requests that travel along a spanning tree
// towards it.
//
// The tree is the balanced binary tree over the ids: the parent of i > 0 is
// (i−1)/2, so the children of i are 2i+1 and 2i+2, and its height is
// ⌊log₂ N⌋. It is a logical overlay: messages go only along its edges,
// which a full network has. Process 0, the root, holds the token at the
// start, and every other process's holder points to its parent.
//
// Each process keeps HOLDER (itself if it has the token, otherwise the
// neighbour in whose direction the token lies), USING (in the critical
// section), ASKED (it sent a request to HOLDER that the token has not yet
// answered) and REQUEST_Q, a FIFO queue of neighbours (and itself) that
// asked it for the token. The events and the two procedures:
//
//	assign_privilege: if HOLDER = self and not USING and Q not empty:
//	                      HOLDER := dequeue(Q); ASKED := false;
//	                      if HOLDER = self: USING := true (enter)
//	                      else send PRIVILEGE to HOLDER
//	make_request:     if HOLDER ≠ self and Q not empty and not ASKED:
//	                      send REQUEST to HOLDER; ASKED := true
//	To enter:         enqueue(self); assign_privilege; make_request
//	On REQUEST from x:  enqueue(x); assign_privilege; make_request
//	On PRIVILEGE:     HOLDER := self; assign_privilege; make_request
//	To exit:          USING := false; assign_privilege; make_request
//
// A process passes on at most one request at a time (ASKED), and sends the
// token to a neighbour only when it dequeues that neighbour's request, so a
// queue holds each neighbour at most once. Assumptions: reliable channels,
// no failures. FIFO is not needed: a request that overtakes the token on
// the same link finds its receiver still waiting for that token (ASKED, as
// it asked for it) and is merely queued.
//
// Cost: a request travels from the requester to the token holder and the
// token travels back, so an entry costs at most 2·D messages, D ≤ 2⌊log₂ N⌋
// the tree's diameter; O(log N). The tests measure about 2·log₂N for lone
// requests, and under saturation a small constant (about 3 for N up to
// 64): requests wait in the queues instead of travelling.
//
// ME1 and ME2 hold. ME3 does not: the local FIFO queues serve the token
// first to whichever neighbour asked first, and a request issued later, on
// a short path, can overtake an earlier one on a long path. The tests show
// such a run.
//
// Lent: a process outputs Lent{To: x} when it sends the token to x, and
// Lent{To: None} when the token reaches it. A requester waits for HOLDER
// (Waiting{For: [HOLDER]}), reported again whenever HOLDER changes.
type raymond struct {
	holder  proc.ID
	using   bool
	asked   bool
	queue   []proc.ID // REQUEST_Q, FIFO
	wanting bool      // its own request is in the queue
}

// rayRequest asks the neighbour towards the token for it.
type rayRequest struct{}

// rayToken is the privilege.
type rayToken struct{}

func (rayRequest) Kind() string   { return "request" }
func (rayRequest) String() string { return "REQ" }
func (rayToken) Kind() string     { return "token" }
func (rayToken) String() string   { return "TOKEN" }

// rayParent is the parent of process i in the tree; None for the root.
func rayParent(i proc.ID) proc.ID {
	if i == 0 {
		return proc.None
	}
	return (i - 1) / 2
}

func init() {
	register(proc.Algorithm{
		Name:    "raymond",
		Summary: "token on a balanced binary tree: requests travel towards the token, queued at each node (O(log N) messages per entry)",
		Source:  "Raymond 1989 (beyond the textbooks)",
		Assumes: proc.Assumptions{Reliable: true},
		Notes: map[string]string{
			"messages_per_entry": "O(log N): requests and the token travel along the tree's paths",
		},
		New: func(id proc.ID, _ int) proc.Process {
			r := &raymond{holder: rayParent(id)}
			if id == 0 {
				r.holder = 0
			}
			return r
		},
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			rayRequest{}, rayToken{},
		},
	})
}

func (r *raymond) Start(proc.Env) {}

func (r *raymond) Timeout(proc.Env, any) {}

func (r *raymond) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		r.acquire(env)
	case Release:
		r.release(env)
	}
}

// acquire: enqueue(self); assign_privilege; make_request.
func (r *raymond) acquire(env proc.Env) {
	if r.wanting || r.using {
		return // a second Acquire breaks the contract; ignore it
	}
	r.wanting = true
	r.queue = append(r.queue, env.Self())
	r.step(env)
	if r.wanting {
		env.Output(Waiting{For: []proc.ID{r.holder}})
	}
}

// release: USING := false; assign_privilege; make_request.
func (r *raymond) release(env proc.Env) {
	if !r.using {
		return // Release without Enter breaks the contract; ignore it
	}
	r.using = false
	env.Output(Exit{})
	r.step(env)
}

func (r *raymond) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m.(type) {
	case rayRequest:
		r.onRequest(env, from)
	case rayToken:
		r.onToken(env)
	}
}

// onRequest: enqueue(x); assign_privilege; make_request.
func (r *raymond) onRequest(env proc.Env, from proc.ID) {
	r.queue = append(r.queue, from)
	r.step(env)
}

// onToken: HOLDER := self; assign_privilege; make_request. If the token
// moves on while this process still waits, it waits for the new HOLDER.
func (r *raymond) onToken(env proc.Env) {
	r.holder = env.Self()
	env.Output(Lent{To: proc.None})
	r.step(env)
	if r.wanting && r.holder != env.Self() {
		env.Output(Waiting{For: []proc.ID{r.holder}})
	}
}

// step is the pair every event ends with: assign_privilege, make_request.
func (r *raymond) step(env proc.Env) {
	r.assignPrivilege(env)
	r.makeRequest(env)
}

func (r *raymond) assignPrivilege(env proc.Env) {
	if r.holder != env.Self() || r.using || len(r.queue) == 0 {
		return
	}
	r.holder = r.queue[0]
	r.queue = r.queue[1:]
	r.asked = false
	if r.holder == env.Self() {
		r.using, r.wanting = true, false
		env.Output(Enter{})
		return
	}
	env.Send(r.holder, rayToken{})
	env.Output(Lent{To: r.holder})
}

func (r *raymond) makeRequest(env proc.Env) {
	if r.holder != env.Self() && len(r.queue) > 0 && !r.asked {
		env.Send(r.holder, rayRequest{})
		r.asked = true
	}
}
