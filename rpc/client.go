package rpc

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The client stub (Tanenbaum & van Steen §4.2.1, the steps of a call, and
// §8.3.2, the failures; Birrell & Nelson 1984):
//
//	On Call(sem):            seq := seq+1; [extermination: log the call, sync]
//	                         send request(epoch, seq, sem, ack); set timer
//	On reply(seq):           return it; ack := the calls finished in order
//	On timer(seq):           maybe: return error
//	                         else if attempts < 5 and tokens > max/2:
//	                           after a backoff, resend the request
//	                         else return error
//	On start (a reboot):     epoch := the logged epoch + 1, logged and synced;
//	                         extermination: kill every logged call that did
//	                           not return; reincarnation: broadcast epoch
//	While a call waits:      expiration: renew its lease every lease/3
//
// The epoch — the client's incarnation number, on its stable storage —
// makes sequence numbers unique across reboots (a new incarnation does
// not remember the last number used), and is what reincarnation
// broadcasts. Without stable storage (a host that has none) the epoch is
// 1 at every start, and a reboot can reuse a number: at-most-once then
// holds only while the client does not crash.
//
// Cost: one request and one reply per call without failures; up to five
// of each with them; extermination adds a synced log write per call,
// expiration a renewal per lease/3 a call waits.

// Client is the client stub.
type Client struct {
	cfg    Config
	epoch  uint64
	seq    uint64           // the last sequence number used in this epoch
	ack    uint64           // every call numbered up to ack is finished
	ended  map[uint64]bool  // calls above ack that are finished
	calls  map[uint64]*call // the calls in progress
	tokens float64          // the retry throttle's bucket

	// extermination, after a reboot: the logged calls of earlier
	// incarnations that the server has not yet confirmed killed.
	kills []Kill
	// reincarnation, after a reboot: the new epoch is not yet
	// acknowledged by the server.
	announcing bool

	// claim is a broken variant, for the tests: a call whose attempts
	// are exhausted returns a result it never got.
	claim bool
}

type call struct {
	seq      uint64
	sem      Semantics
	work     time.Duration
	attempts int
	timer    proc.TimerID
	renew    proc.TimerID
	// A host's call (Call.Ref, Proc, Args, Timeout).
	ref     uint64
	proc    string
	args    []byte
	timeout time.Duration
	key     string
}

// Timer tags of the client.
type (
	attemptTimer struct{ Seq uint64 }
	backoffTimer struct{ Seq uint64 }
	renewTimer   struct{ Seq uint64 }
	resendTimer  struct{} // the kills or the epoch announcement, again
)

// NewClient returns a client stub; cfg's zero fields take their defaults.
func NewClient(cfg Config) *Client {
	cfg = cfg.withDefaults()
	return &Client{cfg: cfg, ended: map[uint64]bool{}, calls: map[uint64]*call{}, tokens: cfg.Retry.MaxTokens}
}

// The client's log records: "E epoch" (an incarnation began), "C epoch
// seq" (extermination: a call is about to be sent), "R epoch seq" (it
// returned).

// Start begins an incarnation: recover the epoch and the logged calls,
// log the new epoch, and deal with the orphans the last one may have left.
func (c *Client) Start(env proc.Env) {
	st := env.Storage()
	var open []Kill // logged calls that did not return
	if st != nil {
		for _, rec := range st.Recovered() {
			var kind byte
			var e, s uint64
			if n, _ := fmt.Sscanf(string(rec), "%c %d %d", &kind, &e, &s); n < 2 {
				continue // a record of no known form: not ours
			}
			switch kind {
			case 'E':
				c.epoch = max(c.epoch, e)
			case 'C':
				open = append(open, Kill{Old: e, Seq: s})
			case 'R':
				open = slices.DeleteFunc(open, func(k Kill) bool { return k.Old == e && k.Seq == s })
			}
		}
	}
	c.epoch++
	if c.cfg.Orphans == Extermination {
		for _, k := range open {
			k.Epoch = c.epoch
			c.kills = append(c.kills, k)
		}
	}
	c.persist(env)
	env.Output(Incarnation{Epoch: c.epoch})
	if c.epoch == 1 {
		return // a first start: there is nothing to clean up
	}
	switch c.cfg.Orphans {
	case Extermination:
		c.sendKills(env)
	case Reincarnation:
		c.announcing = true
		c.announce(env)
	}
}

// persist rewrites the log with what it must keep: the epoch, and the
// calls to exterminate (logged ones in progress, and old ones not yet
// confirmed killed).
func (c *Client) persist(env proc.Env) {
	st := env.Storage()
	if st == nil {
		return
	}
	recs := [][]byte{fmt.Appendf(nil, "E %d", c.epoch)}
	for _, k := range c.kills {
		recs = append(recs, fmt.Appendf(nil, "C %d %d", k.Old, k.Seq))
	}
	if c.cfg.Orphans == Extermination {
		for _, s := range c.inProgress() {
			recs = append(recs, fmt.Appendf(nil, "C %d %d", c.epoch, s))
		}
	}
	st.Replace(recs)
	st.Sync()
}

func (c *Client) inProgress() []uint64 {
	seqs := make([]uint64, 0, len(c.calls))
	for s := range c.calls {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	return seqs
}

func (c *Client) sendKills(env proc.Env) {
	for _, k := range c.kills {
		env.Send(c.cfg.Server, k)
	}
	if len(c.kills) > 0 {
		env.SetTimer(c.cfg.Timeout, resendTimer{})
	}
}

func (c *Client) announce(env proc.Env) {
	env.Send(c.cfg.Server, NewEpoch{Epoch: c.epoch})
	env.SetTimer(c.cfg.Timeout, resendTimer{})
}

// Input begins a call, or abandons one (Cancel).
func (c *Client) Input(env proc.Env, in proc.Input) {
	if cn, ok := in.(Cancel); ok {
		c.cancel(env, cn.Ref)
		return
	}
	cl, ok := in.(Call)
	if !ok {
		return
	}
	sem := cl.Sem
	if sem == 0 {
		sem = c.cfg.Semantics
	}
	c.seq++
	k := &call{seq: c.seq, sem: sem, work: cl.Work, ref: cl.Ref, proc: cl.Proc, args: cl.Args, timeout: cl.Timeout, key: cl.Key}
	c.calls[k.seq] = k
	env.Output(Called{CallID: c.id(env, k.seq), Sem: sem, Ref: k.ref})
	if c.cfg.Orphans == Extermination {
		if st := env.Storage(); st != nil {
			st.Append(fmt.Appendf(nil, "C %d %d", c.epoch, k.seq))
			st.Sync()
		}
	}
	if c.cfg.Orphans == Expiration {
		k.renew = env.SetTimer(c.cfg.Lease/3, renewTimer{k.seq})
	}
	c.attempt(env, k)
}

func (c *Client) id(env proc.Env, seq uint64) CallID {
	return CallID{Client: env.Self(), Epoch: c.epoch, Seq: seq}
}

// attempt sends the request once more and sets its timer.
func (c *Client) attempt(env proc.Env, k *call) {
	k.attempts++
	env.Send(c.cfg.Server, Request{Epoch: c.epoch, Seq: k.seq, Sem: k.sem, Ack: c.ack, Attempt: k.attempts, Work: k.work,
		Proc: k.proc, Args: k.args, Key: k.key})
	d := c.cfg.Timeout + k.work
	if k.timeout > 0 {
		d = k.timeout
	}
	k.timer = env.SetTimer(d, attemptTimer{k.seq})
}

// cancel abandons the call whose reference is ref: it returns
// ErrCanceled, and the server kills it if it still runs there (a Kill of
// this epoch's call; the server acknowledges it, and an acknowledgement of
// a kill the client does not wait for changes nothing).
func (c *Client) cancel(env proc.Env, ref uint64) {
	for _, s := range c.inProgress() {
		if k := c.calls[s]; k.ref == ref {
			env.Send(c.cfg.Server, Kill{Epoch: c.epoch, Old: c.epoch, Seq: k.seq})
			c.end(env, k, ErrCanceled, Reply{})
			return
		}
	}
}

// Receive takes a reply, or the server's confirmation of a kill or of the
// new epoch.
func (c *Client) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Reply:
		k := c.calls[m.Seq]
		if m.Epoch != c.epoch || k == nil {
			return // a duplicate, or the reply of a call already ended
		}
		if m.Err == "" {
			c.tokens = min(c.cfg.Retry.MaxTokens, c.tokens+c.cfg.Retry.TokenRatio)
		}
		c.end(env, k, m.Err, m)
	case KillAck:
		before := len(c.kills)
		c.kills = slices.DeleteFunc(c.kills, func(k Kill) bool { return k.Old == m.Old && k.Seq == m.Seq })
		if len(c.kills) < before {
			c.persist(env)
		}
	case EpochAck:
		if m.Epoch == c.epoch {
			c.announcing = false
		}
	}
}

// Timeout: an attempt's timer (retry or give up), a backoff's end
// (resend), a renewal, or the resending of kills or of the epoch.
func (c *Client) Timeout(env proc.Env, tag any) {
	switch t := tag.(type) {
	case attemptTimer:
		k := c.calls[t.Seq]
		if k == nil {
			return
		}
		if k.sem == Maybe {
			c.end(env, k, ErrTimeout, Reply{})
			return
		}
		c.tokens = max(0, c.tokens-1)
		if k.attempts >= c.cfg.Retry.MaxAttempts {
			if c.claim {
				c.end(env, k, "", Reply{})
				return
			}
			c.end(env, k, ErrTimeout, Reply{})
			return
		}
		if c.cfg.Retry.MaxTokens > 0 && c.tokens <= c.cfg.Retry.MaxTokens/2 {
			c.end(env, k, ErrThrottled, Reply{})
			return
		}
		k.timer = env.SetTimer(c.backoff(env, k.attempts), backoffTimer{k.seq})
	case backoffTimer:
		if k := c.calls[t.Seq]; k != nil {
			c.attempt(env, k)
		}
	case renewTimer:
		if k := c.calls[t.Seq]; k != nil {
			env.Send(c.cfg.Server, Renew{Epoch: c.epoch, Seq: k.seq})
			k.renew = env.SetTimer(c.cfg.Lease/3, renewTimer{k.seq})
		}
	case resendTimer:
		if c.announcing {
			c.announce(env)
		}
		if len(c.kills) > 0 {
			c.sendKills(env)
		}
	}
}

// backoff is the wait before retry n (from 1): uniform in [0, min(initial
// · multiplierⁿ⁻¹, max)).
func (c *Client) backoff(env proc.Env, n int) time.Duration {
	r := c.cfg.Retry
	b := math.Min(float64(r.InitialBackoff)*math.Pow(r.Multiplier, float64(n-1)), float64(r.MaxBackoff))
	if b < 1 {
		return 0
	}
	return time.Duration(env.Rand().Int64N(int64(b)))
}

// end returns call k with err ("" for success, with the reply r), and
// moves the acknowledgement past every call finished in order.
func (c *Client) end(env proc.Env, k *call, err string, r Reply) {
	env.CancelTimer(k.timer)
	env.CancelTimer(k.renew)
	delete(c.calls, k.seq)
	env.Output(Returned{CallID: c.id(env, k.seq), Sem: k.sem, OK: err == "", Err: err, Attempts: k.attempts,
		Ref: k.ref, Data: r.Data, Fail: r.Fail})
	c.ended[k.seq] = true
	for c.ended[c.ack+1] {
		delete(c.ended, c.ack+1)
		c.ack++
	}
	if c.cfg.Orphans == Extermination {
		if st := env.Storage(); st != nil {
			st.Append(fmt.Appendf(nil, "R %d %d", c.epoch, k.seq))
			if st.Size() > c.cfg.Compact {
				c.persist(env)
			}
		}
	}
}
