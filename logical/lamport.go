package logical

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// Lamport is a Lamport logical clock: the counter Ci of one process Pi.
//
// The zero value reads 0 and advances by 1 per event, which is the clock of
// Lamport 1978 (Tanenbaum & van Steen §6.2). NewLamport makes a clock that
// starts elsewhere or advances by a larger step, as the drifting physical
// clocks of the Lamport-correction example do.
//
// Counters are assumed never to reach 2⁶⁴; arithmetic wraps silently if they
// do.
type Lamport struct {
	c    uint64
	rate uint64 // added by Tick; 0 means 1
}

// NewLamport returns a clock that reads start and advances by rate on each
// Tick. A rate of 0 is taken as 1.
func NewLamport(start, rate uint64) Lamport {
	return Lamport{c: start, rate: rate}
}

// Now returns the clock's reading without changing it.
func (l *Lamport) Now() uint64 { return l.c }

// Rate returns the amount by which Tick advances the clock.
func (l *Lamport) Rate() uint64 { return max(l.rate, 1) }

// Advance adds d to the clock and returns the new reading.
func (l *Lamport) Advance(d uint64) uint64 {
	l.c += d
	return l.c
}

// Tick is rule 1: before each event, Ci += 1 (or the clock's rate). It
// returns the new reading, the timestamp of the event.
func (l *Lamport) Tick() uint64 { return l.Advance(l.Rate()) }

// Send is rule 2: the send is an event, so the clock ticks, and the message
// carries the new reading as its timestamp ts(m). It is the same as Tick;
// the name says what the event is.
func (l *Lamport) Send() uint64 { return l.Tick() }

// Recv is rule 3: on receipt of a message with timestamp ts, Cj = max(Cj, ts)
// and then the clock ticks (rule 1) before the message goes to the
// application. It returns the timestamp of the receive event, which is
// greater than ts.
func (l *Lamport) Recv(ts uint64) uint64 {
	l.c = max(l.c, ts)
	return l.Tick()
}

// Witness corrects a clock that runs on its own, like a physical clock, on
// receipt of a message sent at ts: if the clock does not already read more
// than ts it is moved forward to ts+1, so that the receipt is later than the
// send. Unlike Recv it does not tick; the caller advances the clock with Tick
// as its time passes. It returns the new reading.
func (l *Lamport) Witness(ts uint64) uint64 {
	l.c = max(l.c, ts+1)
	return l.c
}

// Timestamp is a Lamport timestamp in pair form: the clock reading C of the
// event and the process P at which it happened. Comparing pairs
// lexicographically, C first and P to break ties, totally orders the events
// of a run consistently with happens-before.
type Timestamp struct {
	C uint64
	P proc.ID
}

// Compare returns -1 if t orders before u, +1 if after, and 0 if they are
// the same timestamp.
func (t Timestamp) Compare(u Timestamp) int {
	switch {
	case t.C < u.C:
		return -1
	case t.C > u.C:
		return +1
	case t.P < u.P:
		return -1
	case t.P > u.P:
		return +1
	}
	return 0
}

// Less reports whether t orders before u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// String returns the pair as "(4,p2)".
func (t Timestamp) String() string {
	return "(" + strconv.FormatUint(t.C, 10) + "," + t.P.String() + ")"
}

// ErrScalarRange reports a scalar timestamp that cannot be formed or split.
var ErrScalarRange = errors.New("clock: scalar timestamp out of range")

// Scalar returns the scalar form of a Lamport timestamp, m·c + p, where m is
// larger than every process id: with m = 10, clock 42 at process 1 is 421.
// Scalars order exactly as the pairs Timestamp{c, p} do.
//
// Scalar does not check its arguments: if p is negative or not less than m,
// or m·c + p does not fit in a uint64, the result is meaningless (but Scalar
// does not panic). Use CheckedScalar when the arguments come from outside.
func Scalar(c uint64, p proc.ID, m uint64) uint64 {
	return m*c + uint64(p)
}

// CheckedScalar is Scalar with its preconditions checked: it returns an
// error wrapping ErrScalarRange if p is negative, p >= m, or m·c + p
// overflows.
func CheckedScalar(c uint64, p proc.ID, m uint64) (uint64, error) {
	if p < 0 || uint64(p) >= m {
		return 0, fmt.Errorf("%w: process %v not in [0, %d)", ErrScalarRange, p, m)
	}
	if c > (math.MaxUint64-uint64(p))/m {
		return 0, fmt.Errorf("%w: %d·%d + %d overflows", ErrScalarRange, m, c, p)
	}
	return Scalar(c, p, m), nil
}

// SplitScalar is the inverse of Scalar: it returns the clock reading and the
// process of the scalar timestamp s formed with multiplier m. It returns an
// error wrapping ErrScalarRange if m is 0 or so large that s mod m might not
// be a process id.
func SplitScalar(s, m uint64) (c uint64, p proc.ID, err error) {
	if m == 0 || m-1 > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: multiplier %d", ErrScalarRange, m)
	}
	return s / m, proc.ID(s % m), nil
}
