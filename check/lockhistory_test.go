package check_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/check"
)

// at builds a time ms milliseconds into a history.
func at(ms float64) time.Time {
	return time.Unix(1_000_000, 0).Add(time.Duration(ms * float64(time.Millisecond)))
}

func acquired(s uint64, call, ret float64, token uint64) check.LockOp {
	return check.LockOp{Kind: check.LockAcquire, Client: int(s % 8), Session: s, Call: at(call), Return: at(ret), Known: true, OK: true, Token: token}
}

func released(s uint64, call, ret float64, ok bool) check.LockOp {
	return check.LockOp{Kind: check.LockRelease, Client: int(s % 8), Session: s, Call: at(call), Return: at(ret), Known: true, OK: ok}
}

func TestLinearizableLock(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []check.LockOp
		want check.Status
		why  string // in a violation's detail
	}{
		{"handoff to a waiter", []check.LockOp{
			acquired(1, 0, 1, 5), released(1, 2, 3, true),
			acquired(2, 1.5, 4, 7), released(2, 5, 6, true),
		}, check.OK, ""},
		{"two holders at once", []check.LockOp{
			acquired(1, 0, 1, 5), acquired(2, 2, 3, 6), released(1, 4, 5, true),
		}, check.Violated, "acquire(s2) → token 6"},
		{"a token that goes back", []check.LockOp{
			acquired(1, 0, 1, 5), released(1, 2, 3, true), acquired(2, 4, 5, 4),
		}, check.Violated, "token 4"},
		{"a release refused to the holder", []check.LockOp{
			acquired(1, 0, 1, 5), released(1, 2, 3, false),
		}, check.Violated, "release(s1) → refused"},
		{"an acquire of unknown outcome, then its session ends", []check.LockOp{
			{Kind: check.LockAcquire, Client: 1, Session: 1, Call: at(0)},
			{Kind: check.LockEnd, Client: 1, Session: 1, Call: at(1), Return: at(2), Known: true, OK: true},
			acquired(2, 3, 4, 9), released(2, 5, 6, true), acquired(3, 7, 8, 10),
		}, check.OK, ""},
		{"a grant after its session ended", []check.LockOp{
			{Kind: check.LockEnd, Client: 1, Session: 1, Call: at(0), Return: at(1), Known: true, OK: true},
			acquired(1, 2, 3, 9),
		}, check.Violated, "acquire(s1) → token 9"},
		{"a session that ended holding the lock frees it", []check.LockOp{
			acquired(1, 0, 1, 4),
			{Kind: check.LockEnd, Client: 1, Session: 1, Call: at(2), Return: at(3), Known: true, OK: true},
			acquired(2, 4, 5, 6),
		}, check.OK, ""},
		{"an acquire of unknown outcome that must have failed", []check.LockOp{
			acquired(2, 0, 1, 3),
			{Kind: check.LockAcquire, Client: 1, Session: 1, Call: at(2)},
			released(2, 3, 4, true), acquired(3, 5, 6, 8),
		}, check.OK, ""},
	} {
		got, detail := check.LinearizableLock(c.ops, 10*time.Second)
		if got != c.want || !strings.Contains(detail, c.why) {
			t.Errorf("%s: %v (%s), want %v mentioning %q", c.name, got, detail, c.want, c.why)
		}
	}
}

// lockHistory is a legal history of n handoffs among four clients, each
// calling for the lock while the one before holds it, with some
// acquires of unknown outcome (a client that timed out and ended its
// session).
func lockHistory(n int) []check.LockOp {
	var ops []check.LockOp
	session := [4]uint64{1, 2, 3, 4}
	next := uint64(5)
	for i := range n {
		c, t := i%4, float64(i)
		op := acquired(session[c], t-0.5, t+0.1, uint64(100+i))
		rel := released(session[c], t+0.3, t+0.6, true)
		op.Client, rel.Client = c, c
		ops = append(ops, op, rel)
		if i%50 == 49 { // the next client gave up once: its acquire's outcome unknown, its session ended
			o := (c + 1) % 4
			ops = append(ops, check.LockOp{Kind: check.LockAcquire, Client: o, Session: session[o], Call: at(t - 0.4)},
				check.LockOp{Kind: check.LockEnd, Client: o, Session: session[o], Call: at(t - 0.3), Return: at(t - 0.2), Known: true, OK: true})
			session[o] = next
			next++
		}
	}
	return ops
}

// TestLinearizableLockScales: a legal history of 5,000 handoffs (a
// minute of the nemesis; 20,000 take 3.4 s without the race detector) is
// judged linearizable, and the same history with one token that goes back
// is not.
func TestLinearizableLockScales(t *testing.T) {
	ops := lockHistory(5000)
	if got, detail := check.LinearizableLock(ops, time.Minute); got != check.OK {
		t.Fatalf("a legal history: %v (%s)", got, detail)
	}
	for i := len(ops) / 2; ; i++ {
		if ops[i].Kind == check.LockAcquire && ops[i].Known {
			ops[i].Token = 100 // below the tokens before it
			break
		}
	}
	if got, _ := check.LinearizableLock(ops, time.Minute); got != check.Violated {
		t.Fatalf("a token that went back: %v", got)
	}
}
