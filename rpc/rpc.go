package rpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Semantics is what a call promises about how often its procedure runs.
type Semantics uint8

// The semantics. The zero value is the stub's default (Config.Semantics).
const (
	Maybe Semantics = iota + 1
	AtLeastOnce
	AtMostOnce
)

var semNames = [...]string{"", "maybe", "at-least-once", "at-most-once"}

// String returns "maybe", "at-least-once" or "at-most-once".
func (s Semantics) String() string {
	if int(s) < len(semNames) && s != 0 {
		return semNames[s]
	}
	return fmt.Sprintf("semantics(%d)", uint8(s))
}

// ParseSemantics is the inverse of String.
func ParseSemantics(name string) (Semantics, error) {
	for i, n := range semNames {
		if i > 0 && n == name {
			return Semantics(i), nil
		}
	}
	return 0, fmt.Errorf("unknown semantics %q (known: maybe, at-least-once, at-most-once)", name)
}

// MarshalText encodes the semantics by name.
func (s Semantics) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a name.
func (s *Semantics) UnmarshalText(b []byte) error {
	v, err := ParseSemantics(string(b))
	*s = v
	return err
}

// short is the semantics in a message label.
func (s Semantics) short() string {
	switch s {
	case Maybe:
		return "maybe"
	case AtLeastOnce:
		return "alo"
	case AtMostOnce:
		return "amo"
	}
	return s.String()
}

// Orphans is how the stubs deal with the orphans a client crash leaves.
type Orphans uint8

// The remedies. None leaves orphans to run to their end.
const (
	None Orphans = iota
	Extermination
	Reincarnation
	Expiration
)

var orphanNames = [...]string{"none", "extermination", "reincarnation", "expiration"}

func (o Orphans) String() string {
	if int(o) < len(orphanNames) {
		return orphanNames[o]
	}
	return fmt.Sprintf("orphans(%d)", uint8(o))
}

// Retry bounds a call's attempts like gRPC's retry policy (gRFC A6).
// Zero fields take the defaults shown.
type Retry struct {
	// MaxAttempts is the attempts per call, the first included: 0 means 5;
	// like gRPC, more than 5 is treated as 5.
	MaxAttempts int
	// InitialBackoff, MaxBackoff, Multiplier: the n-th retry waits a time
	// drawn uniformly from [0, min(InitialBackoff·Multiplierⁿ⁻¹,
	// MaxBackoff)) after the attempt's timer fired. 0: 1ms, 20ms, 2.
	InitialBackoff, MaxBackoff time.Duration
	Multiplier                 float64
	// MaxTokens and TokenRatio are retryThrottling's: a client's bucket
	// starts full with MaxTokens; an attempt that times out takes one
	// token, a reply gives TokenRatio back (up to MaxTokens); a call is
	// retried only while more than MaxTokens/2 are left. 0: 10 and 0.1.
	// MaxTokens < 0 turns throttling off.
	MaxTokens  float64
	TokenRatio float64
}

// Config is the stubs' configuration; zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Server is the server's ID; every other process is a client.
	Server proc.ID
	// Semantics of a Call that names none: 0 means AtMostOnce.
	Semantics Semantics
	// Work is how long the procedure runs at the server, in simulated
	// time: long enough for orphans to exist. 0 means 5ms.
	Work time.Duration
	// Timeout is an attempt's timer at the client: it should exceed a
	// round trip plus Work, or at-least-once runs calls again that are
	// still running. 0 means 20ms.
	Timeout time.Duration
	Retry   Retry
	// Orphans is the remedy against orphans.
	Orphans Orphans
	// Lease is a call's lease under Expiration: the server kills a call
	// whose lease was not renewed for Lease; the client renews every
	// Lease/3. 0 means 15ms.
	Lease time.Duration
	// Compact is the size in bytes of its stable-storage log beyond which
	// a stub rewrites it with only what it still needs. 0 means 64 KiB.
	Compact int
	// Keys and KeyBytes bound the calls named by a key (Request.Key)
	// that the server remembers once they ended, and the bytes of their
	// results: past either, the oldest ended are forgotten first (a key
	// that comes back after that runs again). 0 means 4096 and 64 MiB.
	Keys     int
	KeyBytes int
	// GroupCommit: the server's syncs of the requests and results that
	// arrive together are one sync, made once the events already
	// waiting are handled (a zero-delay timer); the replies and
	// executions that depend on them wait for it. A live host with a
	// real disk sets it (one fsync for many calls); the simulator does
	// not.
	GroupCommit bool
	// Host: the host runs the procedures. Instead of letting a timer of
	// Work stand for the procedure, the server stub outputs Execute and
	// waits for the host's Finished input, whose result it stores in the
	// duplicate table (at-most-once, maybe) and sends back. A live host
	// sets it; the simulator does not.
	Host bool
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Semantics: AtMostOnce,
		Work:      5 * time.Millisecond,
		Timeout:   20 * time.Millisecond,
		Retry: Retry{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond,
			Multiplier: 2, MaxTokens: 10, TokenRatio: 0.1},
		Lease:    15 * time.Millisecond,
		Compact:  64 << 10,
		Keys:     4096,
		KeyBytes: 64 << 20,
	}
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Semantics == 0 {
		c.Semantics = d.Semantics
	}
	if c.Work == 0 {
		c.Work = d.Work
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.Retry.MaxAttempts == 0 || c.Retry.MaxAttempts > 5 {
		c.Retry.MaxAttempts = 5
	}
	if c.Retry.InitialBackoff == 0 {
		c.Retry.InitialBackoff = d.Retry.InitialBackoff
	}
	if c.Retry.MaxBackoff == 0 {
		c.Retry.MaxBackoff = d.Retry.MaxBackoff
	}
	if c.Retry.Multiplier == 0 {
		c.Retry.Multiplier = d.Retry.Multiplier
	}
	if c.Retry.MaxTokens == 0 {
		c.Retry.MaxTokens = d.Retry.MaxTokens
	}
	if c.Retry.TokenRatio == 0 {
		c.Retry.TokenRatio = d.Retry.TokenRatio
	}
	if c.Lease == 0 {
		c.Lease = d.Lease
	}
	if c.Compact == 0 {
		c.Compact = d.Compact
	}
	if c.Keys == 0 {
		c.Keys = d.Keys
	}
	if c.KeyBytes == 0 {
		c.KeyBytes = d.KeyBytes
	}
	return c
}

// Validate reports the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Server < 0:
		return fmt.Errorf("server = %d: must be a process ID", c.Server)
	case c.Semantics > AtMostOnce:
		return fmt.Errorf("semantics = %d: unknown", c.Semantics)
	case c.Work < 0 || c.Timeout < 0 || c.Lease < 0:
		return errors.New("work, timeout and lease must not be negative")
	case c.Keys < 0 || c.KeyBytes < 0:
		return errors.New("keys and key bytes must not be negative")
	case c.Orphans > Expiration:
		return fmt.Errorf("orphans = %d: unknown remedy", c.Orphans)
	case c.Retry.MaxAttempts < 0:
		return fmt.Errorf("retry.max_attempts = %d: must not be negative", c.Retry.MaxAttempts)
	case c.Retry.Multiplier < 0 && c.Retry.Multiplier != 0 || c.Retry.TokenRatio < 0:
		return errors.New("retry multiplier and token ratio must not be negative")
	}
	return nil
}

// New builds process id of an n-process run: the server stub at
// c.Server, a client stub elsewhere. It panics on a Config that Validate
// rejects (the registry's configurations are fixed and valid).
func New(c Config) func(id proc.ID, n int) proc.Process {
	if err := c.Validate(); err != nil {
		panic("rpc: " + err.Error())
	}
	c = c.withDefaults()
	return func(id proc.ID, _ int) proc.Process {
		if id == c.Server {
			return NewServer(c)
		}
		return NewClient(c)
	}
}

// CallID names a call: its client, the client's incarnation (epoch) and
// the call's sequence number in it.
type CallID struct {
	Client proc.ID `json:"client"`
	Epoch  uint64  `json:"epoch"`
	Seq    uint64  `json:"seq"`
}

// String renders the call as "p1.e2#7".
func (c CallID) String() string { return fmt.Sprintf("%s.e%d#%d", c.Client, c.Epoch, c.Seq) }

// MaxKey bounds a call's key (Request.Key), in bytes.
const MaxKey = 128

// ValidKey reports whether k is a call's key: 1 to MaxKey bytes of A-Z
// a-z 0-9 . _ - (so that it is one word of the server's log).
func ValidKey(k string) bool {
	if k == "" || len(k) > MaxKey {
		return false
	}
	for _, r := range []byte(k) {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// The errors a call may return (Returned.Err).
const (
	// ErrTimeout: no reply within the attempts (maybe: within its one
	// attempt). The procedure may have run, or not.
	ErrTimeout = "timeout"
	// ErrThrottled: the token bucket stopped the retries.
	ErrThrottled = "throttled"
	// ErrCrashed: the server crashed while the call was running; under
	// at-most-once it will not run it again, and cannot say whether it
	// finished.
	ErrCrashed = "crashed"
	// ErrKilled: the server killed the call (its lease lapsed, or it was
	// taken for an orphan).
	ErrKilled = "killed"
	// ErrCanceled: the caller abandoned the call (Cancel). The procedure
	// may have run, or not.
	ErrCanceled = "canceled"
)

// ---- inputs

// Call is the input that makes a client call the procedure, with
// semantics Sem (0: the stub's default). Work, the procedure's argument,
// is how long it runs at the server (0: Config.Work); the attempt's timer
// is Config.Timeout plus Work.
//
// A host that runs real procedures (Config.Host) also names the
// procedure and its arguments (Proc, Args), a reference of its own to
// match the call's outputs with its caller (Ref, echoed by Called and
// Returned), and the attempt's timer (Timeout, 0: Config.Timeout plus
// Work).
type Call struct {
	Sem     Semantics     `json:"sem,omitempty"`
	Work    time.Duration `json:"work,omitempty"`
	Ref     uint64        `json:"ref,omitempty"`
	Proc    string        `json:"proc,omitempty"`
	Args    []byte        `json:"args,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// Key, if set, is the call's identity at the server instead of the
	// client's number for it (see Request.Key).
	Key string `json:"key,omitempty"`
}

func (Call) Kind() string { return "call" }

// Cancel is the input that abandons call Ref (its caller's deadline
// passed, or it gave up): the call returns ErrCanceled at once, and the
// server is asked to kill it if it still runs (a Kill of the current
// epoch), as gRPC cancels a stream. It may have run, or not.
type Cancel struct {
	Ref uint64 `json:"ref"`
}

func (Cancel) Kind() string { return "cancel" }

// Finished is the input by which a host that runs the procedures
// (Config.Host) tells the server stub that execution Exec (Execute.Exec)
// returned Data, or failed with Fail (the procedure's own error, which
// the caller gets as a result, not as a failure of the call).
type Finished struct {
	Exec uint64 `json:"exec"`
	Data []byte `json:"data,omitempty"`
	Fail string `json:"fail,omitempty"`
}

func (Finished) Kind() string { return "finished" }

// ---- messages

// Request is a call's request, attempt Attempt (from 1). Ack: all of the
// client's calls of this epoch numbered up to Ack are finished, so the
// server may forget them.
type Request struct {
	Epoch   uint64    `json:"epoch"`
	Seq     uint64    `json:"seq"`
	Sem     Semantics `json:"sem"`
	Ack     uint64    `json:"ack"`
	Attempt int       `json:"attempt"`
	// Work is the procedure's argument: how long it runs (0: the
	// server's Config.Work).
	Work time.Duration `json:"work,omitempty"`
	// Proc and Args: the procedure and its packed arguments, for a
	// server whose host runs them (Config.Host).
	Proc string `json:"proc,omitempty"`
	Args []byte `json:"args,omitempty"`
	// Key names the call whoever sends it (ValidKey): the server runs a
	// key at most once, whatever client, epoch and number carry it, and
	// answers every request naming it with that one run's result — so
	// a caller outside the cluster may resend its call through another
	// client, or after a client's restart.
	Key string `json:"key,omitempty"`
}

func (Request) Kind() string { return "request" }
func (m Request) String() string {
	return fmt.Sprintf("req(e%d#%d,%s,try%d)", m.Epoch, m.Seq, m.Sem.short(), m.Attempt)
}

// Reply answers a request: the procedure's Result, or Err. From a server
// whose host runs the procedures, Data is what it returned, or Fail its
// error.
type Reply struct {
	Epoch  uint64 `json:"epoch"`
	Seq    uint64 `json:"seq"`
	Err    string `json:"err,omitempty"`
	Result uint64 `json:"result"`
	Data   []byte `json:"data,omitempty"`
	Fail   string `json:"fail,omitempty"`
}

func (Reply) Kind() string { return "reply" }
func (m Reply) String() string {
	if m.Err != "" {
		return fmt.Sprintf("reply(e%d#%d,%s)", m.Epoch, m.Seq, m.Err)
	}
	return fmt.Sprintf("reply(e%d#%d)", m.Epoch, m.Seq)
}

// Renew extends the lease of call Epoch#Seq (expiration).
type Renew struct {
	Epoch uint64 `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

func (Renew) Kind() string     { return "renew" }
func (m Renew) String() string { return fmt.Sprintf("renew(e%d#%d)", m.Epoch, m.Seq) }

// Kill asks the server to kill the client's call Old#Seq, logged by an
// incarnation that crashed (extermination). Epoch is the client's
// current incarnation.
type Kill struct {
	Epoch uint64 `json:"epoch"`
	Old   uint64 `json:"old"`
	Seq   uint64 `json:"seq"`
}

func (Kill) Kind() string     { return "kill" }
func (m Kill) String() string { return fmt.Sprintf("kill(e%d#%d)", m.Old, m.Seq) }

// KillAck answers a Kill: the call is not running at the server.
type KillAck struct {
	Old uint64 `json:"old"`
	Seq uint64 `json:"seq"`
}

func (KillAck) Kind() string     { return "kill-ack" }
func (m KillAck) String() string { return fmt.Sprintf("kill-ack(e%d#%d)", m.Old, m.Seq) }

// NewEpoch announces the client's new incarnation (reincarnation): the
// server kills the client's calls of older epochs.
type NewEpoch struct {
	Epoch uint64 `json:"epoch"`
}

func (NewEpoch) Kind() string     { return "epoch" }
func (m NewEpoch) String() string { return fmt.Sprintf("epoch(e%d)", m.Epoch) }

// EpochAck answers a NewEpoch.
type EpochAck struct {
	Epoch uint64 `json:"epoch"`
}

func (EpochAck) Kind() string     { return "epoch-ack" }
func (m EpochAck) String() string { return fmt.Sprintf("epoch-ack(e%d)", m.Epoch) }

// Messages lists a value of every message type, in wire-tag order
// (append-only).
var Messages = []proc.Message{Request{}, Reply{}, Renew{}, Kill{}, KillAck{}, NewEpoch{}, EpochAck{}}

// ---- outputs

// Called is output when a client begins a call; Ref is the Call's.
type Called struct {
	CallID
	Sem Semantics `json:"sem"`
	Ref uint64    `json:"ref,omitempty"`
}

func (Called) Kind() string     { return "call" }
func (o Called) String() string { return "call " + o.CallID.String() + " " + o.Sem.String() }

// Returned is output when a call ends at the client: OK with the
// procedure's result (Data, or its error Fail, from a host that runs the
// procedures), or with Err. Ref is the Call's.
type Returned struct {
	CallID
	Sem      Semantics `json:"sem"`
	OK       bool      `json:"ok"`
	Err      string    `json:"err,omitempty"`
	Attempts int       `json:"attempts"`
	Ref      uint64    `json:"ref,omitempty"`
	Data     []byte    `json:"data,omitempty"`
	Fail     string    `json:"fail,omitempty"`
}

func (Returned) Kind() string { return "return" }
func (o Returned) String() string {
	if o.OK {
		return "return " + o.CallID.String()
	}
	return "return " + o.CallID.String() + " " + o.Err
}

// Incarnation is output when a client starts: its epoch.
type Incarnation struct {
	Epoch uint64 `json:"epoch"`
}

func (Incarnation) Kind() string     { return "incarnation" }
func (o Incarnation) String() string { return fmt.Sprintf("incarnation e%d", o.Epoch) }

// Executed is output when the server begins to run a call's procedure.
type Executed struct {
	CallID
	Sem Semantics `json:"sem"`
}

func (Executed) Kind() string     { return "exec" }
func (o Executed) String() string { return "exec " + o.CallID.String() }

// Execute is output, after Executed, by a server whose host runs the
// procedures (Config.Host): run procedure Proc on Args, and answer with
// the input Finished{Exec}. Exec numbers the executions of this
// incarnation of the server: a call that at-least-once runs twice is two
// executions.
type Execute struct {
	CallID
	Exec uint64 `json:"exec"`
	Proc string `json:"proc"`
	Args []byte `json:"args,omitempty"`
}

func (Execute) Kind() string { return "execute" }
func (o Execute) String() string {
	return fmt.Sprintf("execute %s x%d %s", o.CallID, o.Exec, o.Proc)
}

// Done is output when the procedure finishes.
type Done struct {
	CallID
}

func (Done) Kind() string     { return "done" }
func (o Done) String() string { return "done " + o.CallID.String() }

// Killed is output when the server kills a running call: Why is
// "orphan" (extermination, reincarnation) or "lease".
//
// Exec is the execution's number, for a host that runs the procedures
// (Execute.Exec): it stops that one.
type Killed struct {
	CallID
	Why  string `json:"why"`
	Exec uint64 `json:"exec,omitempty"`
}

func (Killed) Kind() string     { return "killed" }
func (o Killed) String() string { return "killed " + o.CallID.String() + " " + o.Why }
