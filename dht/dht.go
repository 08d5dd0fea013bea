package dht

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/overlay"
	"github.com/cohort-go/cohort/proc"
)

// ServiceName is the service's name on every node.
const ServiceName = "dht"

// Bounds: a value travels in one message (a transport frame is 1 MiB),
// and is held by Replicas nodes.
const (
	MaxKey     = 256
	MaxValue   = 64 << 10
	MaxMessage = 64 << 10
)

// Live is the overlay's configuration on a live cluster: keep-alives
// every second (a failed node is presumed failed within two), hops
// acknowledged within 500 ms (a loaded loopback host answers within
// that), 3 replicas, a leaf set of 16.
var Live = overlay.Config{Leaves: overlay.DefaultLeaves, KeepAlive: time.Second, HopTimeout: 500 * time.Millisecond, Replicas: 3}

// RequestTimeout is how long a put or a get waits for its answer before
// it is asked again.
const RequestTimeout = 2 * time.Second

// Config configures a Server.
type Config struct {
	Node *live.Node
	// Overlay is Pastry's configuration; the zero value means Live.
	Overlay overlay.Config
	// Contact is the member a node beyond the founders joins the overlay
	// through; proc.None for a founding member.
	Contact proc.ID
	Logger  *slog.Logger
}

// Server is one node's member of the service.
type Server struct {
	svc  *live.Service
	node *live.Node
	log  *slog.Logger

	ready chan struct{}

	mu        sync.Mutex
	ref       uint64
	waiters   map[uint64]chan answer
	listeners map[overlay.GUID]map[int]func(Message)
	nextL     int
	joined    map[overlay.GUID]int // groups joined, by how many (Join and Listen) asked
	seq       uint64
	epoch     uint64
	retries   atomic.Int64
}

// Algorithm is the service's algorithm: the overlay's scribe entry (a
// Pastry node with the DHT and Scribe) run through the adapter host.go
// describes. founders is the cluster's founding members; contact the
// member a joining node joins through.
func Algorithm(cfg overlay.Config, founders int, contact proc.ID) (proc.Algorithm, error) {
	i := slices.IndexFunc(overlay.Algorithms, func(a proc.Algorithm) bool { return a.Name == "scribe" })
	if i < 0 {
		return proc.Algorithm{}, errors.New("dht: the scribe algorithm is not registered")
	}
	a := overlay.Algorithms[i]
	a.Messages = messages(a)
	a.New = func(id proc.ID, _ int) proc.Process { return newHost(id, cfg, founders, contact) }
	return a, nil
}

// NewServer starts the service on cfg.Node: founding members start, a
// node beyond them joins through cfg.Contact.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Node == nil {
		return nil, errors.New("dht: no node")
	}
	oc := cfg.Overlay
	if oc == (overlay.Config{}) {
		oc = Live
	}
	joining := int(cfg.Node.Self()) >= cfg.Node.N()
	if joining && cfg.Contact == proc.None {
		return nil, fmt.Errorf("dht: node %d joins the running cluster: it needs a contact", cfg.Node.Self())
	}
	a, err := Algorithm(oc, cfg.Node.N(), cfg.Contact)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{node: cfg.Node, log: log, ready: make(chan struct{}), waiters: map[uint64]chan answer{},
		listeners: map[overlay.GUID]map[int]func(Message){}, joined: map[overlay.GUID]int{},
		epoch: uint64(time.Now().UnixNano())}
	var svc *live.Service
	if joining {
		svc, err = cfg.Node.Join(ServiceName, a, cfg.Contact)
	} else {
		svc, err = cfg.Node.Service(ServiceName, a)
	}
	if err != nil {
		return nil, err
	}
	s.svc = svc
	var once sync.Once
	svc.OnOutput(func(o proc.Output) { s.output(o, &once) })
	// The process may have started (and said ready) before the hook.
	_ = svc.Read(func(p proc.Process) {
		if p.(*host).joined {
			once.Do(func() { close(s.ready) })
		}
	})
	return s, nil
}

func (s *Server) output(o proc.Output, once *sync.Once) {
	switch o := o.(type) {
	case ready:
		once.Do(func() { close(s.ready) })
	case answer:
		s.mu.Lock()
		ch := s.waiters[o.Ref]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- o:
			default:
			}
		}
	case delivery:
		s.mu.Lock()
		fs := make([]func(Message), 0, len(s.listeners[o.Group]))
		for _, f := range s.listeners[o.Group] {
			fs = append(fs, f)
		}
		s.mu.Unlock()
		for _, f := range fs {
			f(Message{ID: o.ID, Body: o.Body, Depth: o.Depth})
		}
	}
}

// Ready is closed once this node is in the overlay.
func (s *Server) Ready() <-chan struct{} { return s.ready }

func (s *Server) waitReady(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("this node has not joined the overlay yet: %w", ctx.Err())
	case <-s.svc.Done():
		return live.ErrClosed
	}
}

// KeyID is the GUID of a key or a group name: the first 128 bits of its
// SHA-256.
func KeyID(name string) overlay.GUID {
	h := sha256.Sum256([]byte(name))
	return overlay.GUID{Hi: binary.BigEndian.Uint64(h[:8]), Lo: binary.BigEndian.Uint64(h[8:16])}
}

// Result is the outcome of a put, a get or a lookup.
type Result struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	Found bool   `json:"found"`
	Home  int    `json:"home"` // the node that answered: the key's home
	Hops  int    `json:"hops"` // the route's overlay hops to it
}

// ErrNotFound: a get found no value under the key.
var ErrNotFound = errors.New("not found")

// Put stores value under key; it returns once the key's home holds it.
func (s *Server) Put(ctx context.Context, key, value string) (Result, error) {
	if err := ValidKey(key); err != nil {
		return Result{}, err
	}
	if len(value) > MaxValue {
		return Result{}, fmt.Errorf("value of %d bytes: at most %d", len(value), MaxValue)
	}
	return s.ask(ctx, key, overlay.Put{Key: KeyID(key), Value: value})
}

// Get reads the value under key; Found is false if there is none.
func (s *Server) Get(ctx context.Context, key string) (Result, error) {
	if err := ValidKey(key); err != nil {
		return Result{}, err
	}
	return s.ask(ctx, key, overlay.Get{Key: KeyID(key)})
}

// Lookup routes key to its home and says which node that is.
func (s *Server) Lookup(ctx context.Context, key string) (Result, error) {
	if err := ValidKey(key); err != nil {
		return Result{}, err
	}
	return s.ask(ctx, key, overlay.Lookup{Key: KeyID(key)})
}

// ask sends a request, and again every RequestTimeout, until an answer
// comes or ctx ends.
func (s *Server) ask(ctx context.Context, key string, in proc.Input) (Result, error) {
	if err := s.waitReady(ctx); err != nil {
		return Result{}, err
	}
	ch := make(chan answer, 1)
	var refs []uint64
	defer func() {
		s.mu.Lock()
		for _, r := range refs {
			delete(s.waiters, r)
		}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		s.ref++
		ref := s.ref
		s.waiters[ref] = ch
		s.mu.Unlock()
		refs = append(refs, ref)
		if err := s.svc.Input(request{Ref: ref, In: in}); err != nil {
			return Result{}, err
		}
		t := time.NewTimer(RequestTimeout)
		select {
		case a := <-ch:
			t.Stop()
			return Result{Key: key, Value: a.Value, Found: a.Found, Home: int(a.Home), Hops: a.Hops}, nil
		case <-ctx.Done():
			t.Stop()
			return Result{}, fmt.Errorf("key %q: no answer: %w", key, ctx.Err())
		case <-s.svc.Done():
			t.Stop()
			return Result{}, live.ErrClosed
		case <-t.C:
			s.retries.Add(1)
		}
	}
}

// Retries is how many requests this node asked again after
// RequestTimeout without an answer.
func (s *Server) Retries() int64 { return s.retries.Load() }

// Message is a multicast as a member delivers it.
type Message struct {
	ID    uint64 `json:"id"`
	Body  string `json:"body"`
	Depth int    `json:"depth"` // tree edges below the group's root
}

// JoinGroup makes this node a member of group; it delivers the group's
// multicasts to its listeners from then on.
func (s *Server) JoinGroup(ctx context.Context, group string) error {
	if err := httpapi.ValidName("group", group); err != nil {
		return err
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	g := KeyID(group)
	s.mu.Lock()
	s.joined[g]++
	first := s.joined[g] == 1
	s.mu.Unlock()
	if first {
		return s.svc.Input(overlay.JoinGroup{Group: g})
	}
	return nil
}

// LeaveGroup undoes one JoinGroup: the node leaves the group when every
// join is undone.
func (s *Server) LeaveGroup(group string) error {
	if err := httpapi.ValidName("group", group); err != nil {
		return err
	}
	g := KeyID(group)
	s.mu.Lock()
	if s.joined[g] == 0 {
		s.mu.Unlock()
		return nil
	}
	s.joined[g]--
	last := s.joined[g] == 0
	if last {
		delete(s.joined, g)
	}
	s.mu.Unlock()
	if last {
		return s.svc.Input(overlay.LeaveGroup{Group: g})
	}
	return nil
}

// Publish multicasts body to group's members; it returns the
// multicast's id once the message is on its way to the group's root.
func (s *Server) Publish(ctx context.Context, group, body string) (uint64, error) {
	if err := httpapi.ValidName("group", group); err != nil {
		return 0, err
	}
	if len(body) > MaxMessage {
		return 0, fmt.Errorf("message of %d bytes: at most %d", len(body), MaxMessage)
	}
	if err := s.waitReady(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.seq++
	id := mix(s.epoch ^ uint64(s.node.Self())<<40 + s.seq)
	s.mu.Unlock()
	return id, s.svc.Input(publish{Group: KeyID(group), ID: id, Body: body})
}

// mix is SplitMix64's finalizer: ids unlike across nodes and restarts.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Listen joins group and sends its multicasts to f (on the service's
// goroutine: f must not block) until cancel is called, which undoes the
// join.
func (s *Server) Listen(ctx context.Context, group string, f func(Message)) (cancel func(), err error) {
	if err := s.JoinGroup(ctx, group); err != nil {
		return nil, err
	}
	g := KeyID(group)
	s.mu.Lock()
	if s.listeners[g] == nil {
		s.listeners[g] = map[int]func(Message){}
	}
	id := s.nextL
	s.nextL++
	s.listeners[g][id] = f
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.listeners[g], id)
			if len(s.listeners[g]) == 0 {
				delete(s.listeners, g)
			}
			s.mu.Unlock()
			_ = s.LeaveGroup(group)
		})
	}, nil
}

// Done is closed once the service has stopped.
func (s *Server) Done() <-chan struct{} { return s.svc.Done() }

// ValidKey checks a key: 1 to MaxKey bytes of printable ASCII without
// spaces, /, ?, # or %, safe in a URL path.
func ValidKey(key string) error {
	if len(key) == 0 || len(key) > MaxKey {
		return fmt.Errorf("key %.40q: want 1 to %d bytes", key, MaxKey)
	}
	if i := strings.IndexFunc(key, func(c rune) bool {
		return c <= ' ' || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '%'
	}); i >= 0 {
		return fmt.Errorf("key %.40q: want printable ASCII without spaces, /, ?, # or %%", key)
	}
	return nil
}
