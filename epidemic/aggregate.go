package epidemic

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Aggregates over a live cluster's members: push-sum (Kempe, Dobra &
// Gehrke 2003; pushsum.go has the algorithm alone) run as queries by the
// members algorithm, over the members SWIM holds alive. Each member keeps
// readings of its own (Reading: a node's load, free disk, a sensor),
// which are not replicated; a Query at any member asks for the average,
// sum or count of one reading over all members, and no member ever holds
// all the readings:
//
//	on Query(q) at the origin, or the first Mass of q at any member:
//	    join q with this member's mass:
//	        average:  s = x, w = 1              (s = w = 0 without a reading)
//	        sum:      s = x, w = 1 at the origin, 0 elsewhere
//	        count:    s = 1 with a reading, w = 1 at the origin, 0 elsewhere
//	every round of q (a quarter of the origin's SWIM period):
//	    send (½s, ½w) to a random member held alive; keep the other half
//	on Mass(q, ŝ, ŵ): s += ŝ, w += ŵ
//	after AggregateRounds(n) rounds: drop q; the origin outputs s/w
//
// A member joins a query when the query's mass first reaches it, so the
// query itself spreads as a push rumor does (every member holds it after
// about log₂ n + ln n rounds) while the mass mixes; Kempe et al. bound the
// rounds to a relative error ε with probability 1 − δ by O(log n + log
// 1/ε + log 1/δ), and AggregateRounds gives 3⌈log₂(n+1)⌉ + 30: within
// 0.1% of the aggregate in every run of the tests (up to 32 members).
//
// Assumptions: those of push-sum — a share lost by the network or with a
// crashed member takes its mass with it. The average, a ratio of two
// masses spread alike, stays close; a sum or a count, whose one unit of
// weight starts at the origin, comes out wrong — mostly high, when a
// share lost early takes much of the weight. Members that join the cluster during a query, or whose rounds
// ended before a late share arrived, miss part of it.
//
// A query runs at its origin's pace: its shares carry the length of a
// round at the origin, and every member takes its rounds of that query at
// that length. Were each member to use its own, an origin configured with
// a shorter gossip period would end its rounds while the others had
// taken a fraction of theirs, before the mass had mixed.
//
// Cost: one message of two numbers per member, query and round.

// Reading sets this member's own reading of Name (an input; not
// replicated). NaN deletes it.
type Reading struct {
	Name string  `json:"name"`
	X    float64 `json:"x"`
}

// Query asks for Agg ("average", "sum" or "count") of the members'
// readings of Name; ID, chosen by the caller, tells this member's queries
// apart, and its Estimate carries it.
type Query struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	Agg  string `json:"agg"`
}

// Mass is a share of a query's push-sum mass.
type Mass struct {
	Origin proc.ID `json:"origin"`
	ID     uint32  `json:"id"`
	Name   string  `json:"name"`
	Agg    string  `json:"agg"`
	S      float64 `json:"s"`
	W      float64 `json:"w"`
	// Every is the length of the query's rounds, chosen by its origin (0
	// from a sender that does not say: the receiver's own).
	Every time.Duration `json:"every,omitempty"`
}

// Estimate is the answer to a Query, output at its origin. None says
// there is no estimate: no member contributed weight (an average of a
// reading nobody has), or, with Busy, the origin was in MaxQueries
// queries already and did not start this one.
type Estimate struct {
	ID     uint32  `json:"id"`
	Name   string  `json:"name"`
	Agg    string  `json:"agg"`
	Value  float64 `json:"value"`
	None   bool    `json:"none,omitempty"`
	Busy   bool    `json:"busy,omitempty"`
	Rounds int     `json:"rounds"`
}

func (Reading) Kind() string  { return "reading" }
func (Query) Kind() string    { return "query" }
func (Mass) Kind() string     { return "mass" }
func (Estimate) Kind() string { return "estimate" }

func (r Reading) String() string { return "reading " + r.Name + "=" + fmtFloat(r.X) }
func (q Query) String() string {
	return "query " + q.Agg + " " + q.Name + " #" + strconv.Itoa(int(q.ID))
}
func (m Mass) String() string {
	return "MASS(" + m.Agg + " " + m.Name + "@p" + strconv.Itoa(int(m.Origin)) + "#" + strconv.Itoa(int(m.ID)) + ",s=" + fmtFloat(m.S) + ",w=" + fmtFloat(m.W) + ")"
}
func (e Estimate) String() string {
	if e.None {
		return "estimate " + e.Agg + " " + e.Name + ": none"
	}
	return "estimate " + e.Agg + " " + e.Name + " = " + fmtFloat(e.Value)
}

// Bounds: a member's readings, and the queries it takes part in at once
// (the mass of a query beyond them is dropped, and lost).
const (
	MaxReadings = 64
	MaxQueries  = 64
	MaxName     = 128
)

// ValidAgg says whether agg is an aggregate a Query can ask for.
func ValidAgg(agg string) bool { return agg == "average" || agg == "sum" || agg == "count" }

// AggregateRounds is how many aggregation rounds a member takes part in a
// query among n members.
func AggregateRounds(n int) int { return 3*bits.Len(uint(n)) + 30 }

// aggTick is the tag of a query's round timer.
type aggTick struct {
	origin proc.ID
	id     uint32
}

func (t aggTick) String() string {
	return "aggregate p" + strconv.Itoa(int(t.origin)) + "#" + strconv.Itoa(int(t.id))
}

// computation is a member's part in one query.
type computation struct {
	origin proc.ID
	id     uint32
	name   string
	agg    string
	s, w   float64
	every  time.Duration // the length of a round, chosen by the origin
	left   int           // rounds still to take part in
	rounds int           // rounds taken part in
}

// aggregates is the members algorithm's query half.
type aggregates struct {
	readings map[string]float64
	running  []*computation // in the order joined
	done     []doneQuery    // recently finished, so that late mass is not taken for a new query
}

type doneQuery struct {
	origin proc.ID
	id     uint32
}

const maxDone = 256

func (a *aggregates) setReading(r Reading) {
	if len(r.Name) == 0 || len(r.Name) > MaxName {
		return
	}
	if math.IsNaN(r.X) {
		delete(a.readings, r.Name)
		return
	}
	if math.IsInf(r.X, 0) {
		return
	}
	if _, ok := a.readings[r.Name]; !ok && len(a.readings) >= MaxReadings {
		return
	}
	if a.readings == nil {
		a.readings = map[string]float64{}
	}
	a.readings[r.Name] = r.X
}

// join makes this member take part in a query with its own mass.
// Its rounds are every long (0: this member's own length).
func (a *aggregates) join(env proc.Env, m *members, origin proc.ID, id uint32, name, agg string, every time.Duration) *computation {
	if len(a.running) >= MaxQueries || !ValidAgg(agg) || len(name) == 0 || len(name) > MaxName {
		return nil
	}
	if every <= 0 {
		every = aggPeriod(m)
	}
	x, has := a.readings[name]
	c := &computation{origin: origin, id: id, name: name, agg: agg, every: min(max(every, time.Millisecond), time.Minute),
		left: AggregateRounds(m.swim.size())}
	switch agg {
	case "average":
		if has {
			c.s, c.w = x, 1
		}
	case "sum":
		if has {
			c.s = x
		}
	case "count":
		if has {
			c.s = 1
		}
	}
	if agg != "average" && origin == env.Self() {
		c.w = 1
	}
	a.running = append(a.running, c)
	env.SetTimer(c.every, aggTick{origin, id})
	return c
}

// aggPeriod is the length of the rounds of the queries this member
// starts: a quarter of its protocol period.
func aggPeriod(m *members) time.Duration { return max(m.swim.p.Period/4, time.Millisecond) }

func (a *aggregates) find(origin proc.ID, id uint32) *computation {
	i := slices.IndexFunc(a.running, func(c *computation) bool { return c.origin == origin && c.id == id })
	if i < 0 {
		return nil
	}
	return a.running[i]
}

// query starts a query at its origin.
func (a *aggregates) query(env proc.Env, m *members, q Query) {
	if a.find(env.Self(), q.ID) != nil {
		return // a repeated ID: the query is running
	}
	if a.join(env, m, env.Self(), q.ID, q.Name, q.Agg, 0) == nil {
		env.Output(Estimate{ID: q.ID, Name: q.Name, Agg: q.Agg, None: true, Busy: len(a.running) >= MaxQueries})
	}
}

// onMass adds a share, joining its query first if this member has not.
func (a *aggregates) onMass(env proc.Env, m *members, mass Mass) {
	c := a.find(mass.Origin, mass.ID)
	if c == nil {
		if slices.Contains(a.done, doneQuery{mass.Origin, mass.ID}) {
			// Late: this member's part is over (its rounds ran faster,
			// or it counted fewer members). Dropping the share would
			// bias the answer — push-sum is exact only while the mass
			// is conserved (Kempe et al. 2003) — so it goes to the
			// origin, which adds it if it is still asking; the origin
			// drops its own late shares.
			if mass.Origin != env.Self() {
				env.Send(mass.Origin, mass)
			}
			return
		}
		if c = a.join(env, m, mass.Origin, mass.ID, mass.Name, mass.Agg, mass.Every); c == nil {
			return
		}
	}
	c.s += mass.S
	c.w += mass.W
}

// tick is a round of one query: it sends half its mass to a random live
// member, and ends when its rounds are over.
func (a *aggregates) tick(env proc.Env, m *members, t aggTick) {
	c := a.find(t.origin, t.id)
	if c == nil {
		return
	}
	if q := m.swim.randomMembers(env, 1, proc.None); len(q) > 0 {
		c.s, c.w = c.s/2, c.w/2
		env.Send(q[0], Mass{Origin: c.origin, ID: c.id, Name: c.name, Agg: c.agg, S: c.s, W: c.w, Every: c.every})
	}
	c.left--
	c.rounds++
	if c.left > 0 {
		env.SetTimer(c.every, t)
		return
	}
	if c.origin == env.Self() {
		e := Estimate{ID: c.id, Name: c.name, Agg: c.agg, Rounds: c.rounds, None: c.w <= 0}
		if !e.None {
			e.Value = c.s / c.w
		}
		env.Output(e)
	}
	a.running = slices.DeleteFunc(a.running, func(r *computation) bool { return r == c })
	a.done = append(a.done, doneQuery{c.origin, c.id})
	if len(a.done) > maxDone {
		a.done = a.done[1:]
	}
}
