package overlay

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// ESM is End System Multicast: a single-source tree built among the end
// hosts themselves, for a live stream (Chu, Rao & Zhang, "A Case for End
// System Multicast", SIGMETRICS 2000 — Narada; the single-source tree
// for live streaming that followed it, and Tanenbaum & van Steen's
// application-level multicasting). Node ESMSource is the stream's source
// and the tree's root; every other node may join the session.
//
//   - Join: a node asks the source for members; the source answers with
//     a random subset of at most ESMConfig.Sample of them (itself
//     included), of those that have told it they are on the tree
//     (Attached: the nodes still looking for a parent would be no
//     candidates). The node probes each: the answer carries the
//     candidate's path from the source, its delay from the source along
//     the tree, whether it is saturated (ESMConfig.Degree children
//     already) and the bandwidth it could give one more child; the
//     probe's round trip measures the link. The node asks the
//     unsaturated candidate that gives it the most bandwidth, and of
//     those the smallest delay from the source (the candidate's, plus
//     half the round trip), to be its parent (ESMConfig.LatencyOnly: the
//     smallest delay alone); the candidate accepts if it is still
//     unsaturated and on the tree. Refused, or with no candidate fit, the
//     node asks again (an orphan first asks the next fit candidate of the
//     same round, if there is one). A first join needs no climb to the
//     source: off the tree until adopted, the node has no descendants
//     (it answers probes as off the tree, and no one can attach to it),
//     so no parent it takes can close a cycle.
//   - Bandwidth: a host's upload (ESMConfig.Upload) is shared by its
//     children, so a child receives the stream at the smaller of its
//     parent's rate and the parent's upload over its children (the
//     source's rate is ESMConfig.Stream). A candidate's answer to a
//     probe is what a new child would get: the smaller of its own rate
//     (the path's bandwidth) and its upload over one more child (its
//     spare upload) — what ESM measures by a probe's throughput (Chu et
//     al. 2004, "Early experience with an Internet broadcast system
//     based on overlay multicast": the parent chosen for bandwidth
//     first, then delay). Choosing by bandwidth, a host takes no more
//     children than its upload can send the whole stream to (Spare in
//     the answer: a child beyond them would slow down its siblings and
//     their subtrees too, not itself alone), unless the child has found
//     no full-rate place in 2·ESMPatience rounds and asks it to crowd
//     in; a node waits ESMPatience rounds for a parent that gives it the
//     whole stream before it takes less. An orphan with children waits
//     for none of it (patient): its whole subtree is without the stream
//     while it looks, so it takes the best place it finds, crowded or
//     not, and the periodic search moves it to a full-rate place later
//     (else, under churn, the subtrees of orphans stayed cut off for
//     2·ESMPatience rounds, 1–10 s as the rounds' length goes). And a
//     host that cannot forward the whole stream to anyone (its upload
//     below the stream's rate) leaves a parent's last full-rate place to
//     one that can for
//     ESMPatience rounds: else the hosts nearest the source, whatever
//     their upload, would take its places and seal the tree. With
//     LatencyOnly every host takes Degree children, whatever its upload.
//   - Displacement: the places near the source go to the hosts that
//     can forward the stream (the contribution-aware trees that followed
//     ESM, Sung, Bishop & Rao 2006: a host that contributes more may
//     take the place of one that contributes less). A probe carries the
//     prober's forwarding capacity (how many children it can send the
//     whole stream to), if it has a full-rate place left. A candidate
//     with no free full-rate place, none crowded, and a child that
//     forwards less than the prober answers as having one place (the
//     rate its children get now); asked to adopt the prober into it
//     (Attach.Displace), it takes the prober in the place of its weakest
//     child, which moves one level down, subtree and all, below the
//     prober. The prober tells the moved child (Displaced) once its own
//     parent has changed, so that the moved child's new parent is on the
//     tree before it: a prober that was the moved child's descendant has
//     left that subtree by then, and no cycle forms even for a moment.
//     The packets its parent now sends it instead of the moved child it
//     passes on to that child even if it had them already (from its old
//     parent, in a switch's overlap). A switching or rejoining prober is adopted only after a climb, as
//     into a free place. Each displacement puts a strictly stronger host
//     into a place, so they end. Without them the first hosts to join
//     kept the source's places for good, whatever their upload, and most
//     of the tree hung below one capable host, deep, and cut off at once
//     when it failed.
//   - Alive: every ESMAlive a parent sends its children an alive message
//     with its path from the source and each child's rate (a packet of
//     the stream counts too); a child's path is its parent's and its
//     parent.
//   - Graceful leave: a node that leaves tells its children and its
//     parent and goes on forwarding for ESMGrace; each child finds a new
//     parent as a joining node does, keeps the old one until the new one
//     accepts, then drops it.
//   - Failure: a child that has not heard from its parent for ESMSuspect
//     presumes it failed and finds a new parent the same way. A child
//     tells its parent every ESMAlive that it is there (ChildAlive); a
//     parent that has not heard from a child for ESMChildSuspect drops it,
//     and its place is free again (else a host whose children crashed
//     would stay saturated for good, and a member that needs it, the
//     source maybe, would find no place).
//   - Improvement: every ESMConfig.Improve a member on the tree looks
//     for a better parent (the structure adjusted for performance, as in
//     Narada's periodic probing of random members, and the tree-first
//     ESM of Chu et al. 2004 §3: a host keeps probing for a better
//     parent and switches only for a clear gain). It asks the source for
//     members and probes them as a joining node does, and asks the best
//     fit one (never a descendant, never saturated, never a full-rate
//     place it would crowd) to adopt it only if that one is clearly
//     better than its parent: by ESMMargin more bandwidth, or as much
//     and ESMMargin less delay from the source (with LatencyOnly: by
//     ESMMargin less delay). The candidate asked sends a climb up its
//     own ancestors to the source, which adopts the node only if the
//     climb reaches the source without meeting the node itself (it would
//     be the node's descendant), a node off the tree, or one in a switch
//     of its own; a node is in a switch from its request to the answer,
//     and its own parent changes only then, so two switches can never
//     take each other's subtrees (a climb through a node that has
//     already switched follows its new parent). Make before break: the
//     node keeps its old parent for ESMOverlap, taking the stream from
//     both and delivering each packet once, then drops it: the old
//     parent forwards every packet the new one had before the switch.
//     The node waits for the climb (ESMProbe plus twice the candidate's
//     delay from the source, as an orphan does); refused or unanswered,
//     it asks the next candidate of the round that is clearly better
//     than its parent, at most Sample a round.
//   - No cycles: a node that rejoins never takes a parent whose path from
//     the source contains itself (one of its own descendants) or the
//     parent it lost (a descendant of that parent is cut off from the
//     source as it is, and may be rejoining too: two such taking each
//     other's descendants would close a cycle). The candidate checks the
//     same against its own path when asked; a node off the tree (it lost
//     its parent) is no candidate. Those paths may be a few latencies
//     old (an ancestor that has just switched into the orphan's subtree,
//     the news not yet come down), so the candidate adopts an orphan, as
//     a switching node, only once a climb from it has reached the source
//     without meeting the orphan, the parent it lost or a node off the
//     tree: the parents as they are now, not as a path reported them. (A
//     node in a switch does not stop it: the orphan is off the tree until
//     adopted, so no switch can move into its subtree meanwhile.) The
//     orphan sends its children an empty path, so its subtree knows
//     itself cut off (answers probes as off the tree, stops climbs) until
//     it is adopted; it waits for the climb about twice the candidate's
//     delay from the source beyond ESMProbe, and refused, it asks the
//     next fit candidate of its round.
//
// Every change of parent is output (ESMParent) so that a checker can
// rebuild the parent graph. Cost: a join is one query, Sample probes and
// one attach; the stream takes one message per tree edge per packet; a
// node sends its children an alive message every ESMAlive; every
// Improve a member sends one query and Sample probes, and a switch or a
// rejoin adds a climb of one message per ancestor of the new parent.
// Assumes reliable links; the source does not fail.
type esm struct {
	id, source proc.ID
	cfg        ESMConfig
	member     bool // joined the session (the source always is)
	parent     proc.ID
	children   []proc.ID
	childHeard map[proc.ID]time.Duration // when each child was last heard from
	childFwd   map[proc.ID]int           // each child's forwarding capacity (fullRate), as its Attach said
	path       []proc.ID                 // the ancestors, from the source down to the parent
	delay      time.Duration             // delay from the source along the tree
	link       time.Duration             // delay from the parent: half the probe's round trip
	rate       float64                   // the stream's rate this node receives, Mbit/s
	heard      time.Duration             // when the parent was last heard from
	ticking    bool
	// Finding a parent: the round, the candidates probed and their
	// answers, the parent lost or leaving (excluded with its
	// descendants; -1: none), the candidate asked.
	round   int
	tries   int                       // rounds since the node began looking for a parent
	probes  map[proc.ID]time.Duration // probe sent at
	answers []esmAnswer
	lost    proc.ID
	asking  proc.ID
	askRTT  time.Duration
	// Improving: a round looking for a better parent while on the tree
	// (a switch under way once it asks one); the parent before the last
	// switch, still taken the stream from until ESMOverlap ends (-1:
	// none); the packets received lately, each delivered once.
	improving, improveTicking bool
	prev                      proc.ID
	// The child displaced into this node's care when it last took a
	// parent (proc.None: none): the new parent sends here the packets it
	// sent that child before, and this node may have had them already
	// from its old parent (a switch's overlap, a leaving parent's grace).
	moved  proc.ID
	seen   map[uint64]bool
	recent []seenPacket
	// Leaving: forwarding until the grace period ends.
	leaving, gone bool
	members       []proc.ID // the source's view of the session's members
	flaws         []flaw    // none, but in the tests' broken variants
}

// ESMConfig is an ESM node's parameters.
type ESMConfig struct {
	// Degree is the most children a node takes (its saturation limit).
	Degree int
	// Sample is how many members the source names to a joining node.
	Sample int
	// Upload is this host's upload capacity in Mbit/s, shared by its
	// children; 0: unlimited.
	Upload float64
	// Stream is the stream's rate in Mbit/s, as the source sends it; 0
	// means 1.
	Stream float64
	// LatencyOnly chooses the parent by delay alone, ignoring bandwidth.
	LatencyOnly bool
	// Improve is the period of a member's search for a better parent;
	// 0: none (a member changes its parent only when it loses it).
	Improve time.Duration
	// ImproveFrom is the local time before which a member does not look
	// for a better parent (to measure a tree before and after); 0: from
	// its first parent on.
	ImproveFrom time.Duration
}

// DefaultESM: up to 4 children, 6 candidates probed, unlimited uploads
// (on a network without them, the choice is by delay), a better parent
// looked for every ESMImprove.
var DefaultESM = ESMConfig{Degree: 4, Sample: 6, Improve: ESMImprove}

// stream is the stream's rate at the source.
func (c ESMConfig) stream() float64 {
	if c.Stream > 0 {
		return c.Stream
	}
	return 1
}

// Share is the rate each of k children of a host of upload capacity
// upload (0: unlimited) receives from it when it receives rate itself.
func Share(rate, upload float64, k int) float64 {
	if upload <= 0 || k <= 0 {
		return rate
	}
	return min(rate, upload/float64(k))
}

// The ESM timers: alive messages, failure suspicion, the probe round, the
// retry after a refusal and the grace period of a leave.
const (
	ESMAlive   = 200 * time.Millisecond
	ESMSuspect = 3 * ESMAlive
	// ESMChildSuspect is how long a parent waits for a silent child
	// before it drops it: longer than a child waits for its parent, since
	// a live child dropped loses the stream, a dead child's place is only
	// idle for a while.
	ESMChildSuspect = 4 * ESMSuspect
	ESMProbe        = time.Second
	ESMRetry        = 100 * time.Millisecond
	ESMGrace        = 2 * time.Second
)

// The improvement: its default period; the margin by which a candidate
// must beat the parent (a fraction of the node's rate or delay: the
// hysteresis that keeps a node from switching back and forth between
// parents of about the same worth); how long a node that switched keeps
// taking the stream from its old parent too (ESMDeliveryBound: the old
// parent has received by then every packet the new one had before the
// switch); how long a packet's id is remembered against a second copy.
const (
	ESMImprove   = 2 * time.Second
	ESMMargin    = 0.1
	ESMOverlap   = ESMDeliveryBound
	esmDuplicate = 2 * ESMDeliveryBound
)

// ESMPatience is how many rounds a node choosing by bandwidth looks for
// a parent that gives it the whole stream before it takes less.
const ESMPatience = 5

// The bounds of the esm-delivery checker: a packet reaches every member
// of an intact tree within ESMDeliveryBound; a node that joins is on the
// tree within ESMJoinBound; after a failure or a leave, every member is
// back on the tree within ESMRepairBound (noticed within ESMSuspect and a
// period, a few probe rounds).
const (
	ESMDeliveryBound = 2 * time.Second
	ESMJoinBound     = 3*time.Second + ESMPatience*(ESMProbe/2+ESMRetry)
	ESMRepairBound   = ESMSuspect + ESMAlive + (4+ESMPatience)*(ESMProbe+ESMRetry) + ESMGrace
)

// ---- inputs and outputs ----

// ESMJoin makes the node join the session.
type ESMJoin struct{}

// Kind implements proc.Input.
func (ESMJoin) Kind() string { return "esm-join" }

// ESMLeave makes the node leave the session gracefully.
type ESMLeave struct{}

// Kind implements proc.Input.
func (ESMLeave) Kind() string { return "esm-leave" }

// ESMSend asks the source to send packet ID down the tree.
type ESMSend struct {
	ID uint64 `json:"id"`
}

// Kind implements proc.Input.
func (ESMSend) Kind() string { return "esm-send" }

// ESMReceived: a member received packet ID, Depth tree edges below the
// source.
type ESMReceived struct {
	ID    uint64 `json:"id"`
	Depth int    `json:"depth"`
}

// Kind implements proc.Output.
func (ESMReceived) Kind() string { return "esm-received" }

// ESMParent: the node's parent is now Parent (-1: none).
type ESMParent struct {
	Parent proc.ID `json:"parent"`
}

// Kind implements proc.Output.
func (ESMParent) Kind() string { return "esm-parent" }

// ---- messages ----

// Query asks the source for members to probe.
type Query struct{}

// Kind implements proc.Message.
func (Query) Kind() string { return "query" }

func (Query) String() string { return "QUERY" }

// Candidates answers a Query.
type Candidates struct{ Nodes []proc.ID }

// Kind implements proc.Message.
func (Candidates) Kind() string { return "candidates" }

func (m Candidates) String() string { return fmt.Sprintf("CANDIDATES(%v)", m.Nodes) }

// Probe asks a candidate for its state; Round matches the answer;
// Forwards is how many children the prober can send the whole stream
// to, if it has a full-rate place left (a candidate may give it the
// place of a child that forwards less, and that child takes the place).
type Probe struct {
	Round    int
	Forwards int
}

// Kind implements proc.Message.
func (Probe) Kind() string { return "probe" }

func (m Probe) String() string { return fmt.Sprintf("PROBE(r=%d)", m.Round) }

// ProbeReply: the candidate's path from the source, its delay from it,
// whether it is saturated, whether it is on the tree, and the bandwidth
// (Mbit/s) a new child of it would receive.
type ProbeReply struct {
	Round     int
	Path      []proc.ID
	Delay     time.Duration
	Saturated bool
	OnTree    bool
	Bandwidth float64
	Spare     int  // children it could still send the whole stream to
	Displace  bool // the place offered is a weaker child's (see Attach.Displace)
}

// Kind implements proc.Message.
func (ProbeReply) Kind() string { return "probe-reply" }

func (m ProbeReply) String() string {
	return fmt.Sprintf("PROBE-REPLY(r=%d,depth=%d,sat=%t,on=%t,bw=%g)", m.Round, len(m.Path), m.Saturated, m.OnTree, m.Bandwidth)
}

// Attach asks the receiver to be the sender's parent; Lost is the parent
// the sender lost (-1: none); Crowd: the sender found no parent with a
// full-rate place for long, and asks the receiver to share its upload
// beyond its full-rate children (slowing them down).
type Attach struct {
	Lost     proc.ID
	Crowd    bool
	KeepsOff bool // the sender cannot forward the stream: not into the last full-rate place
	Switch   bool // the sender is on the tree, and switches to a better parent: climb first (as for a rejoin: Lost set)
	Forwards int  // children the sender can send the whole stream to (its fullRate)
	Displace bool // with no free place, the receiver may take the sender in the place of a child that forwards less
}

// Kind implements proc.Message.
func (Attach) Kind() string { return "attach" }

func (m Attach) String() string { return fmt.Sprintf("ATTACH(lost=%v)", m.Lost) }

// Accept: the sender is the receiver's parent now; its path and delay,
// and the rate the receiver gets from it. Moved is the child the
// receiver displaced (proc.None: none), the receiver's child now, and
// MovedForwards its forwarding capacity.
type Accept struct {
	Path          []proc.ID
	Delay         time.Duration
	Rate          float64
	Moved         proc.ID
	MovedForwards int
}

// Kind implements proc.Message.
func (Accept) Kind() string { return "accept" }

func (m Accept) String() string {
	if m.Moved != proc.None {
		return fmt.Sprintf("ACCEPT(depth=%d,moved=p%d)", len(m.Path), m.Moved)
	}
	return fmt.Sprintf("ACCEPT(depth=%d)", len(m.Path))
}

// Displaced: the sender has taken the receiver's place below Parent,
// and is the receiver's parent now.
type Displaced struct{ Parent proc.ID }

// Kind implements proc.Message.
func (Displaced) Kind() string { return "displaced" }

func (m Displaced) String() string { return fmt.Sprintf("DISPLACED(from=p%d)", m.Parent) }

// Climb goes up from a candidate asked to adopt Child, who switches
// parents (Attach.Switch) or rejoins (Attach.Lost), parent by parent to
// the source; Via is the candidate, Attach the request.
type Climb struct {
	Child, Via proc.ID
	Attach     Attach
}

// Kind implements proc.Message.
func (Climb) Kind() string { return "climb" }

func (m Climb) String() string { return fmt.Sprintf("CLIMB(p%d,via=p%d)", m.Child, m.Via) }

// Climbed answers a Climb, to the candidate: OK if it reached the source
// without meeting Child, a node off the tree or a node in a switch.
type Climbed struct {
	Child  proc.ID
	OK     bool
	Attach Attach
}

// Kind implements proc.Message.
func (Climbed) Kind() string { return "climbed" }

func (m Climbed) String() string { return fmt.Sprintf("CLIMBED(p%d,ok=%t)", m.Child, m.OK) }

// Refuse: the sender will not be the receiver's parent.
type Refuse struct{}

// Kind implements proc.Message.
func (Refuse) Kind() string { return "refuse" }

func (Refuse) String() string { return "REFUSE" }

// Alive: the parent to a child, with the parent's path and delay, and
// the rate the child gets from it.
type Alive struct {
	Path  []proc.ID
	Delay time.Duration
	Rate  float64
}

// Kind implements proc.Message.
func (Alive) Kind() string { return "alive" }

func (m Alive) String() string { return fmt.Sprintf("ALIVE(depth=%d)", len(m.Path)) }

// Packet is a packet of the stream, parent to child.
type Packet struct {
	ID    uint64
	Depth int
}

// Kind implements proc.Message.
func (Packet) Kind() string { return "packet" }

func (m Packet) String() string { return fmt.Sprintf("PACKET(#%d,d=%d)", m.ID, m.Depth) }

// Depart: the sender leaves the session (to its parent, children and the
// source).
type Depart struct{}

// Kind implements proc.Message.
func (Depart) Kind() string { return "depart" }

func (Depart) String() string { return "DEPART" }

// Attached: the sender, a member, has a parent (to the source, which
// names it to joining nodes from then on).
type Attached struct{}

// Kind implements proc.Message.
func (Attached) Kind() string { return "attached" }

func (Attached) String() string { return "ATTACHED" }

// ChildAlive: the sender, a child of the receiver (or its child until a
// switch's overlap ends), is there.
type ChildAlive struct{}

// Kind implements proc.Message.
func (ChildAlive) Kind() string { return "child-alive" }

func (ChildAlive) String() string { return "CHILD-ALIVE" }

// Drop: the sender is no longer the receiver's child.
type Drop struct{}

// Kind implements proc.Message.
func (Drop) Kind() string { return "drop" }

func (Drop) String() string { return "DROP" }

// The timers' tags.
type (
	esmTick     struct{}
	probeDone   struct{ Round int }
	retry       struct{ Round int }
	graceOver   struct{}
	improveTick struct{}
	overlapOver struct{}
)

type seenPacket struct {
	id uint64
	at time.Duration
}

type esmAnswer struct {
	from proc.ID
	rtt  time.Duration
	ProbeReply
}

// ---- the algorithm ----

func init() {
	register(proc.Algorithm{
		Name:    "esm",
		Summary: "End System Multicast: a degree-bounded tree among the hosts, joined by probing members, rejoined never under a descendant",
		Source:  "Chu, Rao & Zhang 2000 (Narada); Tanenbaum & van Steen, application-level multicasting",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop", Topology: "full"},
		New:     func(id proc.ID, _ int) proc.Process { return NewESM(id, DefaultESM) },
		Checks:  []string{"esm-delivery", "esm-no-cycle"},
		Messages: []proc.Message{Query{}, Candidates{}, Probe{}, ProbeReply{}, Attach{}, Accept{},
			Refuse{}, Alive{}, Packet{}, Depart{}, Drop{}, Attached{}, Climb{}, Climbed{}, ChildAlive{}, Displaced{}},
	})
}

// ESMSource is the session's source.
const ESMSource proc.ID = 0

// NewESM is an ESM node at address id.
func NewESM(id proc.ID, cfg ESMConfig) proc.Process {
	n := &esm{id: id, source: ESMSource, cfg: cfg, parent: proc.None, lost: proc.None, asking: proc.None, prev: proc.None,
		moved: proc.None}
	if id == n.source {
		n.rate = cfg.stream()
	}
	return n
}

func (n *esm) Start(env proc.Env) {
	if n.id == n.source {
		n.member = true
		n.tick(env)
	}
}

func (n *esm) tick(env proc.Env) {
	if !n.ticking {
		n.ticking = true
		env.SetTimer(ESMAlive, esmTick{})
	}
}

// onTree reports whether the node has a path from the source, as far as
// it knows: a parent it has not lost, and a path that begins at the
// source (a node below an orphan is told an empty path, see alive).
func (n *esm) onTree() bool {
	return n.id == n.source || (n.parent != proc.None && !n.leaving && n.lost == proc.None &&
		len(n.path) > 0 && n.path[0] == n.source)
}

func (n *esm) saturated() bool { return len(n.children) >= n.cfg.Degree }

// fullRate is how many children the node can send the whole stream to:
// its upload over the stream's rate (none for a host whose upload is
// below it), at most Degree.
func (n *esm) fullRate() int {
	if n.cfg.Upload <= 0 {
		return n.cfg.Degree
	}
	return min(n.cfg.Degree, int(n.cfg.Upload/n.cfg.stream()))
}

// forwards is how many children this node says it can send the whole
// stream to, asking for a place: its fullRate, if it has a full-rate
// place left for the child it would displace; else none (it displaces
// no one: the child moved below it would slow down its other children).
func (n *esm) forwards() int {
	if len(n.children) >= n.fullRate() {
		return 0
	}
	return n.fullRate()
}

// needsParent: a member with no parent, or whose parent is leaving.
func (n *esm) needsParent() bool {
	return n.member && !n.leaving && n.id != n.source && (n.parent == proc.None || n.lost != proc.None)
}

// seeking: a round under way, for a parent or a better one.
func (n *esm) seeking() bool { return n.needsParent() || n.improving }

// switching: the node has asked a better parent to adopt it and awaits
// the answer; a climb through it is refused.
func (n *esm) switching() bool { return n.improving && n.asking != proc.None }

func (n *esm) Input(env proc.Env, in proc.Input) {
	if n.gone {
		return
	}
	switch in := in.(type) {
	case ESMJoin:
		if n.member {
			return
		}
		n.member = true
		n.tick(env)
		n.findParent(env)
	case ESMLeave:
		if !n.member || n.id == n.source || n.leaving {
			return
		}
		n.leaving, n.improving = true, false
		for _, c := range n.children {
			env.Send(c, Depart{})
		}
		if n.parent != proc.None {
			env.Send(n.parent, Depart{})
		}
		env.Send(n.source, Depart{})
		env.SetTimer(ESMGrace, graceOver{})
	case ESMSend:
		if n.id == n.source {
			n.forward(env, in.ID, 0)
		}
	}
}

// findParent starts a round: ask the source for candidates.
func (n *esm) findParent(env proc.Env) {
	n.tries++
	n.improving = false
	n.query(env)
}

func (n *esm) query(env proc.Env) {
	n.round++
	n.probes, n.answers, n.asking = nil, nil, proc.None
	env.Send(n.source, Query{})
}

// lookForBetter starts an improvement round, if the node is on the tree
// and no round, switch or overlap is under way.
func (n *esm) lookForBetter(env proc.Env) {
	if !n.member || n.leaving || n.id == n.source || n.parent == proc.None || n.lost != proc.None ||
		n.improving || n.prev != proc.None || n.probes != nil {
		return
	}
	n.improving = true
	n.query(env)
}

// fit reports whether a candidate may be the parent: on the tree,
// unsaturated, and neither a descendant of this node nor of the parent
// lost.
func (n *esm) fit(a esmAnswer) bool {
	if !a.OnTree || a.Saturated || a.from == n.lost || a.from == n.parent || slices.Contains(n.children, a.from) {
		return false
	}
	if n.has(picksDescendant) {
		return true
	}
	if n.keepsOff() && a.Spare == 1 {
		return false // the last full-rate place, kept for a host that can forward the stream
	}
	if !n.cfg.LatencyOnly && a.Spare == 0 && n.tries < 2*ESMPatience && n.patient() {
		return false // no full-rate place: taking one would slow down its children
	}
	return !slices.Contains(a.Path, n.id) && (n.lost == proc.None || !slices.Contains(a.Path, n.lost))
}

// choose asks the fit candidate that gives the most bandwidth, and of
// those the smallest delay from the source, to be the parent (with
// LatencyOnly, the smallest delay); with none, a new round after
// ESMRetry.
func (n *esm) choose(env proc.Env) {
	n.probes = nil
	if n.improving {
		n.improve(env)
		return
	}
	var best *esmAnswer
	for i := range n.answers {
		a := &n.answers[i]
		if !n.fit(*a) {
			continue
		}
		if best == nil || n.better(a, best) {
			best = a
		}
	}
	reduced := !n.cfg.LatencyOnly && best != nil && best.Bandwidth < n.cfg.stream()
	if best == nil || reduced && n.tries < ESMPatience && n.patient() { // wait for the whole stream
		env.SetTimer(ESMRetry, retry{n.round})
		return
	}
	n.asking, n.askRTT = best.from, best.rtt
	env.Send(best.from, Attach{Lost: n.lost, Crowd: !n.cfg.LatencyOnly && best.Spare == 0, KeepsOff: n.keepsOff(),
		Forwards: n.fullRate(), Displace: best.Displace && n.forwards() > 0})
	wait := ESMProbe
	if n.lost != proc.None && !n.has(rejoinsBlind) {
		// A rejoin waits for a climb up the candidate's path and its
		// answer from the source: about twice its delay from the source.
		wait += 2 * best.Delay
	}
	env.SetTimer(wait, retry{n.round}) // unanswered: it failed
}

// improve asks the best candidate fit to adopt this node if it is
// clearly better than the parent; else the round ends. The candidate
// adopts it only once a climb up its ancestors has reached the source,
// so the node waits, as an orphan does, ESMProbe plus twice the
// candidate's delay from the source. Refused, or unanswered by then (the
// candidate or an ancestor of it failed, or a climb met a switch), the
// node asks the next candidate of the round that is clearly better, if
// there is one: at most Sample asks a round, the next round a period
// later.
func (n *esm) improve(env proc.Env) {
	var best *esmAnswer
	for i := range n.answers {
		if a := &n.answers[i]; n.fitBetter(*a) && (best == nil || n.better(a, best)) {
			best = a
		}
	}
	if best == nil || !n.clearlyBetter(best) {
		n.improving = false
		return
	}
	n.asking, n.askRTT = best.from, best.rtt
	env.Send(best.from, Attach{Lost: proc.None, KeepsOff: !n.cfg.LatencyOnly && n.fullRate() == 0, Switch: true,
		Forwards: n.fullRate(), Displace: best.Displace && n.forwards() > 0})
	wait := ESMProbe
	if !n.has(switchGivesUp) {
		wait += 2 * best.Delay
	}
	env.SetTimer(wait, retry{n.round}) // unanswered: the next candidate
}

// nextCandidate: the candidate asked, from, refused, or did not answer in
// time; the node asks the next one of the round (improve), in a new
// round number, so that the candidate's timer, and an Accept of its
// that comes late, count for nothing (onAccept drops it). The orphan
// does the same (choose, below Refuse).
func (n *esm) nextCandidate(env proc.Env, from proc.ID) {
	n.asking = proc.None
	if n.has(switchGivesUp) {
		n.improving = false // the parent kept; another round next period
		return
	}
	n.answers = slices.DeleteFunc(n.answers, func(a esmAnswer) bool { return a.from == from })
	n.round++
	n.improve(env)
}

// fitBetter reports whether a candidate may be the new parent of a node
// on the tree: on the tree, unsaturated, not the parent nor a
// descendant, and choosing by bandwidth, a full-rate place (never
// crowded: that would slow down its children), not the last one for a
// host that cannot forward the stream.
func (n *esm) fitBetter(a esmAnswer) bool {
	if !a.OnTree || a.Saturated || a.from == n.parent || slices.Contains(n.children, a.from) {
		return false
	}
	if n.has(picksDescendant) {
		return true
	}
	if !n.cfg.LatencyOnly && (a.Spare == 0 || a.Spare == 1 && n.fullRate() == 0) {
		return false
	}
	return !slices.Contains(a.Path, n.id)
}

// clearlyBetter: the candidate gives ESMMargin more bandwidth than the
// node receives, or as much and ESMMargin less delay from the source
// (with LatencyOnly, ESMMargin less delay).
func (n *esm) clearlyBetter(a *esmAnswer) bool {
	closer := float64(a.Delay+a.rtt/2) < (1-ESMMargin)*float64(n.delay)
	if n.cfg.LatencyOnly {
		return closer
	}
	return a.Bandwidth > (1+ESMMargin)*n.rate || a.Bandwidth >= n.rate && closer
}

// keepsOff: the node, choosing by bandwidth, cannot forward the whole
// stream to anyone, and leaves parents' last full-rate places to those
// that can, for its first ESMPatience rounds.
func (n *esm) keepsOff() bool {
	return !n.cfg.LatencyOnly && n.fullRate() == 0 && n.tries < ESMPatience && n.patient()
}

// patient reports whether the node, choosing by bandwidth, may wait for
// a full-rate place (ESMPatience rounds, 2·ESMPatience before it crowds
// a parent): only if no subtree waits with it. An orphan's children get
// nothing while it looks, so it takes the best place it finds at once,
// even one that gives less than the whole stream, and the periodic
// search for a better parent moves it to a full-rate place when one is
// free.
func (n *esm) patient() bool { return len(n.children) == 0 || n.has(orphansWait) }

// better reports whether candidate a is to be preferred to b.
func (n *esm) better(a, b *esmAnswer) bool {
	if !n.cfg.LatencyOnly && a.Bandwidth != b.Bandwidth {
		return a.Bandwidth > b.Bandwidth
	}
	if c := cmp.Compare(a.Delay+a.rtt/2, b.Delay+b.rtt/2); c != 0 {
		return c < 0
	}
	return a.from < b.from
}

// has reports whether the node has flaw f (a test's broken variant).
func (n *esm) has(f flaw) bool { return slices.Contains(n.flaws, f) }

// share is the rate each child receives from this node with k children.
func (n *esm) share(k int) float64 { return Share(n.rate, n.cfg.Upload, k) }

func (n *esm) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if n.gone {
		return
	}
	switch m := m.(type) {
	case Query:
		n.onQuery(env, from)
	case Candidates:
		if !n.seeking() {
			return
		}
		n.probes = map[proc.ID]time.Duration{}
		for _, c := range m.Nodes {
			if c != n.id {
				n.probes[c] = env.Now()
				env.Send(c, Probe{Round: n.round, Forwards: n.forwards()})
			}
		}
		env.SetTimer(ESMProbe, probeDone{n.round})
	case Probe:
		env.Send(from, n.answer(m))
	case ProbeReply:
		if sent, ok := n.probes[from]; ok && m.Round == n.round {
			delete(n.probes, from)
			n.answers = append(n.answers, esmAnswer{from, env.Now() - sent, m})
			if len(n.probes) == 0 {
				n.choose(env)
			}
		}
	case Attach:
		n.onAttach(env, from, m)
	case Accept:
		n.onAccept(env, from, m)
	case Refuse:
		if from == n.asking {
			n.asking = proc.None
			if n.improving {
				n.nextCandidate(env, from)
				return
			}
			if n.lost == proc.None || n.has(rejoinsBlind) {
				env.SetTimer(ESMRetry, retry{n.round})
				return
			}
			// An orphan asks the next fit candidate of the same round,
			// if there is one (its climb refused: the first sat in a
			// subtree cut off, and the others may not); else a new round
			// after ESMRetry.
			n.answers = slices.DeleteFunc(n.answers, func(a esmAnswer) bool { return a.from == from })
			n.round++
			n.choose(env)
		}
	case Climb:
		n.onClimb(env, m)
	case Climbed:
		n.onClimbed(env, m)
	case Alive:
		if from == n.prev {
			return
		}
		if from != n.parent {
			n.refuseFrom(env, from)
			return
		}
		n.heard = env.Now()
		path := m.Path
		if n.has(stalePaths) {
			path = n.path[:len(n.path)-1]
		}
		if !slices.Equal(n.path[:len(n.path)-1], path) || n.delay != m.Delay+n.link || n.rate != m.Rate {
			n.path, n.delay, n.rate = append(slices.Clone(path), from), m.Delay+n.link, m.Rate
			n.alive(env)
		}
	case Packet:
		if from != n.parent && from != n.prev {
			n.refuseFrom(env, from)
			return
		}
		if from == n.parent {
			n.heard = env.Now()
		}
		if n.fresh(env.Now(), m.ID) {
			n.forward(env, m.ID, m.Depth)
		} else if from == n.parent && n.moved != proc.None && slices.Contains(n.children, n.moved) {
			// Sent here instead of to the child displaced: it may not
			// have it (it drops a second copy).
			env.Send(n.moved, Packet{ID: m.ID, Depth: m.Depth + 1})
		}
	case Depart:
		n.onDepart(env, from)
	case Attached:
		if n.id == n.source && !slices.Contains(n.members, from) {
			n.members = append(n.members, from)
		}
	case Drop:
		n.children = slices.DeleteFunc(n.children, func(x proc.ID) bool { return x == from })
	case Displaced:
		n.onDisplaced(env, from, m)
	case ChildAlive:
		if slices.Contains(n.children, from) {
			n.childHeard[from] = env.Now()
		}
	}
}

// refuseFrom: a node that is not the parent sends to this one as to its
// child: a parent it dropped, or one that accepted it in a round it has
// given up. The candidate being asked may have accepted, its Accept
// overtaken by its first packet: it is not refused.
func (n *esm) refuseFrom(env proc.Env, from proc.ID) {
	if from != n.asking {
		env.Send(from, Drop{})
	}
}

// onQuery: the source names a random subset of the members on the
// tree, itself first.
func (n *esm) onQuery(env proc.Env, from proc.ID) {
	if n.id != n.source {
		return
	}
	others := slices.DeleteFunc(slices.Clone(n.members), func(x proc.ID) bool { return x == from })
	env.Rand().Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	pick := append([]proc.ID{n.id}, others[:min(len(others), n.cfg.Sample-1)]...)
	env.Send(from, Candidates{Nodes: pick})
}

// onAttach: a node asks this one to be its parent. A node that switches
// or rejoins (it has a subtree that must not end up above it) is adopted
// only once a climb from here has reached the source; a node joining for
// the first time has no descendants, and is adopted at once.
func (n *esm) onAttach(env proc.Env, from proc.ID, m Attach) {
	switch {
	case !n.accepts(from, m):
		env.Send(from, Refuse{})
	case n.climbs(m):
		n.onClimb(env, Climb{Child: from, Via: n.id, Attach: m})
	default:
		n.take(env, from, m)
	}
}

// climbs reports whether an Attach waits for a climb to the source: a
// switch, or the rejoin of an orphan (Lost set).
func (n *esm) climbs(m Attach) bool {
	switch {
	case n.has(picksDescendant):
		return false
	case m.Switch:
		return !n.has(switchesBlind)
	default:
		return m.Lost != proc.None && !n.has(rejoinsBlind)
	}
}

// accepts reports whether this node may adopt a node asking it.
func (n *esm) accepts(from proc.ID, m Attach) bool {
	ok := n.onTree() && from != n.parent &&
		(n.freePlace(m) || m.Displace && n.weaker(m.Forwards) != proc.None)
	if !n.has(picksDescendant) {
		ok = ok && !slices.Contains(n.path, from) && (m.Lost == proc.None || !slices.Contains(n.path, m.Lost))
	}
	return ok
}

// onClimb: a climb for a switching or rejoining node passes here. It
// stops at the node itself (this one is its descendant), at a node off
// the tree, a switching node's climb at a node in a switch of its own,
// and a rejoining node's before the parent it lost (this one is cut off
// with it, and that parent may be dead); it ends well at the source.
func (n *esm) onClimb(env proc.Env, m Climb) {
	switch {
	case m.Child == n.id || !n.onTree() || n.switching() && m.Attach.Switch:
		env.Send(m.Via, Climbed{Child: m.Child, Attach: m.Attach})
	case n.id == n.source:
		env.Send(m.Via, Climbed{Child: m.Child, OK: true, Attach: m.Attach})
	case m.Attach.Lost != proc.None && n.parent == m.Attach.Lost:
		env.Send(m.Via, Climbed{Child: m.Child, Attach: m.Attach})
	default:
		env.Send(n.parent, m)
	}
}

// onClimbed: the climb for a switching or rejoining node is back; adopt it if it
// reached the source and this node still may.
func (n *esm) onClimbed(env proc.Env, m Climbed) {
	if m.OK && n.accepts(m.Child, m.Attach) {
		n.take(env, m.Child, m.Attach)
	} else {
		env.Send(m.Child, Refuse{})
	}
}

// freePlace reports whether this node has a place for the node asking
// by m: unsaturated, and choosing by bandwidth, a full-rate place (or
// the asker agrees to crowd in), not the last one for a host that
// cannot forward the stream.
func (n *esm) freePlace(m Attach) bool {
	return !n.saturated() && (m.Crowd || n.cfg.LatencyOnly || len(n.children) < n.fullRate()) &&
		!(m.KeepsOff && len(n.children) == n.fullRate()-1)
}

// weaker is the child a host that forwards the stream to fwd children
// may displace: choosing by bandwidth, with no full-rate place free but
// none crowded either (each child gets what a full-rate place gives),
// the child that forwards least, if that is less than fwd (the smaller
// id of equals); proc.None if there is none.
func (n *esm) weaker(fwd int) proc.ID {
	if n.cfg.LatencyOnly || n.has(keepsPlaces) || len(n.children) < n.fullRate() && !n.saturated() ||
		len(n.children) > n.fullRate() {
		return proc.None
	}
	weakest := proc.None
	for _, c := range n.children {
		f, ok := n.childFwd[c]
		if ok && f < fwd && (weakest == proc.None || f < n.childFwd[weakest]) {
			weakest = c
		}
	}
	return weakest
}

// answer is this node's answer to a probe: its place for the prober, a
// free one, or, if it has none but a child that forwards less than the
// prober, that child's (the rate its children get now).
func (n *esm) answer(m Probe) ProbeReply {
	r := ProbeReply{Round: m.Round, Path: n.path, Delay: n.delay, Saturated: n.saturated(), OnTree: n.onTree(),
		Bandwidth: n.share(len(n.children) + 1), Spare: max(0, n.fullRate()-len(n.children))}
	if r.OnTree && r.Spare == 0 && n.weaker(m.Forwards) != proc.None {
		r.Saturated, r.Bandwidth, r.Spare, r.Displace = false, n.share(len(n.children)), 1, true
	}
	return r
}

// take adopts a node that asked by m: into a free place, or else into
// the place of the weakest child, which goes down below it (the new
// child tells it, once it has taken its place: onAccept).
func (n *esm) take(env proc.Env, from proc.ID, m Attach) {
	moved := proc.None
	if !n.freePlace(m) {
		moved = n.weaker(m.Forwards)
	}
	a := Accept{Moved: moved}
	if moved != proc.None {
		n.children = slices.DeleteFunc(n.children, func(x proc.ID) bool { return x == moved })
		a.MovedForwards = n.childFwd[moved]
		delete(n.childHeard, moved)
		delete(n.childFwd, moved)
	}
	n.adopt(env, from, m.Forwards)
	a.Path, a.Delay, a.Rate = n.path, n.delay, n.share(len(n.children))
	env.Send(from, a)
}

// adopt makes a node, which forwards the stream to fwd children, this
// one's child.
func (n *esm) adopt(env proc.Env, from proc.ID, fwd int) {
	if !slices.Contains(n.children, from) {
		n.children = append(n.children, from)
		slices.Sort(n.children)
	}
	if n.childHeard == nil {
		n.childHeard, n.childFwd = map[proc.ID]time.Duration{}, map[proc.ID]int{}
	}
	n.childHeard[from], n.childFwd[from] = env.Now(), fwd
	n.tick(env)
}

// onDisplaced: the sender took this node's place below its parent m.Parent
// and is its parent now: the subtree moves one level down. If this node
// has left that parent meanwhile (a switch), or is leaving, it is not
// the sender's child. Its delay from the source is the new parent's plus
// the link it had to the old one (no probe measured the new link), until
// it switches.
func (n *esm) onDisplaced(env proc.Env, from proc.ID, m Displaced) {
	if n.parent != m.Parent || n.lost != proc.None || n.leaving {
		env.Send(from, Drop{})
		return
	}
	n.parent, n.heard = from, env.Now()
	n.path = append(slices.Clone(n.path), from)
	env.Output(ESMParent{Parent: from})
	n.alive(env)
}

// onAccept: the candidate asked is the parent now; a leaving parent is
// dropped; the parent before a switch is kept for ESMOverlap.
func (n *esm) onAccept(env proc.Env, from proc.ID, m Accept) {
	if from != n.asking || !n.seeking() {
		env.Send(from, Drop{})
		return
	}
	n.asking, n.tries = proc.None, 0
	switch {
	case n.improving:
		n.improving, n.prev = false, n.parent
		env.SetTimer(ESMOverlap, overlapOver{})
	case n.parent != proc.None:
		env.Send(n.parent, Drop{})
	}
	n.parent, n.lost = from, proc.None
	n.link = n.askRTT / 2
	n.path, n.delay, n.heard, n.rate = append(slices.Clone(m.Path), from), m.Delay+n.link, env.Now(), m.Rate
	env.Output(ESMParent{Parent: from})
	env.Send(n.source, Attached{})
	n.moved = m.Moved
	if m.Moved != proc.None {
		// The child displaced: below this node now, told so after this
		// node's own parent changed.
		env.Send(m.Moved, Displaced{Parent: from})
		n.adopt(env, m.Moved, m.MovedForwards)
	}
	n.alive(env)
	if n.cfg.Improve > 0 && !n.improveTicking {
		n.improveTicking = true
		env.SetTimer(n.cfg.Improve/2+time.Duration(env.Rand().Int64N(int64(n.cfg.Improve))), improveTick{})
	}
}

// fresh records packet id as received at now, reporting whether it is
// the first copy: during a switch's overlap both parents send it.
func (n *esm) fresh(now time.Duration, id uint64) bool {
	for len(n.recent) > 0 && now-n.recent[0].at > esmDuplicate {
		delete(n.seen, n.recent[0].id)
		n.recent = n.recent[1:]
	}
	if n.seen[id] {
		return false
	}
	if n.seen == nil {
		n.seen = map[uint64]bool{}
	}
	n.seen[id] = true
	n.recent = append(n.recent, seenPacket{id, now})
	return true
}

// onDepart: a member leaves. The parent leaving: find another, keeping
// it until then. A child leaving: forget it.
func (n *esm) onDepart(env proc.Env, from proc.ID) {
	n.children = slices.DeleteFunc(n.children, func(x proc.ID) bool { return x == from })
	if n.id == n.source {
		n.members = slices.DeleteFunc(n.members, func(x proc.ID) bool { return x == from })
	}
	if from == n.parent && !n.leaving {
		n.lost = from
		n.findParent(env)
	}
}

// alive sends the children this node's path and delay, and the rate
// each gets. A node off the tree sends an empty path: its subtree is cut
// off with it, and its members learn so (a path that does not begin at
// the source), answer probes as off the tree and stop climbs, until it
// is adopted again and sends its new path.
func (n *esm) alive(env proc.Env) {
	path := n.path
	if !n.onTree() && !n.has(rejoinsBlind) && !n.has(picksDescendant) {
		path = nil
	}
	for _, c := range n.children {
		env.Send(c, Alive{Path: path, Delay: n.delay, Rate: n.share(len(n.children))})
	}
}

// forward delivers a packet (at a member other than the source) and
// passes it to the children.
func (n *esm) forward(env proc.Env, id uint64, depth int) {
	if n.id != n.source && !n.leaving {
		env.Output(ESMReceived{ID: id, Depth: depth})
	}
	for _, c := range n.children {
		env.Send(c, Packet{ID: id, Depth: depth + 1})
	}
}

func (n *esm) Timeout(env proc.Env, tag any) {
	if n.gone {
		return
	}
	switch t := tag.(type) {
	case esmTick:
		n.children = slices.DeleteFunc(n.children, func(c proc.ID) bool {
			if env.Now()-n.childHeard[c] <= ESMChildSuspect {
				return false
			}
			delete(n.childHeard, c) // presumed failed
			return true
		})
		if n.parent != proc.None {
			env.Send(n.parent, ChildAlive{})
		}
		if n.prev != proc.None && n.prev != n.parent {
			env.Send(n.prev, ChildAlive{}) // still forwarding to it
		}
		n.alive(env)
		if n.parent != proc.None && env.Now()-n.heard > ESMSuspect && !n.leaving {
			// The parent failed (or left and is gone): find another,
			// never among its descendants.
			n.lost, n.parent, n.path, n.rate = n.parent, proc.None, nil, 0
			env.Output(ESMParent{Parent: proc.None})
			n.findParent(env)
		}
		env.SetTimer(ESMAlive, esmTick{})
	case probeDone:
		if t.Round == n.round && n.probes != nil && n.seeking() {
			n.choose(env)
		}
	case retry:
		switch {
		case t.Round != n.round:
		case n.improving:
			n.nextCandidate(env, n.asking) // no answer
		case n.needsParent():
			n.findParent(env)
		}
	case improveTick:
		if env.Now() >= n.cfg.ImproveFrom {
			n.lookForBetter(env)
		}
		env.SetTimer(n.cfg.Improve, improveTick{})
	case overlapOver:
		if n.prev != proc.None && n.prev != n.parent { // (a rejoin may have gone back to it)
			env.Send(n.prev, Drop{})
		}
		n.prev, n.moved = proc.None, proc.None
	case graceOver:
		n.gone = true
		env.Output(ESMParent{Parent: proc.None})
	}
}

// Depth is the node's depth below the source; Parent its parent.
func (n *esm) Depth() int { return len(n.path) }
