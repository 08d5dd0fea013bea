package multicast

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Multicast asks a process to multicast Body to Group ("" is "all").
type Multicast struct {
	Group string `json:"group,omitempty"`
	Body  string `json:"body"`
}

func (Multicast) Kind() string { return "multicast" }

func (m Multicast) String() string {
	return "multicast " + groupOr(m.Group) + " " + strconv.Quote(m.Body)
}

// Sent reports the message a process multicast: its identity (Origin,
// Seq, Group), the group's members when it was sent, and the body.
type Sent struct {
	Origin  proc.ID   `json:"origin"`
	Seq     uint64    `json:"seq"`
	Group   string    `json:"group"`
	Members []proc.ID `json:"members"`
	Body    string    `json:"body"`
}

func (Sent) Kind() string     { return "sent" }
func (s Sent) String() string { return "multicast " + label(s.Origin, s.Seq, s.Group) }

// Delivered reports that the process delivered a message to the
// application.
type Delivered struct {
	Origin proc.ID `json:"origin"`
	Seq    uint64  `json:"seq"`
	Group  string  `json:"group"`
	Body   string  `json:"body"`
}

func (Delivered) Kind() string     { return "deliver" }
func (d Delivered) String() string { return "deliver " + label(d.Origin, d.Seq, d.Group) }

// Refused reports a Multicast input the process did not carry out.
type Refused struct {
	Group  string `json:"group"`
	Body   string `json:"body"`
	Reason string `json:"reason"`
}

func (Refused) Kind() string     { return "refused" }
func (r Refused) String() string { return "refused: " + r.Reason }

// Holdback reports that the process's hold-back queue reached a new
// largest length: Len messages received and not yet deliverable.
type Holdback struct {
	Len int `json:"len"`
}

func (Holdback) Kind() string     { return "holdback" }
func (h Holdback) String() string { return "hold-back " + strconv.Itoa(h.Len) }

// label names a message as traces show it: "p2#3" in group all, "p2#3/g1"
// elsewhere.
func label(origin proc.ID, seq uint64, group string) string {
	s := origin.String() + "#" + strconv.FormatUint(seq, 10)
	if group != "all" {
		s += "/" + group
	}
	return s
}

func groupOr(g string) string {
	if g == "" {
		return "all"
	}
	return g
}

// Inputs builds the family's inputs by name, for scenario files:
//
//	multicast hello world        body "hello world" to group all
//	multicast @g1 hello          body "hello" to group g1
func Inputs(name string, args []string) (proc.Input, error) {
	if name != "multicast" {
		return nil, fmt.Errorf("unknown input %q (want multicast [@GROUP] BODY...)", name)
	}
	m := Multicast{Group: "all"}
	if len(args) > 0 && strings.HasPrefix(args[0], "@") {
		m.Group = strings.TrimPrefix(args[0], "@")
		if !slices.Contains(GroupNames, m.Group) {
			return nil, fmt.Errorf("multicast: unknown group %q (known: %s)", m.Group, strings.Join(GroupNames, ", "))
		}
		args = args[1:]
	}
	m.Body = strings.Join(args, " ")
	return m, nil
}

// Group is a named set of processes. Members are in ascending order. An
// open group accepts multicasts from processes outside it; a closed one
// does not.
type Group struct {
	Name    string
	Members []proc.ID
	Open    bool
}

// Has reports whether p is a member.
func (g Group) Has(p proc.ID) bool {
	_, ok := slices.BinarySearch(g.Members, p)
	return ok
}

// GroupNames are the groups of every run, in the order Groups returns them.
var GroupNames = []string{"all", "g1", "g2"}

// Groups returns the groups of an n-process run, by a fixed rule: "all" is
// every process, closed; "g1" is p0..p⌊n/2⌋, closed; "g2" is
// p(⌊n/2⌋−1)..p(n−1) (from p0 when n < 2), open. For n ≥ 4, g1 and g2
// overlap in exactly p(⌊n/2⌋−1) and p⌊n/2⌋; with 8 processes, g1 =
// {p0..p4} and g2 = {p3..p7}.
func Groups(n int) []Group {
	span := func(lo, hi int) []proc.ID {
		var ids []proc.ID
		for p := max(lo, 0); p <= min(hi, n-1); p++ {
			ids = append(ids, proc.ID(p))
		}
		return ids
	}
	return []Group{
		{Name: "all", Members: span(0, n-1)},
		{Name: "g1", Members: span(0, n/2)},
		{Name: "g2", Members: span(n/2-1, n-1), Open: true},
	}
}

// groupTable is a process's view of the groups, by name.
type groupTable []Group

func (t groupTable) lookup(name string) (Group, bool) {
	name = groupOr(name)
	for _, g := range t {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// process reports whether p is one of the run's processes (a member of
// "all"): a possible origin of a message to any group, open ones too.
func (t groupTable) process(p proc.ID) bool {
	all, ok := t.lookup("all")
	return ok && all.Has(p)
}

// accept resolves a Multicast input at process self: the group to send to,
// or false after a Refused output. closedOnly treats every group as closed.
func (t groupTable) accept(env proc.Env, in Multicast, closedOnly bool) (Group, bool) {
	g, ok := t.lookup(in.Group)
	if !ok {
		env.Output(Refused{Group: in.Group, Body: in.Body, Reason: fmt.Sprintf("no group %q", in.Group)})
		return Group{}, false
	}
	if !g.Has(env.Self()) && (!g.Open || closedOnly) {
		why := "a closed group"
		if g.Open {
			why = "treated as closed by this algorithm"
		}
		env.Output(Refused{Group: g.Name, Body: in.Body, Reason: fmt.Sprintf("%s is not a member of %s, %s", env.Self(), g.Name, why)})
		return Group{}, false
	}
	return g, true
}

// others calls f for every member of g but self, in ascending order.
func (g Group) others(self proc.ID, f func(p proc.ID)) {
	for _, p := range g.Members {
		if p != self {
			f(p)
		}
	}
}

// msgKey is a message's identity.
type msgKey struct {
	Group  string
	Origin proc.ID
	Seq    uint64
}

func (k msgKey) String() string { return label(k.Origin, k.Seq, k.Group) }

// counters numbers a process's multicasts per group: 1, 2, 3 ...
type counters map[string]uint64

func (c counters) next(group string) uint64 {
	c[group]++
	return c[group]
}

// sent outputs Sent for a new message of origin self to g.
func sent(env proc.Env, g Group, seq uint64, body string) msgKey {
	env.Output(Sent{Origin: env.Self(), Seq: seq, Group: g.Name, Members: slices.Clone(g.Members), Body: body})
	return msgKey{Group: g.Name, Origin: env.Self(), Seq: seq}
}

// deliver outputs Delivered.
func deliver(env proc.Env, k msgKey, body string) {
	env.Output(Delivered{Origin: k.Origin, Seq: k.Seq, Group: k.Group, Body: body})
}

// MaxHoldbackBytes bounds the bodies a process holds back, over all its
// groups. A gap that never fills (a member that restarted without the
// group's state, a sequencer that died) would otherwise make a member
// hold every later message for ever.
const MaxHoldbackBytes = 64 << 20

// Overflow reports that the process dropped a message of a group instead
// of holding it back, because its hold-back queue held MaxHoldbackBytes of
// bodies already (Held): the process misses that message, and, for the
// orders that wait for every message, every later one of its sender or of
// the group — it can no longer deliver the group's messages. It keeps
// taking part in the protocol, so that the other members are not held up.
// A process reports every message it drops.
type Overflow struct {
	Group  string  `json:"group"`
	Origin proc.ID `json:"origin"`
	Seq    uint64  `json:"seq"`
	Held   int     `json:"held"`
}

func (Overflow) Kind() string { return "holdback-overflow" }
func (o Overflow) String() string {
	return "hold-back overflow: dropped " + label(o.Origin, o.Seq, o.Group) + " (" + strconv.Itoa(o.Held) + " bytes held)"
}

// holdback tracks the largest hold-back queue of a process and reports
// each new largest length; it also keeps the bodies held back within
// MaxHoldbackBytes (hold).
type holdback struct {
	max   int
	bytes int // bodies held back now
	limit int // 0: MaxHoldbackBytes (tests set less)
}

// hold accounts for body, about to be held back as message k, and reports
// whether it fits: if it would take the bodies held back past the budget,
// the process must drop the message instead, and says so (Overflow). A
// message delivered at once (deliverable),
// or the process's own, always fits: it fills a gap, or it is bounded by
// the window of multicasts under way.
func (h *holdback) hold(env proc.Env, k msgKey, body string, deliverable bool) bool {
	limit := h.limit
	if limit == 0 {
		limit = MaxHoldbackBytes
	}
	if !deliverable && h.bytes+len(body) > limit {
		env.Output(Overflow{Group: k.Group, Origin: k.Origin, Seq: k.Seq, Held: h.bytes})
		return false
	}
	h.bytes += len(body)
	return true
}

// release accounts for a body that leaves the hold-back queue.
func (h *holdback) release(body string) { h.bytes -= len(body) }

func (h *holdback) note(env proc.Env, n int) {
	if n > h.max {
		h.max = n
		env.Output(Holdback{Len: n})
	}
}

// Algorithms is the family's registry, in the textbooks' order; each
// algorithm's file adds its entry with register.
var Algorithms []proc.Algorithm

var order = []string{"basic", "reliable", "reliable-nack", "fifo", "causal", "total-sequencer", "total-isis", "total-lamport", "fifo-total", "causal-total"}

// Checks are the checkers every run of the family is judged by.
var Checks = []string{"integrity", "no-duplicates", "mc-integrity", "mc-validity", "mc-agreement", "fifo-order", "causal-order", "total-order"}

func register(as ...proc.Algorithm) {
	for _, a := range as {
		a.Family = "multicast"
		if a.Inputs == nil {
			a.Inputs = Inputs
		}
		if a.Checks == nil {
			a.Checks = Checks
		}
		if a.Scenario == "" {
			a.Scenario = defaultScenario
		}
		Algorithms = append(Algorithms, a)
	}
	slices.SortStableFunc(Algorithms, func(a, b proc.Algorithm) int { return rank(a.Name) - rank(b.Name) })
}

func rank(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// defaultScenario: four processes on a jittery network, so that copies of
// concurrent multicasts arrive in different orders at different members.
const defaultScenario = `nodes: 4
network:
  latency: uniform:500us,3ms
`

func uitoa(x uint64) string { return strconv.FormatUint(x, 10) }
