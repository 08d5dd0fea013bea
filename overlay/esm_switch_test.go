package overlay

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// switchNet drives ESM nodes by hand: messages are delivered one at a
// time, in the order sent; timers never fire.
type switchNet struct {
	nodes map[proc.ID]*esm
	queue []switchMsg
}

type switchMsg struct {
	from, to proc.ID
	m        proc.Message
}

type switchEnv struct {
	net  *switchNet
	self proc.ID
}

func (e switchEnv) Self() proc.ID                            { return e.self }
func (e switchEnv) N() int                                   { return len(e.net.nodes) }
func (e switchEnv) Neighbors() []proc.ID                     { return nil }
func (e switchEnv) Now() time.Duration                       { return 0 }
func (e switchEnv) SetTimer(time.Duration, any) proc.TimerID { return 1 }
func (e switchEnv) CancelTimer(proc.TimerID)                 {}
func (e switchEnv) Rand() *rand.Rand                         { return rand.New(rand.NewPCG(1, uint64(e.self))) }
func (e switchEnv) Output(proc.Output)                       {}
func (e switchEnv) Storage() proc.Storage                    { return nil }
func (e switchEnv) Send(to proc.ID, m proc.Message) {
	e.net.queue = append(e.net.queue, switchMsg{e.self, to, m})
}

// tree builds nodes 0..len(parent)-1 with the given parents (the
// source's is -1), their paths and children as the tree has them.
func newSwitchNet(parent []proc.ID, f flaw) *switchNet {
	net := &switchNet{nodes: map[proc.ID]*esm{}}
	for i := range parent {
		n := NewESM(proc.ID(i), ESMConfig{Degree: 4, Sample: 4, LatencyOnly: true}).(*esm)
		n.member, n.parent, n.flaws = true, parent[i], []flaw{f}
		net.nodes[proc.ID(i)] = n
	}
	for i, p := range parent {
		if p != proc.None {
			net.nodes[p].children = append(net.nodes[p].children, proc.ID(i))
		}
	}
	for i := range parent {
		n := net.nodes[proc.ID(i)]
		for x := n.parent; x != proc.None; x = net.nodes[x].parent {
			n.path = append([]proc.ID{x}, n.path...)
		}
	}
	return net
}

// ask makes node x ask node to adopt it in a switch, as improve does.
func (net *switchNet) ask(x, to proc.ID) {
	n := net.nodes[x]
	n.improving, n.asking = true, to
	switchEnv{net, x}.Send(to, Attach{Lost: proc.None, Switch: true})
}

// run delivers the messages sent (at most a thousand: alive messages
// would go round a cycle forever).
func (net *switchNet) run() {
	for i := 0; len(net.queue) > 0 && i < 1000; i++ {
		d := net.queue[0]
		net.queue = net.queue[1:]
		net.nodes[d.to].Receive(switchEnv{net, d.to}, d.from, d.m)
	}
}

// cycle is a cycle of the parent pointers, if there is one.
func (net *switchNet) cycle() []proc.ID {
	for id := range len(net.nodes) {
		var walk []proc.ID
		for x := proc.ID(id); x != proc.None; x = net.nodes[x].parent {
			if slices.Contains(walk, x) {
				return walk
			}
			walk = append(walk, x)
		}
	}
	return nil
}

// TestESMSwitchClimbsToTheSource: a switching node's candidate adopts it
// only once a climb up the candidate's ancestors reaches the source
// without meeting it. The candidate's own path may be stale (here its
// parent switched under the asking node, and the news has not come
// down): the climb follows the parents as they are now, meets the asking
// node and refuses; without the climb the switch closes a cycle.
func TestESMSwitchClimbsToTheSource(t *testing.T) {
	for _, f := range []flaw{sound, switchesBlind} {
		// 0 ← 1 ← 2, 0 ← 3 ← 4: node 3 has just moved under 2, and 4
		// still believes its path is 0, 3.
		net := newSwitchNet([]proc.ID{proc.None, 0, 1, 0, 3}, f)
		n3 := net.nodes[3]
		n3.parent, n3.path = 2, []proc.ID{0, 1, 2}
		net.nodes[0].children = []proc.ID{1}
		net.nodes[2].children = []proc.ID{3}
		net.ask(1, 4) // 1 switches to 4, under 3 under 2 under 1
		net.run()
		c := net.cycle()
		t.Logf("flaw %d: node 1's parent %v, cycle %v", f, net.nodes[1].parent, c)
		if f == sound && (c != nil || net.nodes[1].parent != 0 || slices.Contains(net.nodes[4].children, 1)) {
			t.Errorf("with the climb: node 1's parent %v, node 4's children %v, cycle %v; want 1 kept under 0",
				net.nodes[1].parent, net.nodes[4].children, c)
		}
		if f == switchesBlind && c == nil {
			t.Errorf("without the climb: no cycle; the test no longer shows what the climb is for")
		}
	}
}

// TestESMConcurrentSwitchesNeverCross: two nodes switch at once, each
// under the other's child, with every path up to date when they ask. A
// climb meets the other switching node and is refused: neither switch
// is made, and no cycle forms; without the climbs both are, and close
// one.
func TestESMConcurrentSwitchesNeverCross(t *testing.T) {
	for _, f := range []flaw{sound, switchesBlind} {
		// 0 ← 1 ← 2 and 0 ← 3 ← 4; 1 asks 4, 3 asks 2.
		net := newSwitchNet([]proc.ID{proc.None, 0, 1, 0, 3}, f)
		net.ask(1, 4)
		net.ask(3, 2)
		net.run()
		c := net.cycle()
		t.Logf("flaw %d: parents of 1 and 3: %v, %v; cycle %v", f, net.nodes[1].parent, net.nodes[3].parent, c)
		if f == sound && (c != nil || net.nodes[1].parent != 0 || net.nodes[3].parent != 0) {
			t.Errorf("with the climbs: parents of 1 and 3: %v, %v, cycle %v; want both kept under 0",
				net.nodes[1].parent, net.nodes[3].parent, c)
		}
		if f == switchesBlind && c == nil {
			t.Errorf("without the climbs: no cycle")
		}
	}
}

// TestESMRejoinClimbsToTheSource: an orphan's candidate adopts it only
// once a climb up the candidate's ancestors reaches the source without
// meeting it. Here the candidate's path is stale: its parent has just
// switched under the orphan's subtree, and the news has not come down,
// so the path it reports names neither the orphan nor the parent the
// orphan lost. The climb follows the parents as they are now, meets the
// orphan and refuses; trusting the path, the candidate adopts its own
// ancestor and closes a cycle.
func TestESMRejoinClimbsToTheSource(t *testing.T) {
	for _, f := range []flaw{sound, rejoinsBlind} {
		// 0 ← 5 ← 1 ← 2 and 0 ← 3 ← 4; 3 has just moved under 2, and 4
		// still believes its path is 0, 3. Then 5 leaves: 1 is an orphan
		// and asks 4.
		net := newSwitchNet([]proc.ID{proc.None, 5, 1, 0, 3, 0}, f)
		n3 := net.nodes[3]
		n3.parent, n3.path = 2, []proc.ID{0, 5, 1, 2}
		net.nodes[0].children = []proc.ID{5}
		net.nodes[2].children = []proc.ID{3}
		n1 := net.nodes[1]
		n1.lost, n1.asking = 5, 4
		switchEnv{net, 1}.Send(4, Attach{Lost: 5})
		net.run()
		c := net.cycle()
		t.Logf("flaw %d: node 1's parent %v, cycle %v", f, n1.parent, c)
		if f == sound && (c != nil || slices.Contains(net.nodes[4].children, 1)) {
			t.Errorf("with the climb: node 1's parent %v, node 4's children %v, cycle %v; want 1 refused",
				n1.parent, net.nodes[4].children, c)
		}
		if f == rejoinsBlind && c == nil {
			t.Errorf("without the climb: no cycle; the test no longer shows what the climb is for")
		}
	}
}

// TestESMRefusedSwitchAsksTheNextCandidate: a switching node whose
// first choice refuses it (saturated since it answered the probe) asks
// the next candidate of the same round that is clearly better than its
// parent, and moves there; a switch that gave up at the first refusal
// kept its parent until the next period.
func TestESMRefusedSwitchAsksTheNextCandidate(t *testing.T) {
	for _, f := range []flaw{sound, switchGivesUp} {
		// 0 ← 1 ← 2 ← 3, and 0 ← 4, 0 ← 5: node 3 (delay 30) has probed
		// 4 and 5, each 10 from the source; 4 has filled up since.
		net := newSwitchNet([]proc.ID{proc.None, 0, 1, 2, 0, 0}, f)
		for i, d := range []time.Duration{0, 10, 20, 30, 10, 10} {
			net.nodes[proc.ID(i)].delay = d
		}
		net.nodes[4].children = []proc.ID{6, 7, 8, 9}
		n3 := net.nodes[3]
		n3.improving = true
		for _, c := range []proc.ID{4, 5} {
			n3.answers = append(n3.answers, esmAnswer{from: c, rtt: 2,
				ProbeReply: ProbeReply{Path: []proc.ID{0}, Delay: 10, OnTree: true, Spare: 4}})
		}
		n3.improve(switchEnv{net, 3})
		net.run()
		t.Logf("flaw %d: node 3's parent %v", f, n3.parent)
		if f == sound && (n3.parent != 5 || !slices.Contains(net.nodes[5].children, 3)) {
			t.Errorf("node 3's parent %v, node 5's children %v: want 3 under 5 after 4 refused",
				n3.parent, net.nodes[5].children)
		}
		if f == switchGivesUp && n3.parent != 2 {
			t.Errorf("giving up at the first refusal: node 3's parent %v, want 2 kept", n3.parent)
		}
		if c := net.cycle(); c != nil {
			t.Errorf("cycle %v", c)
		}
	}
}

// TestESMOrphanTakesLessRatherThanNothing: choosing by bandwidth, node 2
// has lost its parent 1 (0 ← 1 ← 2 ← 3), and the only candidate on the
// tree, node 4 (0 ← 4 ← 5, an upload of 1 Mbit/s), has no full-rate
// place left: one more child would halve its children's rate. An orphan
// with a child takes that place at once (asks 4 to crowd it in): its
// subtree gets half the stream rather than nothing, and the periodic
// search moves it to a full-rate place later. A childless orphan waits
// for a full-rate place as a newcomer does. An orphan that waited with
// its subtree (orphansWait) stayed cut off for 2·ESMPatience rounds:
// under churn, most of the members cut off when the stream ran.
func TestESMOrphanTakesLessRatherThanNothing(t *testing.T) {
	for _, c := range []struct {
		f         flaw
		children  []proc.ID
		wantTaken bool
	}{
		{sound, []proc.ID{3}, true},
		{sound, nil, false},
		{orphansWait, []proc.ID{3}, false},
	} {
		net := newSwitchNet([]proc.ID{proc.None, 0, 1, 2, 0, 4}, c.f)
		for id, n := range net.nodes {
			n.cfg = ESMConfig{Degree: 4, Sample: 4, Upload: 10, Stream: 1}
			n.rate = 1
			if id == 4 {
				n.cfg.Upload = 1
			}
		}
		n2 := net.nodes[2]
		n2.parent, n2.path, n2.lost, n2.tries, n2.children = proc.None, nil, 1, 1, c.children
		n2.answers = []esmAnswer{{from: 4, rtt: 2, ProbeReply: ProbeReply{Path: []proc.ID{0}, Delay: 10,
			OnTree: true, Bandwidth: net.nodes[4].share(2), Spare: 0}}}
		n2.choose(switchEnv{net, 2})
		net.run()
		taken := n2.parent == 4 && slices.Contains(net.nodes[4].children, 2)
		t.Logf("flaw %d, children %v: node 2's parent %v, rate %g", c.f, c.children, n2.parent, n2.rate)
		if taken != c.wantTaken {
			t.Errorf("flaw %d, children %v: node 2's parent %v, node 4's children %v; taken %t, want %t",
				c.f, c.children, n2.parent, net.nodes[4].children, taken, c.wantTaken)
		}
		if taken && n2.rate != 0.5 {
			t.Errorf("node 2's rate %g, want 0.5 (4's upload shared by two children)", n2.rate)
		}
		if c := net.cycle(); c != nil {
			t.Errorf("cycle %v", c)
		}
	}
}

// TestESMStrongerHostDisplacesWeakerChild: choosing by bandwidth, the
// source (an upload of 4 Mbit/s, a stream of 1) has no place left: its
// four children are 0.5 Mbit/s hosts, that forward the stream to no one,
// but one of 1 Mbit/s. A 10 Mbit/s host asking (a newcomer, or a member
// below the weakest child switching up) takes the place of the weakest
// child of the smallest id, node 1, which goes one level down below it,
// subtree and all, without a cycle. Without displacement (keepsPlaces)
// the source answers saturated, and the capable host stays where it is:
// off the tree, or deep below the slow host.
func TestESMStrongerHostDisplacesWeakerChild(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      flaw
		parent []proc.ID // node 5 asks the source; the source's children are 1–4
		upload []float64
		asking proc.ID
	}{
		{"newcomer", sound, []proc.ID{proc.None, 0, 0, 0, 0, proc.None}, []float64{4, 0.5, 1, 0.5, 0.5, 10}, 5},
		{"newcomer", keepsPlaces, []proc.ID{proc.None, 0, 0, 0, 0, proc.None}, []float64{4, 0.5, 1, 0.5, 0.5, 10}, 5},
		// 0 ← 1 ← 6 ← 5: node 5 switches up, into the place of its own
		// ancestor, which goes below it.
		{"descendant switching", sound, []proc.ID{proc.None, 0, 0, 0, 0, 6, 1}, []float64{4, 0.5, 1, 0.5, 0.5, 10, 1}, 5},
		{"descendant switching", keepsPlaces, []proc.ID{proc.None, 0, 0, 0, 0, 6, 1}, []float64{4, 0.5, 1, 0.5, 0.5, 10, 1}, 5},
	} {
		net := newSwitchNet(c.parent, c.f)
		for id, n := range net.nodes {
			n.cfg = ESMConfig{Degree: 4, Sample: 4, Upload: c.upload[id], Stream: 1}
			n.childHeard, n.childFwd = map[proc.ID]time.Duration{}, map[proc.ID]int{}
			for _, ch := range n.children {
				n.childFwd[ch] = min(4, int(c.upload[ch]))
			}
			if n.parent != proc.None || id == ESMSource {
				n.rate, n.delay = 1, time.Duration(10*len(n.path))
			}
		}
		x := net.nodes[c.asking]
		oldParent := x.parent
		x.round, x.tries, x.probes = 1, 1, map[proc.ID]time.Duration{ESMSource: 0}
		x.improving = oldParent != proc.None
		switchEnv{net, c.asking}.Send(ESMSource, Probe{Round: 1, Forwards: x.fullRate()})
		net.run()
		n1 := net.nodes[1]
		t.Logf("%s, flaw %d: node 5's parent %v, node 1's %v, the source's children %v", c.name, c.f, x.parent, n1.parent, net.nodes[0].children)
		if cy := net.cycle(); cy != nil {
			t.Errorf("%s, flaw %d: cycle %v", c.name, c.f, cy)
		}
		if c.f == keepsPlaces {
			if x.parent != oldParent {
				t.Errorf("%s, without displacement: node 5's parent %v, want %v kept", c.name, x.parent, oldParent)
			}
			continue
		}
		if x.parent != ESMSource || n1.parent != c.asking || !slices.Equal(net.nodes[0].children, []proc.ID{2, 3, 4, 5}) ||
			!slices.Equal(x.children, []proc.ID{1}) || !slices.Equal(n1.path, []proc.ID{0, 5}) {
			t.Errorf("%s: node 5's parent %v (children %v), node 1's %v (path %v), the source's children %v; want 0 ← 5 ← 1 and 1's place given to 5",
				c.name, x.parent, x.children, n1.parent, n1.path, net.nodes[0].children)
		}
		if len(c.parent) > 6 && net.nodes[6].parent != 1 {
			t.Errorf("%s: node 6's parent %v, want 1 (moved down with it)", c.name, net.nodes[6].parent)
		}
	}
}

// TestESMDisplacedChildMissesNoPacket: node 5 (10 Mbit/s, below 0 ← 2 ←
// 6) switches up into the place of the source's weakest child, node 1,
// which goes below it. It had packet 14 from its old parent already,
// before the switch; the source, having given 1's place to 5, sends 5
// packet 14 instead of 1. Node 5 passes that second copy on to node 1,
// which would otherwise never get it (a duplicate is forwarded to no
// one); with the tree intact, esm-delivery demands every packet.
func TestESMDisplacedChildMissesNoPacket(t *testing.T) {
	upload := []float64{4, 0.5, 1, 0.5, 0.5, 10, 1}
	net := newSwitchNet([]proc.ID{proc.None, 0, 0, 0, 0, 6, 2}, sound)
	for id, n := range net.nodes {
		n.cfg = ESMConfig{Degree: 4, Sample: 4, Upload: upload[id], Stream: 1}
		n.childHeard, n.childFwd = map[proc.ID]time.Duration{}, map[proc.ID]int{}
		for _, ch := range n.children {
			n.childFwd[ch] = min(4, int(upload[ch]))
		}
		n.rate, n.delay = 1, time.Duration(10*len(n.path))
	}
	x := net.nodes[5]
	x.Receive(switchEnv{net, 5}, 6, Packet{ID: 14, Depth: 3}) // from the old parent, before the switch
	x.round, x.tries, x.probes, x.improving = 1, 1, map[proc.ID]time.Duration{ESMSource: 0}, true
	switchEnv{net, 5}.Send(ESMSource, Probe{Round: 1, Forwards: x.fullRate()})
	net.run()
	if x.parent != ESMSource || net.nodes[1].parent != 5 {
		t.Fatalf("node 5's parent %v, node 1's %v: want 0 ← 5 ← 1", x.parent, net.nodes[1].parent)
	}
	switchEnv{net, ESMSource}.Send(5, Packet{ID: 14, Depth: 1}) // the source's copy, sent to 5 instead of 1
	net.run()
	if !net.nodes[1].seen[14] {
		t.Errorf("node 1, displaced below node 5, never received packet 14")
	}
}
