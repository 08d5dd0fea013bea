package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/trace"
)

// Membership that changes during a run: processes absent at the start that
// join later, graceful leaves, and churn — joins, failures and leaves
// arriving as Poisson processes, the model of peer-to-peer measurement
// studies (Rhea et al., "Handling Churn in a DHT", 2004) and of the SWIM
// and Pastry evaluations.

// A process's membership state. The zero value is present (or crashed,
// when up is false): runs without joins and leaves never set another.
const (
	stMember uint8 = iota // present, or crashed if !up
	stAbsent              // has not joined yet
	stLeft                // left gracefully
)

// Churn is a seeded random schedule of membership changes between From and
// Until: joins, failures (crash-stop) and graceful leaves, each a Poisson
// process with the given rate in events per second of virtual time. A join
// brings in a process that is not present (absent, left or failed: it
// comes back with fresh state, as a new member); a failure or a leave
// picks a present one. Choices are uniform and made with the run's seed, so
// the same seed gives the same schedule.
type Churn struct {
	Join, Fail, Leave float64
	From, Until       time.Duration
}

// maxChurnEvents bounds the expected number of churn events of a run, so
// that no configuration can exhaust memory before the run starts.
const maxChurnEvents = 10_000_000

func (c *Churn) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"join", c.Join}, {"fail", c.Fail}, {"leave", c.Leave}} {
		if !(r.v >= 0) || math.IsInf(r.v, 0) {
			return fmt.Errorf("%s rate %v/s: must be a finite number >= 0", r.name, r.v)
		}
	}
	if c.From < 0 {
		return fmt.Errorf("from %v: must not be negative", c.From)
	}
	if c.Until <= c.From {
		return fmt.Errorf("until %v: must be after from (%v)", c.Until, c.From)
	}
	if n := (c.Join + c.Fail + c.Leave) * (c.Until - c.From).Seconds(); n > maxChurnEvents {
		return fmt.Errorf("%.0f expected events (rates × duration): at most %d", n, maxChurnEvents)
	}
	return nil
}

// idSet is a set of process IDs with O(1) insert, delete and uniform draw.
type idSet struct {
	ids []int32
	pos []int32 // index in ids + 1, per process; 0: not in the set
}

func newIDSet(n int) *idSet { return &idSet{pos: make([]int32, n)} }

func (s *idSet) has(id int32) bool { return s.pos[id] != 0 }

func (s *idSet) add(id int32) {
	if s.pos[id] == 0 {
		s.ids = append(s.ids, id)
		s.pos[id] = int32(len(s.ids))
	}
}

func (s *idSet) remove(id int32) {
	i := s.pos[id] - 1
	if i < 0 {
		return
	}
	last := s.ids[len(s.ids)-1]
	s.ids[i] = last
	s.pos[last] = i + 1
	s.ids = s.ids[:len(s.ids)-1]
	s.pos[id] = 0
}

// draw returns a uniformly chosen member other than not, or -1.
func (s *idSet) draw(r *rand.Rand, not int32) int32 {
	n := len(s.ids)
	if not >= 0 && s.has(not) {
		n--
	}
	if n <= 0 {
		return -1
	}
	i := r.IntN(n)
	if s.ids[i] == not { // not is in the set: skip it by taking the last
		i = len(s.ids) - 1
	}
	return s.ids[i]
}

// membership decides who is present at the start and expands the churn
// into faults. It returns nil when the run's membership never changes, so
// that such runs pay nothing.
func (s *Sim) membership(cfg *Config) []Fault {
	dynamic := cfg.Initial > 0 || len(cfg.Churn) > 0
	for _, f := range cfg.Faults {
		dynamic = dynamic || f.Kind == Join || f.Kind == Leave
	}
	if !dynamic {
		return nil
	}
	n := s.n
	s.memRand = rand.New(rand.NewPCG(cfg.Seed, 0x6d656d62657273)) // "members"
	absent := make([]bool, n)
	if cfg.Initial > 0 {
		for i := cfg.Initial; i < n; i++ {
			absent[i] = true
		}
	}
	// A process whose first membership fault is a join is absent until it.
	first := map[proc.ID]*Fault{}
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		if f.Kind != Join && f.Kind != Leave && f.Kind != Crash {
			continue
		}
		if g, ok := first[f.Node]; !ok || f.At < g.At {
			first[f.Node] = f
		}
	}
	for id, f := range first {
		if f.Kind == Join {
			absent[id] = true
		}
	}
	s.present = newIDSet(n)
	for i := range n {
		if absent[i] {
			s.nodes[i].state = stAbsent
		}
	}
	return s.expandChurn(cfg.Churn, absent)
}

// expandChurn draws the churn's events: the superposition of the Poisson
// processes, in time order, each assigned a process by replaying the
// membership the churn itself creates.
func (s *Sim) expandChurn(churn []Churn, absent []bool) []Fault {
	if len(churn) == 0 {
		return nil
	}
	type ev struct {
		at   time.Duration
		kind FaultKind
	}
	var evs []ev
	for _, c := range churn {
		total := c.Join + c.Fail + c.Leave
		if total == 0 {
			continue
		}
		t := float64(c.From)
		for {
			t += s.memRand.ExpFloat64() / total * float64(time.Second)
			if t >= float64(c.Until) {
				break
			}
			u := s.memRand.Float64() * total
			k := Join
			switch {
			case u < c.Fail:
				k = Crash
			case u < c.Fail+c.Leave:
				k = Leave
			}
			evs = append(evs, ev{time.Duration(t), k})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	in, out := newIDSet(len(absent)), newIDSet(len(absent))
	for i, a := range absent {
		if a {
			out.add(int32(i))
		} else {
			in.add(int32(i))
		}
	}
	faults := make([]Fault, 0, len(evs))
	for _, e := range evs {
		from, to := in, out
		if e.kind == Join {
			from, to = out, in
		}
		id := from.draw(s.memRand, -1)
		if id < 0 {
			continue // nobody to join, or nobody left to fail
		}
		from.remove(id)
		to.add(id)
		faults = append(faults, Fault{Kind: e.kind, Node: proc.ID(id), At: e.at})
	}
	return faults
}

// join brings process id into the run.
func (s *Sim) join(id proc.ID) {
	nd := &s.nodes[id]
	if nd.up {
		return
	}
	nd.up, nd.state = true, stMember
	nd.inc++
	s.st.Joins++
	contact := proc.None
	if c := s.present.draw(s.memRand, int32(id)); c >= 0 {
		contact = proc.ID(c)
	}
	s.present.add(int32(id))
	nd.p = s.cfg.New(id, s.n)
	if nd.p == nil {
		panic(fmt.Sprintf("constructor returned a nil process for p%d", id))
	}
	s.tick(int32(id))
	if s.traced(trace.Join) {
		s.record(trace.Join, int32(id), func(e *trace.Event) {
			if contact != proc.None {
				e.Peer = int32(contact)
			}
		})
	}
	if j, ok := nd.p.(proc.Joiner); ok {
		s.call(int32(id), func(_ proc.Process, env proc.Env) { j.Join(env, contact) })
	} else {
		s.call(int32(id), func(p proc.Process, env proc.Env) { p.Start(env) })
	}
}

// leave gives process id its Leave input, then takes it out of the run.
func (s *Sim) leave(id proc.ID) {
	nd := &s.nodes[id]
	if !nd.up {
		return
	}
	s.input(&item{kind: evInput, val: proc.Leave{}, node: int32(id)})
	nd = &s.nodes[id]
	s.st.Leaves++
	s.tick(int32(id))
	if s.traced(trace.Leave) {
		s.record(trace.Leave, int32(id), nil)
	}
	nd.up, nd.p, nd.state = false, nil, stLeft
	nd.inc++
	if s.present != nil {
		s.present.remove(int32(id))
	}
}

// goneReason says why a message to a process that is not up is lost.
func (s *Sim) goneReason(id int32) string {
	switch s.nodes[id].state {
	case stAbsent:
		return "receiver not joined"
	case stLeft:
		return "receiver left"
	}
	return "receiver crashed"
}
