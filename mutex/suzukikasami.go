package mutex

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Suzuki–Kasami (I. Suzuki and T. Kasami, "A distributed mutual exclusion
// algorithm", ACM TOCS 3(4), 1985; beyond the textbooks): one token,
// requests broadcast. Process 0 holds the token at the start.
//
// Every process keeps RN[1..N], the highest request number it has heard of
// from each process. The token carries LN[1..N], the number of the last
// request of each process that was granted, and Q, a queue of processes
// that are owed the token. Process j has an outstanding request exactly when
// RN[j] = LN[j] + 1.
//
//	To enter:       if holding the token: enter (no message)
//	                else RN[i]++; broadcast REQUEST(i, RN[i])
//	On REQUEST(j, n):
//	                RN[j] := max(RN[j], n);
//	                if holding the token, not in the CS, and RN[j] = LN[j]+1:
//	                    send the token to j
//	On the token:   enter
//	To exit:        LN[i] := RN[i];
//	                append to Q every j not in Q with RN[j] = LN[j]+1
//	                (scanning i+1, …, N, 1, …, i−1);
//	                if Q is not empty: send the token to the head of Q
//
// A request number distinguishes a new request from an old one that
// arrives late, so channels need not be FIFO; they must be reliable, and a
// lost token is lost for good (no failures).
//
// Cost: N messages per entry (N−1 requests, 1 token), or 0 when the
// process holds the token already; synchronisation delay 1 message (the
// token), or 0.
//
// ME1 holds (one token); ME2 holds (a request reaches the holder, and the
// scan at each exit puts every outstanding request in Q, which is served
// in order). ME3 does not: Q is filled by scanning ids, not in the order
// the requests were made, so a request that happened after another (and
// learnt of it) can be served first. The tests show a run that does it.
//
// Lent: a process outputs Lent{To: j} when it sends the token to j, and
// Lent{To: None} when the token reaches it. A requester waits for all
// others (Waiting lists them): any of them may hold the token.
type suzukiKasami struct {
	rn    []uint64
	token *skToken // nil unless this process holds the token
	state raState  // RELEASED, WANTED or HELD
}

// skRequest is REQUEST(j, n): process P's n-th request.
type skRequest struct {
	P proc.ID `json:"p"`
	N uint64  `json:"n"`
}

// skToken is the privilege: LN and the queue Q.
type skToken struct {
	LN []uint64  `json:"ln"`
	Q  []proc.ID `json:"q"`
}

func (skRequest) Kind() string     { return "request" }
func (m skRequest) String() string { return fmt.Sprintf("REQ(%s,%d)", m.P, m.N) }
func (skToken) Kind() string       { return "token" }

func (m skToken) String() string {
	q := make([]string, len(m.Q))
	for i, p := range m.Q {
		q[i] = p.String()
	}
	ln := make([]string, len(m.LN))
	for i, n := range m.LN {
		ln[i] = strconv.FormatUint(n, 10)
	}
	return "TOKEN(LN=[" + strings.Join(ln, ",") + "] Q=[" + strings.Join(q, ",") + "])"
}

func init() {
	register(proc.Algorithm{
		Name:    "suzuki-kasami",
		Summary: "broadcast token: request numbers RN, token with LN and a queue (N messages per entry, 0 with the token)",
		Source:  "Suzuki & Kasami 1985 (beyond the textbooks)",
		Assumes: proc.Assumptions{Reliable: true},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_entry":    N,
				"client_delay_msgs":     2,
				"sync_delay_msgs":       1,
				"repeat_first_messages": N,
			}
		},
		Notes: map[string]string{
			"messages_per_entry": "N−1 requests and the token; 0 when the process already holds the token",
		},
		New: func(id proc.ID, n int) proc.Process {
			s := &suzukiKasami{rn: make([]uint64, n)}
			if id == 0 {
				s.token = &skToken{LN: make([]uint64, n)}
			}
			return s
		},
		Breaks: []string{"ME3"},
		Messages: []proc.Message{
			skRequest{}, skToken{},
		},
	})
}

func (s *suzukiKasami) Start(proc.Env) {}

func (s *suzukiKasami) Timeout(proc.Env, any) {}

func (s *suzukiKasami) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Acquire:
		s.acquire(env)
	case Release:
		s.release(env)
	}
}

func (s *suzukiKasami) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case skRequest:
		s.onRequest(env, m)
	case skToken:
		s.onToken(env, m)
	}
}

func (s *suzukiKasami) acquire(env proc.Env) {
	if s.state != raReleased {
		return // a second Acquire breaks the contract; ignore it
	}
	if s.token != nil {
		s.state = raHeld
		env.Output(Enter{})
		return
	}
	s.state = raWanted
	self := env.Self()
	s.rn[self]++
	all := others(self, env.N())
	for _, p := range all {
		env.Send(p, skRequest{P: self, N: s.rn[self]})
	}
	env.Output(Waiting{For: all})
}

func (s *suzukiKasami) onRequest(env proc.Env, m skRequest) {
	if m.P < 0 || int(m.P) >= len(s.rn) {
		return // from no process of this run
	}
	s.rn[m.P] = max(s.rn[m.P], m.N)
	if s.token != nil && s.state == raReleased && s.rn[m.P] == s.token.LN[m.P]+1 {
		s.sendToken(env, m.P)
	}
}

func (s *suzukiKasami) onToken(env proc.Env, m skToken) {
	if s.state != raWanted {
		return // not asked for: a duplicate, outside the assumptions
	}
	s.token = &skToken{LN: slices.Clone(m.LN), Q: slices.Clone(m.Q)}
	env.Output(Lent{To: proc.None})
	s.state = raHeld
	env.Output(Enter{})
}

func (s *suzukiKasami) release(env proc.Env) {
	if s.state != raHeld {
		return // Release without Enter breaks the contract; ignore it
	}
	s.state = raReleased
	env.Output(Exit{})
	self, n := env.Self(), env.N()
	t := s.token
	t.LN[self] = s.rn[self]
	for k := 1; k < n; k++ {
		j := proc.ID((int(self) + k) % n)
		if s.rn[j] == t.LN[j]+1 && !slices.Contains(t.Q, j) {
			t.Q = append(t.Q, j)
		}
	}
	if len(t.Q) > 0 {
		next := t.Q[0]
		t.Q = t.Q[1:]
		s.sendToken(env, next)
	}
}

func (s *suzukiKasami) sendToken(env proc.Env, to proc.ID) {
	t := s.token
	s.token = nil
	env.Send(to, skToken{LN: slices.Clone(t.LN), Q: slices.Clone(t.Q)})
	env.Output(Lent{To: to})
}
