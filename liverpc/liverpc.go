package liverpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/pool"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
)

// Config configures an Endpoint.
type Config struct {
	// RPC configures the stubs: Semantics (a call's default), Timeout (an
	// attempt's timer: it should exceed a round trip plus the procedure's
	// run time, or at-least-once runs calls again that are still running),
	// Retry, Orphans and Lease. Server and Host are set per service.
	// Every node of the cluster must use the same Orphans.
	RPC rpc.Config
	// Pool is the server's worker pool (package pool).
	Pool pool.Config
}

// DefaultConfig returns stubs with the timers of a local network — a
// one-second attempt, backoffs from 10ms to 1s, a three-second lease —
// group commit at the server, and a self-sized pool.
func DefaultConfig() Config {
	c := rpc.DefaultConfig()
	c.Timeout = time.Second
	c.Lease = 3 * time.Second
	c.Retry.InitialBackoff = 10 * time.Millisecond
	c.Retry.MaxBackoff = time.Second
	c.GroupCommit = true
	return Config{RPC: c, Pool: pool.Config{Auto: true}}
}

// Limits on what a call carries.
const (
	// MaxProcName bounds a procedure's name, in bytes.
	MaxProcName = 128
	// MaxPayload bounds a call's packed arguments and its result, in
	// bytes (the transport's frames are at most 1 MiB by default).
	MaxPayload = 512 << 10
)

// Handler is a procedure on packed arguments and results.
type Handler func(ctx context.Context, args []byte) ([]byte, error)

// Endpoint is a node's RPC: the server of the procedures registered on
// it, and the client of other nodes' servers. Its methods are safe for
// concurrent use.
type Endpoint struct {
	node *live.Node
	cfg  Config
	algo proc.Algorithm // rpc's, with cfg.RPC; Server set per service

	server *live.Service
	unhook func()
	pool   *pool.Pool
	base   context.Context
	stop   context.CancelFunc
	runs   atomic.Int64

	mu      sync.Mutex
	closed  bool
	procs   map[string]Handler
	running map[uint64]context.CancelFunc // executions in progress
	// executed is the semantics of the call the server stub last said it
	// executes (rpc.Executed, which comes just before its rpc.Execute).
	executed struct {
		id  rpc.CallID
		sem rpc.Semantics
	}
	clients map[proc.ID]*client
	nextRef uint64
}

type client struct {
	svc     *live.Service
	unhook  func()
	pending map[uint64]chan rpc.Returned // under Endpoint.mu
}

// ServiceName is the name of server id's service.
func ServiceName(id proc.ID) string { return "rpc/" + strconv.Itoa(int(id)) }

// New starts node n's endpoint: its server (the service "rpc/<self>"),
// ready for Register. Every node of the cluster that calls, or is called,
// needs one, with the same Config.RPC.Orphans.
func New(n *live.Node, cfg Config) (*Endpoint, error) {
	if err := cfg.RPC.Validate(); err != nil {
		return nil, fmt.Errorf("liverpc: %w", err)
	}
	a := rpc.Algorithms[cfg.RPC.Orphans] // listed in the order of the remedies
	p, err := pool.New(cfg.Pool)
	if err != nil {
		return nil, fmt.Errorf("liverpc: pool: %w", err)
	}
	e := &Endpoint{node: n, cfg: cfg, algo: a, pool: p,
		procs: map[string]Handler{}, running: map[uint64]context.CancelFunc{}, clients: map[proc.ID]*client{}}
	e.base, e.stop = context.WithCancel(context.Background())
	svc, err := n.Service(ServiceName(n.Self()), e.algorithm(n.Self()))
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("liverpc: %w", err)
	}
	e.server = svc
	e.unhook = svc.OnOutput(e.onServerOutput)
	// The client stubs an earlier run of this node kept a log for start
	// now, not at their first call: a restarted client must deal with the
	// orphans its crash left (extermination, reincarnation) at once.
	stored, err := n.Stored()
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("liverpc: %w", err)
	}
	for _, name := range stored {
		id, err := strconv.Atoi(strings.TrimPrefix(name, "rpc/"))
		if !strings.HasPrefix(name, "rpc/") || err != nil || ServiceName(proc.ID(id)) != name ||
			id == int(n.Self()) || id >= n.N() {
			continue
		}
		if _, err := e.client(proc.ID(id)); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// algorithm is the stubs for server id's service.
func (e *Endpoint) algorithm(id proc.ID) proc.Algorithm {
	return rpc.WithConfig(e.algo, func(c *rpc.Config) {
		o := c.Orphans
		*c = e.cfg.RPC
		c.Orphans, c.Server, c.Host = o, id, true
	})
}

// Handle registers procedure name, on packed arguments; a second
// registration of a name replaces the first.
func (e *Endpoint) Handle(name string, h Handler) error {
	if name == "" || len(name) > MaxProcName {
		return fmt.Errorf("liverpc: procedure name %q: want 1 to %d bytes", name, MaxProcName)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs[name] = h
	return nil
}

// Register registers procedure name with typed arguments and result,
// packed as JSON ([]byte as it is).
func Register[Req, Resp any](e *Endpoint, name string, fn func(context.Context, Req) (Resp, error)) error {
	return e.Handle(name, func(ctx context.Context, args []byte) ([]byte, error) {
		var req Req
		if err := unpack(args, &req); err != nil {
			return nil, fmt.Errorf("unpacking the arguments of %s: %w", name, err)
		}
		resp, err := fn(ctx, req)
		if err != nil {
			return nil, err
		}
		return pack(resp)
	})
}

// onServerOutput runs, in the server stub's turn, for each of its
// outputs: it starts an execution on the pool, or cancels one the stub
// killed. It must not block.
func (e *Endpoint) onServerOutput(o proc.Output) {
	switch o := o.(type) {
	case rpc.Executed:
		e.mu.Lock()
		e.executed.id, e.executed.sem = o.CallID, o.Sem
		e.mu.Unlock()
	case rpc.Execute:
		e.mu.Lock()
		h := e.procs[o.Proc]
		base := e.base
		if e.executed.id == o.CallID {
			base = context.WithValue(base, semKey{}, e.executed.sem)
		}
		ctx, cancel := context.WithCancel(base)
		e.running[o.Exec] = cancel
		e.mu.Unlock()
		err := e.pool.Go(func() {
			fin := rpc.Finished{Exec: o.Exec}
			if h == nil {
				fin.Fail = "unknown procedure " + strconv.Quote(o.Proc)
			} else {
				e.runs.Add(1)
				data, err := h(ctx, o.Args)
				switch {
				case err != nil:
					fin.Fail = err.Error()
				case len(data) > MaxPayload:
					fin.Fail = fmt.Sprintf("result of %d bytes: more than %d", len(data), MaxPayload)
				default:
					fin.Data = data
				}
			}
			e.mu.Lock()
			delete(e.running, o.Exec)
			e.mu.Unlock()
			cancel()
			_ = e.server.Input(fin) // fails only once the node closed
		})
		if err != nil {
			cancel()
		}
	case rpc.Killed:
		e.mu.Lock()
		if cancel := e.running[o.Exec]; cancel != nil {
			cancel()
		}
		e.mu.Unlock()
	}
}

// semKey is the key of a procedure's context's value: its call's
// semantics.
type semKey struct{}

// CallSemantics returns the semantics of the call a procedure runs for,
// from the context it was given, and whether it has one (a procedure
// called directly, not by the endpoint, has not). A procedure that is not
// idempotent may refuse an at-least-once call, which can run it twice.
func CallSemantics(ctx context.Context) (rpc.Semantics, bool) {
	s, ok := ctx.Value(semKey{}).(rpc.Semantics)
	return s, ok
}

// Options are a call's options.
type Options struct {
	// Sem is the call's semantics; 0 means Config.RPC.Semantics.
	Sem rpc.Semantics
	// Attempt is the attempt's timer; 0 means Config.RPC.Timeout.
	Attempt time.Duration
	// Key, if set (rpc.ValidKey), is the call's identity at the server,
	// whoever calls: a call under a key already run there, or running,
	// gets that run's outcome, never a second run (rpc.Request.Key).
	Key string
}

// The errors of a call that did not get its procedure's result. Only
// ErrUnavailable says the procedure did not run; after the others it may
// have run, or not (at-least-once: perhaps more than once).
var (
	ErrTimeout   = errors.New("liverpc: no reply within the attempts")
	ErrThrottled = errors.New("liverpc: retries throttled (most attempts fail)")
	ErrCrashed   = errors.New("liverpc: the server crashed while the call ran")
	ErrKilled    = errors.New("liverpc: the server killed the call")
	ErrClosed    = errors.New("liverpc: endpoint closed")
	ErrTooLarge  = errors.New("liverpc: payload too large")
)

// RemoteError is the error a procedure returned.
type RemoteError struct{ Proc, Msg string }

func (e *RemoteError) Error() string { return e.Proc + ": " + e.Msg }

// Invoke calls procedure name at server with packed arguments, and waits
// for its packed result, an error, or the end of ctx.
func (e *Endpoint) Invoke(ctx context.Context, server proc.ID, name string, args []byte, o Options) ([]byte, error) {
	switch {
	case name == "" || len(name) > MaxProcName:
		return nil, fmt.Errorf("liverpc: procedure name %q: want 1 to %d bytes", name, MaxProcName)
	case len(args) > MaxPayload:
		return nil, fmt.Errorf("%w: %d bytes of arguments, more than %d", ErrTooLarge, len(args), MaxPayload)
	case server < 0 || int(server) >= e.node.N():
		return nil, fmt.Errorf("liverpc: server %d: not a member (0..%d)", server, e.node.N()-1)
	case o.Sem > rpc.AtMostOnce:
		return nil, fmt.Errorf("liverpc: semantics %d: unknown", o.Sem)
	case o.Key != "" && !rpc.ValidKey(o.Key):
		return nil, fmt.Errorf("liverpc: key %q: want 1 to %d of A-Z a-z 0-9 . _ -", o.Key, rpc.MaxKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := e.client(server)
	if err != nil {
		return nil, err
	}
	ch := make(chan rpc.Returned, 1)
	e.mu.Lock()
	e.nextRef++
	ref := e.nextRef
	c.pending[ref] = ch
	e.mu.Unlock()
	forget := func() {
		e.mu.Lock()
		delete(c.pending, ref)
		e.mu.Unlock()
	}
	if err := c.svc.Input(rpc.Call{Sem: o.Sem, Ref: ref, Proc: name, Args: args, Timeout: o.Attempt, Key: o.Key}); err != nil {
		forget()
		return nil, ErrClosed
	}
	select {
	case r := <-ch:
		return result(name, r)
	case <-ctx.Done():
		forget()
		_ = c.svc.Input(rpc.Cancel{Ref: ref})
		return nil, ctx.Err()
	case <-c.svc.Done():
		forget()
		return nil, ErrClosed
	}
}

func result(name string, r rpc.Returned) ([]byte, error) {
	switch {
	case r.OK && r.Fail != "":
		return nil, &RemoteError{Proc: name, Msg: r.Fail}
	case r.OK:
		return r.Data, nil
	}
	switch r.Err {
	case rpc.ErrTimeout:
		return nil, ErrTimeout
	case rpc.ErrThrottled:
		return nil, ErrThrottled
	case rpc.ErrCrashed:
		return nil, ErrCrashed
	case rpc.ErrKilled:
		return nil, ErrKilled
	case rpc.ErrCanceled:
		return nil, context.Canceled
	}
	return nil, fmt.Errorf("liverpc: %s", r.Err)
}

// Call calls procedure name at server with typed arguments and result,
// packed as JSON ([]byte as it is).
func Call[Req, Resp any](ctx context.Context, e *Endpoint, server proc.ID, name string, req Req, o Options) (Resp, error) {
	var resp Resp
	args, err := pack(req)
	if err != nil {
		return resp, fmt.Errorf("liverpc: packing the arguments of %s: %w", name, err)
	}
	data, err := e.Invoke(ctx, server, name, args, o)
	if err != nil {
		return resp, err
	}
	if err := unpack(data, &resp); err != nil {
		return resp, fmt.Errorf("liverpc: unpacking the result of %s: %w", name, err)
	}
	return resp, nil
}

// client returns the client stub for server, starting it on first use.
func (e *Endpoint) client(server proc.ID) (*client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if c := e.clients[server]; c != nil {
		return c, nil
	}
	if server == e.node.Self() {
		return nil, errors.New("liverpc: a node does not call itself through the network (call the procedure)")
	}
	svc, err := e.node.Service(ServiceName(server), e.algorithm(server))
	if err != nil {
		return nil, fmt.Errorf("liverpc: %w", err)
	}
	c := &client{svc: svc, pending: map[uint64]chan rpc.Returned{}}
	c.unhook = svc.OnOutput(func(o proc.Output) {
		if r, ok := o.(rpc.Returned); ok {
			e.mu.Lock()
			ch := c.pending[r.Ref]
			delete(c.pending, r.Ref)
			e.mu.Unlock()
			if ch != nil {
				ch <- r // buffered: never blocks
			}
		}
	})
	e.clients[server] = c
	return c, nil
}

// Stats is what an endpoint did.
type Stats struct {
	// Executed counts the procedures this server began to run.
	Executed int64
	Pool     pool.Stats
}

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats { return Stats{Executed: e.runs.Load(), Pool: e.pool.Stats()} }

// Close cancels the procedures running here and waits for them, and
// stops the endpoint's hooks; the node (its services, their storage) is
// its owner's to close. Closed before its node, the endpoint answers the
// calls it cancels with their procedures' errors (a shutdown); closed
// after it, it answers none, and a retransmission after a restart finds
// them lost in the duplicate table (a crash).
func (e *Endpoint) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.stop()
	e.unhook()
	e.pool.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.clients {
		c.unhook()
	}
}

// pack and unpack are the stubs' encoding: JSON, but a []byte as it is.
func pack[T any](v T) ([]byte, error) {
	if b, ok := any(v).([]byte); ok {
		return b, nil
	}
	return json.Marshal(v)
}

func unpack[T any](b []byte, v *T) error {
	if p, ok := any(v).(*[]byte); ok {
		*p = b
		return nil
	}
	return json.Unmarshal(b, v)
}
