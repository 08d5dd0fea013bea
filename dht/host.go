package dht

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
)

// host is what the live service runs: the overlay's Scribe node (Pastry,
// its DHT and Scribe, one process) inside a thin adapter that gives the
// algorithm's outputs to whoever asked. The algorithm answers a put or a
// get at the key's home (Stored, Got) and delivers a multicast's id
// (Received); a live caller waits at the node it asked, for a value, and
// a listener wants the message's body. The adapter carries both along
// without changing the algorithm:
//
//   - A request carries its origin and a reference: a Route leaves the
//     node as a routeMsg with the context of the event being handled (the
//     input at the origin, the routeMsg being forwarded, or the hop's
//     timer set while handling one), and an output Stored, Got or
//     Delivered made in that context goes back to the origin as a reply.
//     A get whose home has no copy waits for one fetched from its leaf
//     set (a later event, outside the context): the home keeps the
//     context and answers it with the next Got for that key.
//   - A multicast's body travels beside its id: Publish and Data leave as
//     publishMsg and dataMsg with the body this node holds for (group,
//     id), and whatever arrives is held for bodyTTL, so that a hop sent
//     again finds it. A member delivers an id once within that time.
//
// A reply that never comes (a context lost with a timer, a crashed home)
// is the caller's to retry: Server asks again after a timeout.
type host struct {
	inner    proc.Process
	founders int     // a founding member knows these IDs at Start
	contact  proc.ID // a member joining the running cluster joins through it
	joined   bool

	cur     *reqCtx                   // the context of the event being handled
	waiting map[overlay.GUID][]reqCtx // gets at this home awaiting a fetched copy
	bodies  map[bodyKey]heldBody      // multicast bodies, by group and id
	seen    map[bodyKey]time.Duration // multicasts delivered here, when
	held    int                       // bytes of the bodies
	swept   time.Duration
	env     wrapEnv
}

// reqCtx is a request's origin and the origin's reference for it.
type reqCtx struct {
	Origin proc.ID
	Ref    uint64
}

type bodyKey struct {
	Group overlay.GUID
	ID    uint64
}

type heldBody struct {
	body string
	at   time.Duration
}

// bodyTTL is how long a node holds a multicast's body (and remembers it
// delivered the multicast): longer than a hop's retries and a tree's
// repair. maxHeld bounds the bodies held, in bytes: past it the oldest
// are dropped first (a hop sent again then carries an empty body).
const (
	bodyTTL = 30 * time.Second
	maxHeld = 64 << 20
)

// joinRetry is how long a joining node waits for its overlay join to
// complete before it sends its JOIN to its contact again (the first may
// have reached a node whose service was not running yet).
const joinRetry = 2 * time.Second

func newHost(id proc.ID, cfg overlay.Config, founders int, contact proc.ID) *host {
	return &host{inner: overlay.NewScribe(id, cfg), founders: founders, contact: contact,
		waiting: map[overlay.GUID][]reqCtx{}, bodies: map[bodyKey]heldBody{}, seen: map[bodyKey]time.Duration{}}
}

// ---- the adapter's own inputs, outputs and messages ----

// request is a put, get or lookup asked at this node under reference Ref.
// A trace records it as its In, with the reference beside In's fields
// ({"key":…,"ref":3}), so that a live trace reads as the overlay
// family's (overlay-lookup, dht-get).
type request struct {
	Ref uint64
	In  proc.Input // overlay.Put, overlay.Get or overlay.Lookup
}

func (r request) Kind() string { return r.In.Kind() }

func (r request) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.In)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("request %d: %s is no JSON object (%v)", r.Ref, b, err)
	}
	if len(b) > 2 {
		b = append(b[:len(b)-1], ',')
	} else {
		b = b[:1]
	}
	return fmt.Appendf(b, `"ref":%d}`, r.Ref), nil
}

// publish multicasts Body to Group as message ID. Its kind and fields
// are overlay.Multicast's, with the body, so that a live trace reads as
// the overlay family's (the scribe-delivery checker).
type publish struct {
	Group overlay.GUID `json:"group"`
	ID    uint64       `json:"id"`
	Body  string       `json:"body"`
}

func (publish) Kind() string { return "multicast" }

// answer: the reply to request Ref, from Home.
type answer struct {
	Ref   uint64
	Op    overlay.Op
	Value string
	Found bool
	Hops  int
	Home  proc.ID
}

func (answer) Kind() string { return "answer" }

// delivery: a multicast delivered to this member; overlay.Received
// with the body, as publish is overlay.Multicast.
type delivery struct {
	Group overlay.GUID `json:"group"`
	ID    uint64       `json:"id"`
	Body  string       `json:"body"`
	Depth int          `json:"depth"`
}

func (delivery) Kind() string { return "received" }

// ready: the node is in the overlay (a founder at once; a joiner when
// its join completes).
type ready struct{}

func (ready) Kind() string { return "ready" }

// routeMsg is a Route with its request's context.
type routeMsg struct {
	R      overlay.Route
	Origin proc.ID // proc.None: no context
	Ref    uint64
}

func (routeMsg) Kind() string { return "dht-route" }

func (m routeMsg) String() string { return fmt.Sprintf("%v@p%d#%d", m.R, m.Origin, m.Ref) }

// replyMsg carries a request's outcome from the key's home to its origin.
type replyMsg struct {
	Ref   uint64
	Op    overlay.Op
	Value string
	Found bool
	Hops  int
}

func (replyMsg) Kind() string { return "dht-reply" }

// publishMsg and dataMsg are Publish and Data with the multicast's body.
type publishMsg struct {
	P    overlay.Publish
	Body string
}

func (publishMsg) Kind() string { return "scribe-publish" }

type dataMsg struct {
	D    overlay.Data
	Body string
}

func (dataMsg) Kind() string { return "scribe-data" }

type ctxTag struct {
	ctx reqCtx
	tag any
}

func (t ctxTag) String() string { return fmt.Sprint(t.tag) }

type joinTimer struct{}

// messages is what the service sends: the overlay's messages and the
// adapter's (those it replaces are never sent, but keep their tags).
func messages(a proc.Algorithm) []proc.Message {
	return append(slices.Clone(a.Messages), routeMsg{}, replyMsg{}, publishMsg{}, dataMsg{})
}

// ---- the process ----

// Start: a founding member knows the founders, as the simulator's nodes
// present from the start know every node.
func (h *host) Start(env proc.Env) {
	h.env = wrapEnv{Env: env, h: h, n: h.founders}
	h.inner.Start(&h.env)
	h.env.n = 0
	h.joined = true
	env.Output(ready{})
}

// Join: a node beyond the founders joins through its contact.
func (h *host) Join(env proc.Env, contact proc.ID) {
	h.env = wrapEnv{Env: env, h: h}
	h.inner.(proc.Joiner).Join(&h.env, contact)
	if contact != proc.None && !h.joined {
		env.SetTimer(joinRetry, joinTimer{})
	}
}

func (h *host) Receive(env proc.Env, from proc.ID, m proc.Message) {
	h.env.Env = env
	switch m := m.(type) {
	case routeMsg:
		h.env.routed, h.env.answered = false, false
		if m.Origin != proc.None {
			h.cur = &reqCtx{m.Origin, m.Ref}
		}
		h.inner.Receive(&h.env, from, m.R)
		h.settle(m.R.Op, m.R.Key)
	case replyMsg:
		env.Output(answer{Ref: m.Ref, Op: m.Op, Value: m.Value, Found: m.Found, Hops: m.Hops, Home: from})
	case publishMsg:
		h.hold(env, bodyKey{m.P.Group, m.P.ID}, m.Body)
		h.inner.Receive(&h.env, from, m.P)
	case dataMsg:
		h.hold(env, bodyKey{m.D.Group, m.D.ID}, m.Body)
		h.inner.Receive(&h.env, from, m.D)
	default:
		h.inner.Receive(&h.env, from, m)
	}
}

func (h *host) Timeout(env proc.Env, tag any) {
	h.env.Env = env
	switch t := tag.(type) {
	case joinTimer:
		if !h.joined {
			env.Send(h.contact, overlay.Join{X: env.Self()})
			env.SetTimer(joinRetry, joinTimer{})
		}
	case ctxTag:
		h.cur = &t.ctx
		h.inner.Timeout(&h.env, t.tag)
		h.cur, h.env.routed, h.env.answered = nil, false, false
	default:
		h.inner.Timeout(&h.env, tag)
	}
	h.sweep(env)
}

func (h *host) Input(env proc.Env, in proc.Input) {
	h.env.Env = env
	switch in := in.(type) {
	case request:
		h.env.routed, h.env.answered = false, false
		h.cur = &reqCtx{env.Self(), in.Ref}
		h.inner.Input(&h.env, in.In)
		if g, ok := in.In.(overlay.Get); ok {
			h.settle(overlay.OpGet, g.Key)
		}
		h.cur, h.env.routed, h.env.answered = nil, false, false
	case publish:
		h.hold(env, bodyKey{in.Group, in.ID}, in.Body)
		h.inner.Input(&h.env, overlay.Multicast{Group: in.Group, ID: in.ID})
	default:
		h.inner.Input(&h.env, in)
	}
}

// settle ends the handling of a request's event: a get that this node
// neither answered nor routed on waits here, at its home, for a copy
// fetched from the leaf set; the next Got for its key answers it.
func (h *host) settle(op overlay.Op, key overlay.GUID) {
	if h.cur != nil && op == overlay.OpGet && !h.env.routed && !h.env.answered {
		h.waiting[key] = append(h.waiting[key], *h.cur)
	}
	h.cur, h.env.routed, h.env.answered = nil, false, false
}

func (h *host) hold(env proc.Env, k bodyKey, body string) {
	if _, ok := h.bodies[k]; !ok {
		h.bodies[k] = heldBody{body, env.Now()}
		h.held += len(body)
		h.evict()
	}
}

// sweep forgets the bodies and deliveries older than bodyTTL, at most
// once a second, and the oldest bodies past maxHeld.
func (h *host) sweep(env proc.Env) {
	now := env.Now()
	if now-h.swept < time.Second {
		return
	}
	h.swept = now
	drop := func(k bodyKey) { h.held -= len(h.bodies[k].body); delete(h.bodies, k) }
	for k, b := range h.bodies {
		if now-b.at > bodyTTL {
			drop(k)
		}
	}
	maps.DeleteFunc(h.seen, func(_ bodyKey, at time.Duration) bool { return now-at > bodyTTL })
}

// evict drops the oldest bodies, down to half of maxHeld, once they
// hold more.
func (h *host) evict() {
	if h.held <= maxHeld {
		return
	}
	keys := slices.SortedFunc(maps.Keys(h.bodies), func(a, b bodyKey) int { return int(h.bodies[a].at - h.bodies[b].at) })
	for _, k := range keys {
		if h.held <= maxHeld/2 {
			break
		}
		h.held -= len(h.bodies[k].body)
		delete(h.bodies, k)
	}
}

// reply sends a request's outcome to its origin (or outputs it, if this
// node is the origin).
func (h *host) reply(c reqCtx, r replyMsg) {
	h.env.answered = true
	if c.Origin == h.env.Self() {
		h.env.Env.Output(answer{Ref: r.Ref, Op: r.Op, Value: r.Value, Found: r.Found, Hops: r.Hops, Home: c.Origin})
		return
	}
	h.env.Env.Send(c.Origin, r)
}

// output takes the algorithm's outputs: answers go to their origins,
// deliveries get their bodies, the rest is the service's.
//
// The algorithm's answers (Stored, Got, Delivered) are output too, at
// the key's home as in the simulator, for the trace's checkers; Server
// takes only the answer at the origin.
func (h *host) output(o proc.Output) {
	switch o.(type) {
	case overlay.Stored, overlay.Got, overlay.Delivered:
		h.env.Env.Output(o)
	}
	switch o := o.(type) {
	case overlay.Stored:
		if h.cur != nil {
			h.reply(*h.cur, replyMsg{Ref: h.cur.Ref, Op: overlay.OpPut, Found: true, Hops: o.Hops})
		}
	case overlay.Got:
		ctxs := h.waiting[o.Key]
		delete(h.waiting, o.Key)
		if h.cur != nil && !slices.Contains(ctxs, *h.cur) {
			ctxs = append(ctxs, *h.cur)
		}
		for _, c := range ctxs {
			h.reply(c, replyMsg{Ref: c.Ref, Op: overlay.OpGet, Value: o.Value, Found: o.Found, Hops: o.Hops})
		}
	case overlay.Delivered:
		if h.cur != nil {
			h.reply(*h.cur, replyMsg{Ref: h.cur.Ref, Op: overlay.OpLookup, Found: true, Hops: o.Hops})
		}
	case overlay.Received:
		k := bodyKey{o.Group, o.ID}
		if _, dup := h.seen[k]; dup {
			return
		}
		h.seen[k] = h.env.Now()
		h.env.Env.Output(delivery{Group: o.Group, ID: o.ID, Body: h.bodies[k].body, Depth: o.Depth})
	case overlay.Joined:
		if !h.joined {
			h.joined = true
			h.env.Env.Output(ready{})
		}
		h.env.Env.Output(o)
	default:
		h.env.Env.Output(o)
	}
}

// wrapEnv is the Env the algorithm sees: its sends and timers carry the
// context of the event being handled, and its outputs go through output.
type wrapEnv struct {
	proc.Env
	h *host
	n int // N while a founder starts (0: the service's)
	// While an event is handled: the algorithm routed a request on, or
	// answered one.
	routed, answered bool
}

func (e *wrapEnv) N() int {
	if e.n > 0 {
		return e.n
	}
	return e.Env.N()
}

func (e *wrapEnv) Output(o proc.Output) { e.h.output(o) }

func (e *wrapEnv) Send(to proc.ID, m proc.Message) {
	h := e.h
	switch m := m.(type) {
	case overlay.Route:
		e.routed = true
		r := routeMsg{R: m, Origin: proc.None}
		if h.cur != nil {
			r.Origin, r.Ref = h.cur.Origin, h.cur.Ref
		}
		e.Env.Send(to, r)
	case overlay.Publish:
		e.Env.Send(to, publishMsg{P: m, Body: h.bodies[bodyKey{m.Group, m.ID}].body})
	case overlay.Data:
		e.Env.Send(to, dataMsg{D: m, Body: h.bodies[bodyKey{m.Group, m.ID}].body})
	default:
		e.Env.Send(to, m)
	}
}

func (e *wrapEnv) SetTimer(d time.Duration, tag any) proc.TimerID {
	if e.h.cur != nil {
		tag = ctxTag{*e.h.cur, tag}
	}
	return e.Env.SetTimer(d, tag)
}
