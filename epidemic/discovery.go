package epidemic

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Resource discovery on the gossiped map, nearest holders first: a node
// advertises a resource (a name and attributes) by writing it into the
// replicated map under a key of its own, and any node finds the k holders
// of a name that it estimates nearest in round-trip time — without
// probing them, by their network coordinates. The coordinates are
// Vivaldi's (Dabek, Cox, Kaashoek & Morris, SIGCOMM 2004; Tanenbaum &
// van Steen §6.4), a Euclidean point plus a height, each node moving its
// own a little after every round trip it measures; a holder's coordinate
// travels with its advertisement, as a Serf agent's travels with its
// membership messages:
//
//	every round:
//	    send PROBE(now) to a random peer (every other round: to one of
//	    the 8 nearest peers measured so far)
//	on PROBE(t) from q:   send ECHO(t, my coordinate, my error) to q
//	on ECHO(t, xq, eq):   rtt = now − t                 (this node's own clock)
//	    w  = e/(e + eq); es = |‖x − xq‖ − rtt| / rtt
//	    e  = es·ce·w + e·(1 − ce·w); x = x + cc·w·(rtt − ‖x − xq‖)·u(x − xq)
//	every AdRefresh:  rewrite each of my advertisements with my coordinate
//	on Advertise(name, attrs):  write key "res:name@me" = (coordinate, attrs)
//	on Withdraw(name):          write its tombstone
//	an advertisement not rewritten for AdTTL here:  write its tombstone
//	on Find(name, k):
//	    the entries "res:name@h", live, h not held dead
//	    sorted by ‖x − xh‖ (then h); the first k
//
// The map is anti-entropy's (antientropy.go): versions, tombstones and
// their reaping as for any key. An advertisement is soft state: its holder
// rewrites it every AdRefresh, and a node that has adopted no newer
// version of it for AdTTL takes its holder for gone and writes its death
// certificate; a holder that finds its own advertisement deleted, or one
// it no longer makes (after a restart: a recovered node has forgotten what
// it advertised), writes it again or deletes it. So a withdrawn
// advertisement disappears as fast as any deletion spreads, and a crashed
// holder's after AdTTL (at once where SWIM holds it dead, in the members
// algorithm).
//
// The discovery algorithm runs it alone, over push-pull anti-entropy
// among all N nodes (Demers et al.'s closed group); the members algorithm
// (members.go) runs it beside SWIM, its writes spread as rumors, its
// finds skipping the members SWIM holds dead, and its samples taken from
// SWIM's own round trips instead of probes: each ack carries the answering
// member's coordinate (as a WireCoord), and the pinger measures the round
// trip from its ping — as Serf carries its coordinates on memberlist's
// pings. Those targets are SWIM's, a uniformly shuffled order, so the
// members algorithm has no near-peer samples; it keeps no near set.
//
// Assumptions: those of anti-entropy; round-trip times roughly fit a
// plane plus heights (Vivaldi's model); clocks run at about the same rate
// over a round trip (each node measures its own). A find answers from
// this node's replica: a holder that advertised less than a dissemination
// ago may be missing, one that crashed less than AdTTL ago may be there.
//
// Cost: in the discovery algorithm, a probe and its echo per node and
// round, beside anti-entropy's exchanges; in the members algorithm, no
// message of its own — 4 to 11 bytes on each of SWIM's acks; every holder rewrites each advertisement every AdRefresh. A
// find sends nothing: O(entries) at the node.

// Advertise makes this node a holder of resource Name, with Attrs (sorted
// by key, at most MaxAttrs), replacing what it advertised under Name.
type Advertise struct {
	Name  string `json:"name"`
	Attrs []Attr `json:"attrs,omitempty"`
}

// Attr is one attribute of an advertised resource.
type Attr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Withdraw ends this node's advertisement of Name.
type Withdraw struct {
	Name string `json:"name"`
}

// Find asks for the K holders of Name nearest this node (K ≤ 0: all);
// ID, chosen by the caller, is carried by the answer.
type Find struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	K    int    `json:"k"`
}

// Found answers a Find: the holders, nearest first.
type Found struct {
	ID      uint32   `json:"id"`
	Name    string   `json:"name"`
	K       int      `json:"k"`
	Holders []Holder `json:"holders"`
}

// Holder is one holder in a Found: its estimated round-trip time from the
// asking node, in milliseconds, and its attributes.
type Holder struct {
	Node  proc.ID `json:"node"`
	RTT   float64 `json:"rtt_ms"`
	Attrs []Attr  `json:"attrs,omitempty"`
}

// Probe asks for an Echo: a Vivaldi sample. Sent is the prober's local
// time.
type Probe struct{ Sent time.Duration }

// Echo answers a Probe with the answerer's coordinate and error.
type Echo struct {
	Sent  time.Duration
	Coord Coord
}

// Coord is a Vivaldi coordinate, milliseconds: a point, a height, and
// the node's estimate of its relative error (1: knows nothing).
type Coord struct {
	X, Y, H, Err float64
}

func (Advertise) Kind() string { return "advertise" }
func (Withdraw) Kind() string  { return "withdraw" }
func (Find) Kind() string      { return "find" }
func (Found) Kind() string     { return "found" }
func (Probe) Kind() string     { return "probe" }
func (Echo) Kind() string      { return "echo" }

func (a Advertise) String() string {
	s := "advertise " + a.Name
	for _, at := range a.Attrs {
		s += " " + at.Key + "=" + at.Value
	}
	return s
}
func (w Withdraw) String() string { return "withdraw " + w.Name }
func (f Find) String() string {
	return "find " + f.Name + " k=" + strconv.Itoa(f.K) + " #" + strconv.FormatUint(uint64(f.ID), 10)
}
func (f Found) String() string {
	b := []byte("found " + f.Name + ":")
	for _, h := range f.Holders {
		b = append(b, " p"...)
		b = strconv.AppendInt(b, int64(h.Node), 10)
		b = append(b, '(')
		b = strconv.AppendFloat(b, h.RTT, 'f', 1, 64)
		b = append(b, "ms)"...)
	}
	return string(b)
}
func (p Probe) String() string { return "PROBE(" + p.Sent.String() + ")" }
func (e Echo) String() string  { return "ECHO(" + e.Sent.String() + "," + e.Coord.String() + ")" }

// WireCoord is a Coord as SWIM's acks carry it: the point and height in
// whole microseconds, the error in ten-thousandths (at least one), each a
// varint on the wire — 4 to 11 bytes, where four float64s take 32. The
// rounding is far below what a round trip's jitter moves a coordinate.
type WireCoord struct {
	X, Y, H int32
	Err     uint16
}

// PackCoord rounds c for the wire; a coordinate beyond ±2,000 s is
// clamped (none is: round trips are milliseconds).
func PackCoord(c Coord) WireCoord {
	us := func(ms float64) int32 {
		x := math.Round(ms * 1000)
		switch {
		case math.IsNaN(x):
			return 0
		case x > math.MaxInt32:
			return math.MaxInt32
		case x < math.MinInt32:
			return math.MinInt32
		}
		return int32(x)
	}
	e := math.Round(c.Err * 1e4)
	if !(e >= 1) {
		e = 1
	}
	return WireCoord{X: us(c.X), Y: us(c.Y), H: us(c.H), Err: uint16(min(e, 1e4))}
}

// Coord is w in milliseconds; an error above 1 (only a malformed ack has
// one) reads as 1.
func (w WireCoord) Coord() Coord {
	return Coord{X: float64(w.X) / 1000, Y: float64(w.Y) / 1000, H: float64(w.H) / 1000, Err: min(float64(w.Err)/1e4, 1)}
}

func (c Coord) String() string {
	return "[" + fmtFloat(c.X) + "," + fmtFloat(c.Y) + "|" + fmtFloat(c.H) + "±" + fmtFloat(c.Err) + "]"
}

// Bounds on an advertisement, so that a map of them fits a transport
// frame: the name, the attributes and each attribute's key and value.
const (
	MaxAttrs     = 16
	MaxAttrBytes = 256
	// MaxAdverts bounds the resources one node advertises at once: an
	// Advertise of one more is dropped.
	MaxAdverts = 64
)

// ResourcePrefix begins the map keys of advertisements: ResourcePrefix +
// name + "@" + holder.
const ResourcePrefix = "cohort.res."

func adKey(name string, holder proc.ID) string {
	return ResourcePrefix + name + "@" + strconv.Itoa(int(holder))
}

// parseAdKey splits an advertisement's key; ok is false for other keys.
func parseAdKey(key string) (name string, holder proc.ID, ok bool) {
	rest, ok := strings.CutPrefix(key, ResourcePrefix)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '@')
	if i <= 0 {
		return "", 0, false
	}
	id, err := strconv.Atoi(rest[i+1:])
	if err != nil || id < 0 || id > math.MaxInt32 {
		return "", 0, false
	}
	return rest[:i], proc.ID(id), true
}

// ValidResource checks a resource's name and attributes: printable
// ASCII without spaces in the name (1 to MaxName bytes), attribute keys
// without "=", no newlines anywhere, within MaxAttrs and MaxAttrBytes.
// It returns a description of the first fault, or "".
func ValidResource(name string, attrs []Attr) string {
	if len(name) == 0 || len(name) > MaxName {
		return "name " + strconv.Quote(trunc(name)) + ": want 1 to " + strconv.Itoa(MaxName) + " bytes"
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '%' || c == '@' {
			return "name " + strconv.Quote(trunc(name)) + ": want printable ASCII without spaces, /, ?, #, % or @"
		}
	}
	if len(attrs) > MaxAttrs {
		return "attributes: " + strconv.Itoa(len(attrs)) + ", at most " + strconv.Itoa(MaxAttrs)
	}
	for _, a := range attrs {
		if a.Key == "" || len(a.Key)+len(a.Value) > MaxAttrBytes || strings.ContainsAny(a.Key, "=\n") || strings.Contains(a.Value, "\n") {
			return "attribute " + strconv.Quote(trunc(a.Key)) + ": want a key without = or newline, a value without newline, at most " + strconv.Itoa(MaxAttrBytes) + " bytes together"
		}
	}
	return ""
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// adValue encodes an advertisement: "x y h" then one "k=v" line per
// attribute.
func adValue(c Coord, attrs []Attr) string {
	b := strconv.AppendFloat(nil, c.X, 'g', 6, 64)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, c.Y, 'g', 6, 64)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, c.H, 'g', 6, 64)
	for _, a := range attrs {
		b = append(b, '\n')
		b = append(b, a.Key...)
		b = append(b, '=')
		b = append(b, a.Value...)
	}
	return string(b)
}

// parseAdValue decodes adValue's; ok is false for a malformed one (from a
// peer: ignored).
func parseAdValue(v string) (c Coord, attrs []Attr, ok bool) {
	lines := strings.Split(v, "\n")
	f := strings.Fields(lines[0])
	if len(f) != 3 {
		return Coord{}, nil, false
	}
	var xs [3]float64
	for i, s := range f {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Coord{}, nil, false
		}
		xs[i] = x
	}
	for _, l := range lines[1:] {
		k, val, _ := strings.Cut(l, "=")
		attrs = append(attrs, Attr{Key: k, Value: val})
	}
	return Coord{X: xs[0], Y: xs[1], H: xs[2]}, attrs, true
}

// Vivaldi's constants (Dabek et al.): the timestep's and the error
// average's weights; the least height.
const (
	vivaldiCC = 0.25
	vivaldiCE = 0.25
	minHeight = 0.01
)

// dist is the predicted round-trip time between two coordinates:
// ‖x − y‖ + hx + hy.
func (c Coord) dist(o Coord) float64 { return math.Hypot(c.X-o.X, c.Y-o.Y) + c.H + o.H }

// update is one Vivaldi sample: rtt (ms) to a node at o.
func (c *Coord) update(env proc.Env, o Coord, rtt float64) {
	if !(rtt > 0) || math.IsNaN(o.X+o.Y+o.H+o.Err) || math.IsInf(o.X+o.Y+o.H, 0) || o.Err < 0 {
		return // a bad sample, or bad input from a peer: dropped
	}
	d := c.dist(o)
	w := c.Err / (c.Err + max(o.Err, 1e-6))
	es := math.Abs(d-rtt) / rtt
	c.Err = min(es*vivaldiCE*w+c.Err*(1-vivaldiCE*w), 1)
	force := vivaldiCC * w * (rtt - d)
	gap := math.Hypot(c.X-o.X, c.Y-o.Y)
	if gap < 1e-9 { // one point: push apart in a random direction
		a := 2 * math.Pi * env.Rand().Float64()
		c.X += force * math.Cos(a)
		c.Y += force * math.Sin(a)
		return
	}
	hs := c.H + o.H
	norm := gap + hs
	c.X += force * (c.X - o.X) / norm
	c.Y += force * (c.Y - o.Y) / norm
	c.H = max(c.H+force*hs/norm, minHeight)
}

// discoHost is what the discovery half needs of the algorithm that runs
// it: the map, a write that spreads, a peer to probe, and whether a node
// is held alive.
type discoHost interface {
	db() *store
	write(env proc.Env, key, value string, deleted bool)
	peer(env proc.Env) proc.ID
	alive(id proc.ID) bool
}

// discovery is a node's discovery half.
type discovery struct {
	coord     Coord
	mine      []myAd // by name
	published time.Duration
	refresh   time.Duration
	ttl       time.Duration
	started   bool
	probe     bool // probe for samples (else SWIM's pings bring them, or none come)
	probes    uint64
	near      []nearPeer // the nearest peers measured, nearest first
}

// nearPeer is a peer and the round-trip time last measured to it.
type nearPeer struct {
	id  proc.ID
	rtt float64
}

// nearSet is how many of the nearest peers measured a node keeps; every
// other probe goes to one of them. Vivaldi with distant samples only
// places a node well among the far and poorly among its neighbours
// (Dabek et al. §5.5: a mix of near and far samples fixes both).
const nearSet = 8

type myAd struct {
	name  string
	attrs []Attr
}

func newDiscovery(p *Params, period time.Duration, probe bool) discovery {
	r := p.AdRefresh
	if r == 0 {
		r = 10 * period
	}
	ttl := p.AdTTL
	if ttl == 0 {
		ttl = 6 * r
	}
	return discovery{coord: Coord{H: minHeight, Err: 1}, refresh: r, ttl: ttl, probe: probe}
}

func (d *discovery) input(env proc.Env, h discoHost, in proc.Input) {
	switch in := in.(type) {
	case Advertise:
		if ValidResource(in.Name, in.Attrs) != "" {
			return
		}
		attrs := slices.Clone(in.Attrs)
		slices.SortStableFunc(attrs, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
		i, ok := slices.BinarySearchFunc(d.mine, in.Name, func(a myAd, n string) int { return strings.Compare(a.name, n) })
		switch {
		case ok:
			d.mine[i].attrs = attrs
		case len(d.mine) >= MaxAdverts:
			return
		default:
			d.mine = slices.Insert(d.mine, i, myAd{in.Name, attrs})
		}
		h.write(env, adKey(in.Name, env.Self()), adValue(d.coord, attrs), false)
	case Withdraw:
		i, ok := slices.BinarySearchFunc(d.mine, in.Name, func(a myAd, n string) int { return strings.Compare(a.name, n) })
		if ok {
			d.mine = slices.Delete(d.mine, i, i+1)
		}
		if it, ok := h.db().find(adKey(in.Name, env.Self())); ok && !h.db().items[it].Deleted {
			h.write(env, adKey(in.Name, env.Self()), "", true)
		}
	case Find:
		env.Output(d.find(env, h, in))
	}
}

// find answers from this node's replica.
func (d *discovery) find(env proc.Env, h discoHost, f Find) Found {
	out := Found{ID: f.ID, Name: f.Name, K: f.K, Holders: []Holder{}}
	now, self := env.Now(), env.Self()
	prefix := ResourcePrefix + f.Name + "@"
	db := h.db()
	i, _ := db.find(prefix)
	for ; i < len(db.items) && strings.HasPrefix(db.items[i].Key, prefix); i++ {
		it := &db.items[i]
		name, holder, ok := parseAdKey(it.Key)
		if !ok || name != f.Name || it.Deleted {
			continue
		}
		if holder != self && (!h.alive(holder) || now-it.since >= d.ttl) {
			continue
		}
		c, attrs, ok := parseAdValue(it.Value)
		if !ok {
			continue
		}
		rtt := 0.0
		if holder != self {
			rtt = d.coord.dist(c)
		}
		out.Holders = append(out.Holders, Holder{Node: holder, RTT: rtt, Attrs: attrs})
	}
	slices.SortStableFunc(out.Holders, func(a, b Holder) int {
		if a.RTT != b.RTT {
			if a.RTT < b.RTT {
				return -1
			}
			return 1
		}
		return int(a.Node) - int(b.Node)
	})
	if f.K > 0 && len(out.Holders) > f.K {
		out.Holders = out.Holders[:f.K]
	}
	return out
}

// tick is the discovery half's part of a round: a probe; the node's own
// advertisements kept right and rewritten every refresh; the stale ones
// of others deleted.
func (d *discovery) tick(env proc.Env, h discoHost) {
	if d.probe {
		q := h.peer(env)
		if d.probes++; d.probes%2 == 0 && len(d.near) > 0 {
			if x := d.near[env.Rand().IntN(len(d.near))].id; h.alive(x) {
				q = x
			}
		}
		if q != proc.None && q != env.Self() {
			env.Send(q, Probe{Sent: env.Now()})
		}
	}
	now, self := env.Now(), env.Self()
	if !d.started {
		d.started, d.published = true, now
	}
	republish := now-d.published >= d.refresh
	if republish {
		d.published = now
	}
	db := h.db()
	i, _ := db.find(ResourcePrefix)
	var writes []Entry
	for ; i < len(db.items) && strings.HasPrefix(db.items[i].Key, ResourcePrefix); i++ {
		it := &db.items[i]
		name, holder, ok := parseAdKey(it.Key)
		if !ok {
			continue
		}
		if holder == self {
			j, mine := slices.BinarySearchFunc(d.mine, name, func(a myAd, n string) int { return strings.Compare(a.name, n) })
			switch {
			case !mine && !it.Deleted: // from a former life of this node
				writes = append(writes, Entry{Key: it.Key, Deleted: true})
			case mine && (republish || it.Deleted || it.Version&0xffffffff != Version(uint32(self))):
				writes = append(writes, Entry{Key: it.Key, Value: adValue(d.coord, d.mine[j].attrs)})
			}
			continue
		}
		if !it.Deleted && now-it.since >= d.ttl {
			writes = append(writes, Entry{Key: it.Key, Deleted: true})
		}
	}
	for _, w := range writes {
		h.write(env, w.Key, w.Value, w.Deleted)
	}
	// Advertisements this node makes whose entry it lost (a reaped
	// tombstone of them, with no rewrite since): write them again.
	for _, a := range d.mine {
		if _, ok := db.find(adKey(a.name, self)); !ok {
			h.write(env, adKey(a.name, self), adValue(d.coord, a.attrs), false)
		}
	}
}

func (d *discovery) receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Probe:
		env.Send(from, Echo{Sent: m.Sent, Coord: d.coord})
	case Echo:
		d.sample(env, from, m.Coord, env.Now()-m.Sent)
	}
}

// sample is one Vivaldi sample: a round trip to from, which answered
// with coordinate c — an echo of this node's probe, or (in the members
// algorithm) the ack of its SWIM ping.
func (d *discovery) sample(env proc.Env, from proc.ID, c Coord, rtt time.Duration) {
	ms := float64(rtt) / float64(time.Millisecond)
	d.coord.update(env, c, ms)
	if d.probe {
		d.remember(from, ms)
	}
}

// coordinate is the coordinate an ack carries.
func (d *discovery) coordinate() Coord { return d.coord }

// remember keeps from among the nearest peers if it is one of them.
func (d *discovery) remember(from proc.ID, rtt float64) {
	if !(rtt > 0) {
		return
	}
	d.near = slices.DeleteFunc(d.near, func(p nearPeer) bool { return p.id == from })
	i, _ := slices.BinarySearchFunc(d.near, rtt, func(p nearPeer, r float64) int {
		if p.rtt < r {
			return -1
		}
		return 1
	})
	if i < nearSet {
		d.near = slices.Insert(d.near, i, nearPeer{from, rtt})
		if len(d.near) > nearSet {
			d.near = d.near[:nearSet]
		}
	}
}

// Coordinate is the node's Vivaldi coordinate now.
func (d *discovery) Coordinate() Coord { return d.coord }

// discoMessages are the discovery half's messages, in wire-tag order.
var discoMessages = []proc.Message{Probe{}, Echo{}}

// discoveryNode is the discovery algorithm: the discovery half over
// push-pull anti-entropy among all N nodes.
type discoveryNode struct {
	ae *antiEntropy
	d  discovery
}

func (n *discoveryNode) db() *store { return &n.ae.db }
func (n *discoveryNode) write(env proc.Env, key, value string, deleted bool) {
	n.ae.db.write(env, key, value, deleted)
}
func (n *discoveryNode) peer(env proc.Env) proc.ID {
	if q := peers(env, 1, nil); len(q) > 0 {
		return q[0]
	}
	return proc.None
}
func (n *discoveryNode) alive(proc.ID) bool { return true }

func init() {
	builders["discovery"] = func(p Params) func(proc.ID, int) proc.Process {
		return func(proc.ID, int) proc.Process {
			return &discoveryNode{ae: &antiEntropy{mode: pushPull, p: &p, db: store{reapAfter: p.ReapAfter}}, d: newDiscovery(&p, p.Period, true)}
		}
	}
	register(proc.Algorithm{
		Name:    "discovery",
		Summary: "resource discovery: advertisements in a push-pull anti-entropy map, each holder's Vivaldi coordinate with them, finds answered nearest first by estimated round-trip time",
		Source:  "Demers et al. 1987 (anti-entropy); Dabek, Cox, Kaashoek & Morris 2004 (Vivaldi); Tanenbaum & van Steen §4.5, §6.4",
		Assumes: proc.Assumptions{Failures: "crash-recover"},
		New:     builders["discovery"](Params{Period: DiscoveryPeriod}.withDefaults()),
		Theory: func(n int) map[string]float64 {
			return map[string]float64{"rounds_to_findable": PushPullRounds(n)}
		},
		Notes: map[string]string{
			"rounds_to_findable": "log₃ n + ln ln n: Karp, Schindelhauer, Shenker & Vöcking (FOCS 2000) for push-pull rumor spreading, up to O(1); the advertisements of several holders must all arrive",
		},
		Checks:   []string{"integrity", "discovery-findable", "discovery-fresh"},
		Messages: append(append([]proc.Message{}, aeMessages...), discoMessages...),
		Scenario: "nodes: 16\nstop:\n  deadline: 60s\n",
	})
}

// DiscoveryPeriod is the discovery algorithm's round when Params.Period
// is zero: longer than the family's, so that a round's exchanges and
// probes finish within it on a wide-area network (a transit-stub
// network's round trips reach 300 ms).
const DiscoveryPeriod = 100 * time.Millisecond

// PushPullRounds is Karp et al.'s count of push-pull rounds to reach all
// n nodes, log₃ n + ln ln n (the O(1) left out).
func PushPullRounds(n int) float64 {
	N := max(float64(n), 3)
	return math.Log(N)/math.Log(3) + math.Log(math.Log(N))
}

func (n *discoveryNode) Start(env proc.Env) { n.ae.Start(env) }

// Join starts the node and pulls the map from its contact.
func (n *discoveryNode) Join(env proc.Env, contact proc.ID) { n.ae.Join(env, contact) }

func (n *discoveryNode) Input(env proc.Env, in proc.Input) {
	switch in.(type) {
	case Advertise, Withdraw, Find:
		n.d.input(env, n, in)
	default:
		n.ae.Input(env, in)
	}
}

func (n *discoveryNode) Timeout(env proc.Env, tag any) {
	n.ae.Timeout(env, tag)
	if _, ok := tag.(round); ok {
		n.d.tick(env, n)
	}
}

func (n *discoveryNode) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m.(type) {
	case Probe, Echo:
		n.d.receive(env, from, m)
	default:
		n.ae.Receive(env, from, m)
	}
}
