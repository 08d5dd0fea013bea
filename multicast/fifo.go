package multicast

import "github.com/cohort-go/cohort/proc"

// FIFO-ordered multicast, FO-multicast (Coulouris et al., FIFO ordering).
// Process p keeps S_g^p, the number of messages it has sent to group g, and
// R_g^q, the number of the latest message from q to g that it has
// delivered:
//
//	To FO-multicast(g, m):        S_g^p := S_g^p + 1; B-multicast(g, ⟨m, S_g^p⟩)
//	On B-deliver(⟨m, S⟩) from q:  if S = R_g^q + 1: FO-deliver(m); R_g^q := S,
//	                                  then deliver the held-back messages of q
//	                                  that are next in turn
//	                              if S > R_g^q + 1: place ⟨m, S⟩ in the hold-back queue
//
// (The textbook piggybacks S before incrementing it and starts R at −1;
// numbering from 1 is the same rule.)
//
// Assumptions: reliable channels, in any order; processes fail by
// crashing. B-multicast is plain sends: a sender that crashes mid-multicast
// leaves some members without the message and, since a member then holds
// back everything after it from that sender, without the rest too — FIFO
// order holds, agreement does not ("ordered multicast does not imply
// reliability"). Messages of different senders are not ordered: a reply
// can be delivered before the message it answers (no causal order).
//
// Cost: N − 1 messages per multicast; one message of latency, more when a
// message waits in the hold-back queue for an earlier one.
type fifo struct {
	groups groupTable
	S      counters
	R      map[source]uint64
	queue  map[source]map[uint64]string // hold-back queue, per sender
	held   int
	hb     holdback
}

// fData is a multicast message with its sender's number S.
type fData struct {
	Group  string
	Origin proc.ID
	S      uint64
	Body   string
}

func (fData) Kind() string     { return "data" }
func (d fData) String() string { return "DATA " + msgKey{d.Group, d.Origin, d.S}.String() }

func init() {
	register(proc.Algorithm{
		Name:    "fifo",
		Summary: "FO-multicast: per-sender numbers S and R and a hold-back queue (N−1 messages)",
		Source:  "Coulouris et al. (FO-multicast)",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop"},
		Theory: func(n int) map[string]float64 {
			N := float64(n)
			return map[string]float64{
				"messages_per_multicast": N - 1,
				"latency_msgs":           1,
			}
		},
		New: func(_ proc.ID, n int) proc.Process {
			return &fifo{groups: Groups(n), S: counters{}, R: map[source]uint64{}, queue: map[source]map[uint64]string{}}
		},
		Breaks:   []string{"mc-agreement", "causal-order", "total-order"},
		Messages: []proc.Message{fData{}},
	})
}

func (f *fifo) Start(proc.Env)        {}
func (f *fifo) Timeout(proc.Env, any) {}

func (f *fifo) Input(env proc.Env, in proc.Input) {
	if m, ok := in.(Multicast); ok {
		f.multicast(env, m)
	}
}

func (f *fifo) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	if d, ok := m.(fData); ok {
		f.onData(env, d)
	}
}

func (f *fifo) multicast(env proc.Env, in Multicast) {
	g, ok := f.groups.accept(env, in, false)
	if !ok {
		return
	}
	k := sent(env, g, f.S.next(g.Name), in.Body)
	d := fData{Group: k.Group, Origin: k.Origin, S: k.Seq, Body: in.Body}
	g.others(env.Self(), func(q proc.ID) { env.Send(q, d) })
	if g.Has(env.Self()) {
		f.R[source{g.Name, env.Self()}] = k.Seq
		deliver(env, k, in.Body)
	}
}

func (f *fifo) onData(env proc.Env, d fData) {
	if g, ok := f.groups.lookup(d.Group); !ok || !g.Has(env.Self()) || !f.groups.process(d.Origin) {
		return // not a message of this run: keep no queue for it
	}
	src := source{d.Group, d.Origin}
	q := f.queue[src]
	if q == nil {
		q = map[uint64]string{}
		f.queue[src] = q
	}
	if _, dup := q[d.S]; dup || d.S <= f.R[src] {
		return
	}
	if !f.hb.hold(env, msgKey{d.Group, d.Origin, d.S}, d.Body, d.S == f.R[src]+1) {
		return
	}
	q[d.S] = d.Body
	f.held++
	for {
		next := f.R[src] + 1
		body, ok := q[next]
		if !ok {
			break
		}
		delete(q, next)
		f.held--
		f.hb.release(body)
		f.R[src] = next
		deliver(env, msgKey{d.Group, d.Origin, next}, body)
	}
	f.hb.note(env, f.held)
}
