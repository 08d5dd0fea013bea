package logical

import (
	"fmt"
	"math"
	"time"
)

// Hybrid logical clocks (Kulkarni, Demirbas et al., "Logical Physical
// Clocks", 2014), beyond the textbook algorithms: a timestamp (l, c) whose
// l is the largest physical clock reading the process has heard of and c
// counts events that share that l. It respects happened-before like a
// Lamport clock, e → f ⇒ (l, c)(e) < (l, c)(f) in lexicographic order, and
// stays close to physical time: l − pt ≤ ε, where ε bounds the difference
// of the processes' physical clocks, because l is always some physical
// clock's reading in the event's causal past. Given the rules,
//
//	send or local event:       l' := l; l := max(l', pt)
//	                           c := c + 1 if l = l', else 0
//	receive of m = (l_m, c_m): l' := l; l := max(l', l_m, pt)
//	                           c := max(c, c_m) + 1  if l = l' = l_m
//	                                c + 1            if l = l' only
//	                                c_m + 1          if l = l_m only
//	                                0                otherwise
//
// where pt is the process's physical (hardware) clock, read at the event.

// HLC is a hybrid logical clock. The zero value is a clock that has seen no
// event: its first event takes the physical time, whatever it reads (a
// clock set behind the start of the run reads less than 0).
type HLC struct {
	t    HLCTime
	seen bool
}

// begin makes a clock that has seen nothing read less than any time.
func (h *HLC) begin() {
	if !h.seen {
		h.seen = true
		h.t = HLCTime{L: math.MinInt64}
	}
}

// HLCTime is a hybrid timestamp; it is also the output by which a process
// reports the timestamp of the send or receive it just performed (the
// hybrid counterpart of proc.Stamp), which the "hlc" checker judges.
type HLCTime struct {
	L time.Duration `json:"l"`
	C uint32        `json:"c"`
}

// Kind implements proc.Output.
func (HLCTime) Kind() string { return "hlc" }

func (t HLCTime) String() string { return fmt.Sprintf("(%v,%d)", t.L, t.C) }

// Less reports whether t comes before u: by l, then by c.
func (t HLCTime) Less(u HLCTime) bool { return t.L < u.L || (t.L == u.L && t.C < u.C) }

// Now returns the timestamp of the clock's last event (zero before the
// first).
func (h *HLC) Now() HLCTime {
	if !h.seen {
		return HLCTime{}
	}
	return h.t
}

// Send timestamps a send or local event at physical time pt.
func (h *HLC) Send(pt time.Duration) HLCTime {
	h.begin()
	if pt > h.t.L {
		h.t = HLCTime{L: pt}
	} else {
		h.t.C++
	}
	return h.t
}

// Recv timestamps the receipt, at physical time pt, of a message stamped m.
func (h *HLC) Recv(pt time.Duration, m HLCTime) HLCTime {
	h.begin()
	l := max(h.t.L, m.L, pt)
	switch {
	case l == h.t.L && l == m.L:
		h.t.C = max(h.t.C, m.C) + 1
	case l == h.t.L:
		h.t.C++
	case l == m.L:
		h.t.C = m.C + 1
	default:
		h.t.C = 0
	}
	h.t.L = l
	return h.t
}
