package check

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// A lock's client history, checked for linearizability against a
// sequential lock with fencing tokens — how Jepsen checks etcd's and
// ZooKeeper's locks. A live test records, for one lock, every operation
// its clients made through the lock service: when it was called, when it
// returned, what it returned. The history is linearizable if the
// operations can be put in one order, each at an instant between its call
// and its return, in which a single lock would have answered as the
// service did:
//
//	acquire(s) → t   the lock was free; session s holds it now with token
//	                 t, above every token before
//	release(s)       s held it; it is free now (an error: s did not hold it)
//	end(s)           session s ended (closed, or expired): if it held the
//	                 lock, the lock is free; nothing of s takes effect
//	                 after
//
// An operation whose outcome the client never learned (a timeout, a
// connection cut) may or may not have taken effect; the model allows
// both, and leaves it open (as Jepsen does with :info operations) until
// its session's end returned: the service applies nothing of a session
// after its end, so whatever effect the operation had came before. Each client
// runs one session at a time, in the order of their ids (a session's id
// is the log index that opened it), so the model keeps, per client, the
// last session that ended.

// LockOpKind says what a LockOp did.
type LockOpKind uint8

const (
	LockAcquire LockOpKind = iota + 1
	LockRelease
	LockEnd
)

func (k LockOpKind) String() string {
	return [...]string{"", "acquire", "release", "end"}[k]
}

// LockOp is one operation of a lock's history.
type LockOp struct {
	Kind    LockOpKind
	Client  int // 0 to MaxLockClients-1
	Session uint64
	Call    time.Time
	Return  time.Time // zero: open (the outcome is unknown)
	// Known: the client learned the outcome: OK says whether the
	// operation succeeded (an acquire: granted; a release: the session
	// held the lock), and Token is an acquire's fencing token.
	Known bool
	OK    bool
	Token uint64
}

func (o LockOp) String() string {
	switch {
	case !o.Known:
		return fmt.Sprintf("%s(s%d) → ?", o.Kind, o.Session)
	case o.Kind == LockAcquire && o.OK:
		return fmt.Sprintf("acquire(s%d) → token %d", o.Session, o.Token)
	case o.OK:
		return fmt.Sprintf("%s(s%d) → ok", o.Kind, o.Session)
	}
	return fmt.Sprintf("%s(s%d) → refused", o.Kind, o.Session)
}

// MaxLockClients bounds the clients of a history LinearizableLock checks.
const MaxLockClients = 8

// lockState is the sequential lock: its holder's session (0: free), the
// highest token known to be handed out (an acquire whose token nobody
// learned may have handed out a higher one: the next must exceed last
// only), and each client's last ended session.
type lockState struct {
	holder uint64
	last   uint64
	ended  [MaxLockClients]uint64
}

var lockModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{lockState{}} },
	Step: func(state, input, _ any) []any {
		s, op := state.(lockState), input.(LockOp)
		if op.Session <= s.ended[op.Client] { // its session is over
			if op.Known && op.OK && op.Kind != LockEnd {
				return nil
			}
			return []any{s}
		}
		free := s
		free.holder = 0
		switch op.Kind {
		case LockAcquire:
			switch {
			case !op.Known: // no effect, or a grant of some token
				if s.holder != 0 {
					return []any{s}
				}
				granted := s
				granted.holder = op.Session
				return []any{s, granted}
			case !op.OK: // refused: the lock service said no
				return []any{s}
			case s.holder == 0 && op.Token > s.last:
				s.holder, s.last = op.Session, op.Token
				return []any{s}
			}
			return nil
		case LockRelease:
			held := s.holder == op.Session
			switch {
			case !op.Known && held:
				return []any{s, free}
			case !op.Known:
				return []any{s}
			case op.OK && held:
				return []any{free}
			case !op.OK && !held:
				return []any{s}
			}
			return nil
		case LockEnd:
			if s.holder == op.Session {
				s = free
			}
			s.ended[op.Client] = op.Session
			return []any{s}
		}
		return nil
	},
	Equal:             func(a, b any) bool { return a.(lockState) == b.(lockState) },
	DescribeOperation: func(input, _ any) string { return input.(LockOp).String() },
	DescribeState: func(state any) string {
		s := state.(lockState)
		if s.holder == 0 {
			return fmt.Sprintf("free (last token %d)", s.last)
		}
		return fmt.Sprintf("held by s%d (last token %d)", s.holder, s.last)
	},
}

// LinearizableLock checks one lock's history; it reports whether it is
// linearizable (Unknown if the search took longer than timeout) and, if
// not, the operations the longest order found could not go past.
func LinearizableLock(ops []LockOp, timeout time.Duration) (Status, string) {
	if len(ops) == 0 {
		return OK, "no operations"
	}
	for _, o := range ops {
		if o.Client < 0 || o.Client >= MaxLockClients {
			return Unknown, fmt.Sprintf("client %d: the model follows clients 0 to %d", o.Client, MaxLockClients-1)
		}
	}
	var origin time.Time
	for _, o := range ops {
		if origin.IsZero() || o.Call.Before(origin) {
			origin = o.Call
		}
	}
	ended := map[uint64]time.Time{} // session → when its end returned
	for _, o := range ops {
		if o.Kind == LockEnd && !o.Return.IsZero() {
			ended[o.Session] = o.Return
		}
	}
	hist := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		ret := int64(1<<63 - 1)
		switch end, ok := ended[o.Session]; {
		case !o.Return.IsZero():
			ret = int64(o.Return.Sub(origin))
		case ok:
			ret = int64(end.Sub(origin))
		}
		hist[i] = porcupine.Operation{ClientId: o.Client, Input: o, Call: int64(o.Call.Sub(origin)), Return: ret}
	}
	res, info := porcupine.CheckOperationsVerbose(lockModel.ToModel(), hist, timeout)
	switch res {
	case porcupine.Ok:
		return OK, fmt.Sprintf("%d operations", len(ops))
	case porcupine.Unknown:
		return Unknown, fmt.Sprintf("the search took longer than %v", timeout)
	}
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	in := map[int]bool{}
	for _, i := range longest {
		in[i] = true
	}
	stuck := -1
	for i, o := range hist {
		if !in[i] && (stuck < 0 || o.Return < hist[stuck].Return) {
			stuck = i
		}
	}
	var last string
	if len(longest) > 0 {
		last = fmt.Sprintf(" (ending %v)", ops[longest[len(longest)-1]])
	}
	if stuck < 0 {
		return Violated, "not linearizable"
	}
	return Violated, fmt.Sprintf("the longest order found explains %d of %d operations%s; %v, called at +%v, cannot come next",
		len(longest), len(ops), last, ops[stuck], ops[stuck].Call.Sub(origin))
}
