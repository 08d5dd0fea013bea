package multicast

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// holdbackOf is a process's hold-back accounting.
func holdbackOf(t *testing.T, p proc.Process) *holdback {
	switch p := p.(type) {
	case *fifo:
		return &p.hb
	case *causal:
		return &p.hb
	case *sequencer:
		return &p.hb
	case *isis:
		return &p.hb
	case *lamportTO:
		return &p.hb
	case *reliableNack:
		return &p.hb
	}
	t.Fatalf("no hold-back in %T", p)
	return nil
}

// A member that holds messages back for a gap that does not fill (its
// sender's first message lost, a sequencer's orders that never come)
// keeps at most the budget's bytes: past it, it drops what arrives and
// says so (Overflow). What fills the gap is still taken, and
// delivers what was held; the bytes held go back to 0.
func TestHoldbackIsBoundedInBytes(t *testing.T) {
	const limit, size = 10 << 10, 1 << 10
	body := strings.Repeat("x", size)
	data := map[string]func(seq uint64) proc.Message{
		"fifo":          func(s uint64) proc.Message { return fData{Group: "all", Origin: 1, S: s, Body: body} },
		"causal":        func(s uint64) proc.Message { return cData{Group: "all", Origin: 1, V: []uint64{0, s, 0}, Body: body} },
		"reliable-nack": func(s uint64) proc.Message { return nData{Group: "all", Origin: 1, Seq: s, Body: body} },
		"total-sequencer": func(s uint64) proc.Message {
			return sData{Group: "all", Origin: 1, Seq: s, Body: body}
		},
		"causal-total": func(s uint64) proc.Message {
			return sData{Group: "all", Origin: 1, Seq: s, V: []uint64{0, s, 0}, Body: body}
		},
		"total-isis":    func(s uint64) proc.Message { return iData{Group: "all", Origin: 1, Seq: s, Body: body} },
		"total-lamport": func(s uint64) proc.Message { return lData{Group: "all", Origin: 1, Seq: s, T: s, Body: body} },
	}
	fills := map[string]bool{"fifo": true, "causal": true, "reliable-nack": true}
	for name, msg := range data {
		t.Run(name, func(t *testing.T) {
			p := algorithm(t, name).New(2, 3) // not the sequencer (p0)
			env := &stubEnv{self: 2, n: 3}
			p.Start(env)
			hb := holdbackOf(t, p)
			hb.limit = limit
			for s := uint64(2); s <= 100; s++ {
				p.Receive(env, 1, msg(s))
				if hb.bytes > limit {
					t.Fatalf("after message %d: %d bytes held back, over the budget of %d", s, hb.bytes, limit)
				}
			}
			var overflows []Overflow
			for _, o := range env.out {
				if o, ok := o.(Overflow); ok {
					overflows = append(overflows, o)
				}
			}
			if dropped := 99 - limit/size; len(overflows) != dropped || overflows[0].Seq != limit/size+2 || overflows[0].Held != limit {
				t.Fatalf("overflows %v: want %d, from message %d on, with %d bytes held", overflows, dropped, limit/size+2, limit)
			}
			if !fills[name] {
				return
			}
			env.out = nil
			p.Receive(env, 1, msg(1))
			delivered := 0
			for _, o := range env.out {
				if _, ok := o.(Delivered); ok {
					delivered++
				}
			}
			if delivered != limit/size+1 || hb.bytes != 0 {
				t.Errorf("the gap filled: %d delivered and %d bytes held, want %d and 0", delivered, hb.bytes, limit/size+1)
			}
		})
	}
}
