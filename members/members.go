// Package members is a live cluster's membership and replicated
// key-value map: the epidemic family's members algorithm (SWIM with
// Lifeguard's refinements for the member list and failure detection,
// push-pull anti-entropy for the map) running as one service on every
// node, with a Go API and an HTTP API.
//
// Nodes join the running cluster through any member (node.yaml's join:,
// authenticated by the cluster's secret or certificates, as any member
// is); the others learn them from the newcomer's announcement and from
// one another. A member that crashes is suspected and then declared dead
// by every member; one that restarts rejoins under a higher incarnation
// and pulls the map back; one that leaves says goodbye.
//
// What it guarantees, and what it does not: the member list is eventually
// complete (every crashed member is declared dead by every live one,
// SWIM's strong completeness) and accurate only with high probability (a
// member paused or cut off for longer than its suspicion timeout is
// declared dead, and comes back alive, at a higher incarnation, once it
// is heard again). The map is eventually consistent: a write is
// acknowledged once the node it was sent to holds it, and reaches every
// member that stays connected long enough; two writes of one key race and
// the later version (then the larger writer ID) wins everywhere; a write
// acknowledged by a node that crashes before its next exchange is lost
// with it. A deletion survives only if every member holding the old value
// hears of it within ReapAfter.
package members

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// ServiceName is the service's name on every node.
const ServiceName = "members"

// Bounds on the map: a newcomer pulls the whole map in one message, which
// must fit in a transport frame (1 MiB by default).
const (
	MaxKey      = 128
	MaxValue    = 4 << 10
	MaxMapBytes = 512 << 10
	entryCost   = 32 // a version, a flag and a time beside key and value
)

// Config configures a Server.
type Config struct {
	Node *live.Node
	// Params tunes SWIM and anti-entropy (Period, ReapAfter, IndirectK,
	// ...); the zero value gives DefaultPeriod and the algorithm's
	// defaults. Open and Founders are set from the node; LateHealth is
	// set (a member starved of CPU blames itself); Stagger is left as
	// given.
	Params epidemic.Params
	// Contact is the member a node that joins the running cluster joins
	// through; proc.None for a founding member (IDs below the node's N).
	Contact proc.ID
	Logger  *slog.Logger
	// Durable says that the node keeps its state on stable storage (a
	// data_dir). It is announced to the members (Member.Durable), so that
	// a node that would forget a replicated log at a restart is never
	// made one of its voters.
	Durable bool
	// Kinds, if not "", names what this node runs behind the services
	// that must be the same on every node (node.Kinds: the lock, group
	// and queue kinds, say). It is announced to the members
	// (Member.Kinds), so that a node that joins with other kinds is
	// refused, not half added.
	Kinds string
}

// DefaultPeriod is SWIM's protocol period and the map's exchange round
// on a live cluster (memberlist's LAN probe interval is 1 s, its gossip
// interval 200 ms). At 400 ms an idle member writes fewer bytes than
// memberlist's defaults, every byte counted (data frames, the
// transport's acks and keepalives), at 32 and 64 members, and a crash is
// declared by every member about twice as soon or sooner (the README's
// side-by-side table); at 350 ms a 64-member cluster writes as many
// bytes as memberlist's; at 200 ms detection is about twice as fast
// again, for about twice the bytes.
const DefaultPeriod = 400 * time.Millisecond

// DefaultReapAfter is how long a deletion's tombstone is kept: a member
// cut off for longer, holding the old value, brings it back when it
// returns (Demers et al.'s death certificates).
const DefaultReapAfter = 10 * time.Minute

// Server is one node's member of the service.
type Server struct {
	svc  *live.Service
	node *live.Node
	log  *slog.Logger

	readingMu sync.Mutex // one reading set at a time: the room asked for is the room used
}

// viewer is what the members algorithm's processes show the service.
type viewer interface {
	View() []epidemic.Fact
	Entries() []epidemic.Entry
	HasRoomFor(reading string) bool
}

// NewServer starts the service on cfg.Node: founding members start, a
// node beyond them joins through cfg.Contact.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Node == nil {
		return nil, errors.New("members: no node")
	}
	p := cfg.Params
	if p.Period == 0 {
		p.Period = DefaultPeriod
	}
	if p.ReapAfter == 0 {
		p.ReapAfter = DefaultReapAfter
	}
	p.Open, p.Founders = true, cfg.Node.N()
	p.Coordinates = true    // resource discovery's finds rank by them (discovery.go)
	p.LateHealth = true     // a member starved of CPU blames itself, not others
	p.AnnounceDeaths = true // the last member holds a death a few network delays after the first
	if int(cfg.Node.Self()) >= cfg.Node.N() {
		p.Founders = 0 // it joined: it knows its contact, and learns the rest from it
	}
	i := slices.IndexFunc(epidemic.Algorithms, func(a proc.Algorithm) bool { return a.Name == "members" })
	if i < 0 {
		return nil, errors.New("members: the members algorithm is not registered")
	}
	a, err := epidemic.Configure(epidemic.Algorithms[i], p)
	if err != nil {
		return nil, err
	}
	var svc *live.Service
	if cfg.Contact != proc.None || int(cfg.Node.Self()) >= cfg.Node.N() {
		svc, err = cfg.Node.Join(ServiceName, a, cfg.Contact)
	} else {
		svc, err = cfg.Node.Service(ServiceName, a)
	}
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{svc: svc, node: cfg.Node, log: log}
	s.learnAddresses()
	if cfg.Durable {
		_ = s.svc.Input(epidemic.Put{Key: durablePrefix + strconv.Itoa(int(s.node.Self())), Value: "data_dir", Floor: ownVersion()})
	}
	if cfg.Kinds != "" {
		_ = s.svc.Input(epidemic.Put{Key: kindsPrefix + strconv.Itoa(int(s.node.Self())), Value: cfg.Kinds, Floor: ownVersion()})
	}
	return s, nil
}

// Addresses travel in the map: each member writes its transport address
// under addrPrefix+ID, and every member hands the addresses it learns to
// its transport. Members that join at once through one contact each learn
// the other from the membership, but their transports would never hear
// where the other listens (a transport learns addresses from the
// connections it makes and takes); the map tells them. The keys are the
// service's own: hidden from Entries, refused to writers.
const addrPrefix = "cohort.addr."

// durablePrefix+ID is written by a member that keeps its state on stable
// storage (Config.Durable); the service's own key too.
const durablePrefix = "cohort.durable."

// kindsPrefix+ID holds a member's Config.Kinds; the service's own key too.
const kindsPrefix = "cohort.kinds."

// learnAddresses announces this member's address and hands the addresses
// the map brings to the transport, from now on.
func (s *Server) learnAddresses() {
	s.svc.OnOutput(func(o proc.Output) {
		if a, ok := o.(epidemic.Applied); ok && !a.Deleted {
			s.addPeer(a.Key, a.Value)
		}
	})
	_ = s.svc.Read(func(p proc.Process) {
		for _, e := range p.(viewer).Entries() {
			if !e.Deleted {
				s.addPeer(e.Key, e.Value)
			}
		}
	})
	if addr, ok := s.node.Members()[s.node.Self()]; ok {
		_ = s.svc.Input(epidemic.Put{Key: addrPrefix + strconv.Itoa(int(s.node.Self())), Value: addr, Floor: ownVersion()})
	}
}

// ownVersion is the least version of this incarnation's writes of its
// own keys (epidemic.Put.Floor): the wall clock, which is past the
// previous incarnation's (a clock stepped back across a restart could
// leave the old values in place until the clock passes them again).
func ownVersion() epidemic.Version { return epidemic.Version(time.Now().UnixNano()) }

// ownKey says whether key is one of the service's own: an address or an
// advertisement, hidden from the map's readers.
func ownKey(key string) bool {
	return strings.HasPrefix(key, addrPrefix) || strings.HasPrefix(key, durablePrefix) || strings.HasPrefix(key, kindsPrefix) || strings.HasPrefix(key, epidemic.ResourcePrefix)
}

func (s *Server) addPeer(key, addr string) {
	rest, ok := strings.CutPrefix(key, addrPrefix)
	if !ok {
		return
	}
	id, err := strconv.Atoi(rest)
	if err != nil || id < 0 || proc.ID(id) == s.node.Self() {
		return
	}
	if known, ok := s.node.MemberAddr(proc.ID(id)); ok && known == addr {
		return
	}
	if err := s.node.AddPeer(proc.ID(id), addr); err != nil {
		s.log.Debug("members: an address from the map not taken", "member", id, "addr", addr, "err", err)
	}
}

// Member is one member as this node holds it.
type Member struct {
	ID          int    `json:"id"`
	Addr        string `json:"addr,omitempty"`
	State       string `json:"state"` // alive, suspect, dead, left
	Incarnation uint32 `json:"incarnation"`
	Self        bool   `json:"self,omitempty"`
	Durable     bool   `json:"durable,omitempty"` // it keeps its state on stable storage (Config.Durable), as far as the map has told
	Kinds       string `json:"kinds,omitempty"`   // what it runs behind the services (Config.Kinds), as far as the map has told
}

var stateNames = map[uint8]string{epidemic.StateAlive: "alive", epidemic.StateSuspect: "suspect", epidemic.StateDead: "dead", epidemic.StateLeft: "left"}

// Members is the member list as this node holds it, itself included, by
// ID.
func (s *Server) Members() ([]Member, error) {
	var facts []epidemic.Fact
	durable, kinds := map[int]bool{}, map[int]string{}
	if err := s.svc.Read(func(p proc.Process) {
		facts = p.(viewer).View()
		for _, e := range p.(viewer).Entries() {
			if e.Deleted {
				continue
			}
			if rest, ok := strings.CutPrefix(e.Key, durablePrefix); ok {
				if id, err := strconv.Atoi(rest); err == nil {
					durable[id] = true
				}
			}
			if rest, ok := strings.CutPrefix(e.Key, kindsPrefix); ok {
				if id, err := strconv.Atoi(rest); err == nil {
					kinds[id] = e.Value
				}
			}
		}
	}); err != nil {
		return nil, err
	}
	addrs := s.node.Members()
	out := make([]Member, 0, len(facts))
	for _, f := range facts {
		out = append(out, Member{ID: int(f.Member), Addr: addrs[f.Member], State: stateNames[f.State], Incarnation: f.Inc,
			Self: f.Member == s.node.Self(), Durable: durable[int(f.Member)], Kinds: kinds[int(f.Member)]})
	}
	slices.SortFunc(out, func(a, b Member) int { return a.ID - b.ID })
	return out, nil
}

// Entry is one key of the map as this node holds it.
type Entry struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Version string `json:"version"` // "SEQ.WRITER": the write's sequence number for the key, and its writer
	Deleted bool   `json:"deleted,omitempty"`
}

func entryOf(e epidemic.Entry) Entry {
	return Entry{Key: e.Key, Value: e.Value, Version: fmt.Sprintf("%d.%d", e.Version>>32, e.Version&0xffffffff), Deleted: e.Deleted}
}

// Entries is this node's replica of the map, without the deleted keys,
// sorted by key.
func (s *Server) Entries() ([]Entry, error) {
	var es []epidemic.Entry
	if err := s.svc.Read(func(p proc.Process) { es = p.(viewer).Entries() }); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		if !e.Deleted && !ownKey(e.Key) {
			out = append(out, entryOf(e))
		}
	}
	return out, nil
}

// Get is key's entry at this node; ok is false if it holds none (or a
// deletion).
func (s *Server) Get(key string) (e Entry, ok bool, err error) {
	if err := ValidKey(key); err != nil {
		return Entry{}, false, err
	}
	err = s.svc.Read(func(p proc.Process) {
		for _, x := range p.(viewer).Entries() {
			if x.Key == key && !x.Deleted {
				e, ok = entryOf(x), true
			}
		}
	})
	return e, ok, err
}

// ErrTooBig: the write would take the map beyond MaxMapBytes.
var ErrTooBig = errors.New("the map is full")

// Put writes value under key at this node, which spreads it; it returns
// the entry written.
func (s *Server) Put(key, value string) (Entry, error) {
	if err := ValidKey(key); err != nil {
		return Entry{}, err
	}
	if len(value) > MaxValue {
		return Entry{}, fmt.Errorf("value of %d bytes: at most %d", len(value), MaxValue)
	}
	return s.write(key, value, false)
}

// Delete deletes key (writes its tombstone) at this node, which spreads
// it.
func (s *Server) Delete(key string) (Entry, error) {
	if err := ValidKey(key); err != nil {
		return Entry{}, err
	}
	return s.write(key, "", true)
}

func (s *Server) write(key, value string, deleted bool) (Entry, error) {
	var size, old int
	if err := s.svc.Read(func(p proc.Process) {
		for _, x := range p.(viewer).Entries() {
			size += len(x.Key) + len(x.Value) + entryCost
			if x.Key == key {
				old = len(x.Key) + len(x.Value) + entryCost
			}
		}
	}); err != nil {
		return Entry{}, err
	}
	if grown := size - old + len(key) + len(value) + entryCost; !deleted && grown > MaxMapBytes {
		return Entry{}, fmt.Errorf("%w: it would hold %d bytes, at most %d", ErrTooBig, grown, MaxMapBytes)
	}
	var in proc.Input = epidemic.Put{Key: key, Value: value}
	if deleted {
		in = epidemic.Delete{Key: key}
	}
	if err := s.svc.Input(in); err != nil {
		return Entry{}, err
	}
	var e Entry
	err := s.svc.Read(func(p proc.Process) { // after the write: events are handled in order
		for _, x := range p.(viewer).Entries() {
			if x.Key == key {
				e = entryOf(x)
			}
		}
	})
	return e, err
}

// ValidKey checks a key: 1 to MaxKey bytes of printable ASCII without
// spaces, safe in a URL path, and not one of the service's own
// ("cohort.addr.…").
func ValidKey(key string) error {
	if len(key) == 0 || len(key) > MaxKey {
		return fmt.Errorf("key %.40q: want 1 to %d bytes", key, MaxKey)
	}
	if strings.HasPrefix(key, addrPrefix) {
		return fmt.Errorf("key %.40q: keys beginning %s are the service's own (members' addresses)", key, addrPrefix)
	}
	if strings.HasPrefix(key, durablePrefix) {
		return fmt.Errorf("key %.40q: keys beginning %s are the service's own (members that keep a data_dir)", key, durablePrefix)
	}
	if strings.HasPrefix(key, epidemic.ResourcePrefix) {
		return fmt.Errorf("key %.40q: keys beginning %s are the service's own (advertised resources)", key, epidemic.ResourcePrefix)
	}
	for _, c := range []byte(key) {
		if c <= ' ' || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '%' {
			return fmt.Errorf("key %.40q: want printable ASCII without spaces, /, ?, # or %%", key)
		}
	}
	return nil
}

// Event is a change this node observed: a member joined (or came back),
// was suspected, died or left; or a key of the map changed here.
type Event struct {
	Type        string `json:"type"` // alive, suspect, dead, left, put, delete
	Member      *int   `json:"member,omitempty"`
	Incarnation uint32 `json:"incarnation,omitempty"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value,omitempty"`
	Version     string `json:"version,omitempty"`
}

// Watch sends the changes this node observes from now on to f, until ctx
// ends or the service stops. f runs on the service's goroutine: it must
// not block.
func (s *Server) Watch(ctx context.Context, f func(Event)) {
	cancel := s.Subscribe(f)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-s.svc.Done():
	}
}

// Subscribe sends the changes this node observes from now on to f, on
// the service's goroutine (f must not block), until cancel is called.
func (s *Server) Subscribe(f func(Event)) (cancel func()) {
	return s.svc.OnOutput(func(o proc.Output) {
		if e, ok := eventOf(o); ok {
			f(e)
		}
	})
}

func eventOf(o proc.Output) (Event, bool) {
	id := func(p proc.ID) *int { i := int(p); return &i }
	switch o := o.(type) {
	case epidemic.Alive:
		return Event{Type: "alive", Member: id(o.Member), Incarnation: o.Inc}, true
	case epidemic.Suspect:
		return Event{Type: "suspect", Member: id(o.Member), Incarnation: o.Inc}, true
	case epidemic.Dead:
		t := "dead"
		if o.Left {
			t = "left"
		}
		return Event{Type: t, Member: id(o.Member), Incarnation: o.Inc}, true
	case epidemic.Applied:
		if ownKey(o.Key) {
			return Event{}, false
		}
		e := entryOf(epidemic.Entry{Key: o.Key, Value: o.Value, Version: o.Version, Deleted: o.Deleted})
		t := "put"
		if o.Deleted {
			t = "delete"
		}
		return Event{Type: t, Key: e.Key, Value: e.Value, Version: e.Version}, true
	}
	return Event{}, false
}

// WriteMetrics writes the service's gauges in Prometheus's text format:
// the members this node holds in each state, and the map's keys.
func (s *Server) WriteMetrics(w io.Writer) {
	ms, err := s.Members()
	if err != nil {
		return
	}
	count := map[string]int{}
	for _, m := range ms {
		count[m.State]++
	}
	fmt.Fprintln(w, "# HELP cohort_members Members this node holds in each state (itself included, alive).")
	fmt.Fprintln(w, "# TYPE cohort_members gauge")
	for _, st := range []string{"alive", "suspect", "dead", "left"} {
		fmt.Fprintf(w, "cohort_members{state=%q} %d\n", st, count[st])
	}
	if es, err := s.Entries(); err == nil {
		fmt.Fprintln(w, "# HELP cohort_kv_keys Keys of the replicated map at this node (deleted ones not counted).")
		fmt.Fprintln(w, "# TYPE cohort_kv_keys gauge")
		fmt.Fprintf(w, "cohort_kv_keys %d\n", len(es))
	}
}

// Stats is the service's counters (live.Service.Stats): messages sent,
// received and dropped, events handled, the inbox's backlog.
func (s *Server) Stats() live.ServiceStats { return s.svc.Stats() }

// Leave says goodbye to the cluster: the others hold this node left, not
// dead. The service answers no more afterwards.
func (s *Server) Leave() error { return s.svc.Input(proc.Leave{}) }
