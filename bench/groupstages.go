package bench

import (
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/proc"
)

// With GroupConfig.Stages, the replicated group's benchmark follows every
// message measured along its way through the log (consensus.Config.Probe
// and the members' outputs): when the leader appended its entry, sent it
// to the last follower, when the last follower accepted and synced it,
// when the leader synced it and heard the last acknowledgement, when it
// was committed, when the last follower learned so, when the last member
// applied it and when the last member's listener had it. The group is
// delivered only once all five have, so each stage is its slowest
// member's.

// StagePoint is one stage's latency, from the Multicast call (p50, p99),
// and its step from the stage before (the difference, per message).
type StagePoint struct {
	Stage     string  `json:"stage"`
	Messages  int     `json:"messages"` // measured messages that reached the stage
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	StepP50Ms float64 `json:"step_p50_ms"`
	StepP99Ms float64 `json:"step_p99_ms"`
}

// stageCount sizes the per-entry tables: consensus.Stage values are 1 to
// stageCount-1.
const stageCount = int(consensus.StageApplied) + 1

// entryTimes is when an entry reached each stage, by stage and by the
// server concerned (the follower for StageSent and StageMatched), in
// nanoseconds since the recorder started (0: not seen).
type entryTimes [stageCount][GroupNodes]int64

// stageRecorder keeps every entry's times.
type stageRecorder struct {
	start time.Time

	mu      sync.Mutex
	upto    [GroupNodes][stageCount][GroupNodes]uint64 // the last entry marked, by server, stage and slot
	entries []entryTimes                               // by index
	samples []stageSample
	indexOf map[msgKey]uint64 // each message's entry
}

// msgKey is a message's origin (node) and its number there.
type msgKey struct {
	origin proc.ID
	seq    uint64
}

// stageSample is a message measured: sent and delivered at the last
// member (since start).
type stageSample struct {
	msgKey
	sent, done int64
}

func newStageRecorder() *stageRecorder {
	return &stageRecorder{start: time.Now(), indexOf: map[msgKey]uint64{}}
}

// output notes the entry of each message a member delivers (its
// service's outputs).
func (s *stageRecorder) output(o proc.Output) {
	d, ok := o.(consensus.Delivered)
	if !ok || d.Index == 0 {
		return
	}
	s.mu.Lock()
	for _, m := range d.Messages {
		s.indexOf[msgKey{proc.ID(m.Origin & 0xffff), m.Seq}] = d.Index
	}
	s.mu.Unlock()
}

func (s *stageRecorder) since(t time.Time) int64 { return int64(t.Sub(s.start)) }

// probe is the servers' consensus.Config.Probe.
func (s *stageRecorder) probe(p consensus.ProbePoint) {
	now := s.since(time.Now())
	if int(p.Server) >= GroupNodes || int(p.Peer) >= GroupNodes || p.Server < 0 || p.Peer < 0 || int(p.Stage) >= stageCount {
		return
	}
	slot := p.Server
	if p.Stage == consensus.StageSent || p.Stage == consensus.StageMatched {
		slot = p.Peer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := &s.upto[p.Server][p.Stage][slot]
	if p.Upto <= *u {
		return
	}
	if need := int(p.Upto) + 1; need > len(s.entries) {
		s.entries = slices.Grow(s.entries, need-len(s.entries))[:need]
	}
	for i := *u + 1; i <= p.Upto; i++ {
		// A leader's first append after its election covers its whole
		// log: the entries it accepted as a follower are another
		// leader's appends, not its own.
		if p.Stage == consensus.StageAppended && s.entries[i][consensus.StageAccepted][p.Server] != 0 {
			continue
		}
		if t := &s.entries[i][p.Stage][slot]; *t == 0 {
			*t = now
		}
	}
	*u = p.Upto
}

// sample records a message delivered at every member.
func (s *stageRecorder) sample(origin proc.ID, seq uint64, sent, done time.Time) {
	s.mu.Lock()
	s.samples = append(s.samples, stageSample{msgKey: msgKey{origin, seq}, sent: s.since(sent), done: s.since(done)})
	s.mu.Unlock()
}

// figures sums up the samples, stage by stage, and counts those left
// out: their entry's index was appended by more than one leader (see
// GroupPoint.StagesLeftOut).
func (s *stageRecorder) figures() (out []StagePoint, leftOut int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type stage struct {
		name string
		at   func(e *entryTimes, leader int, m stageSample) int64 // 0: unknown
	}
	// latest is the time the last of the servers (all but the leader if
	// followers) reached stage st.
	latest := func(st consensus.Stage, followers bool) func(e *entryTimes, leader int, m stageSample) int64 {
		return func(e *entryTimes, leader int, _ stageSample) int64 {
			var t int64
			for p, at := range e[st] {
				if followers && p == leader {
					continue
				}
				if at == 0 {
					return 0
				}
				t = max(t, at)
			}
			return t
		}
	}
	atLeader := func(st consensus.Stage) func(e *entryTimes, leader int, m stageSample) int64 {
		return func(e *entryTimes, leader int, _ stageSample) int64 { return e[st][leader] }
	}
	stages := []stage{
		{"appended at the leader", atLeader(consensus.StageAppended)},
		{"sent to the last follower", latest(consensus.StageSent, true)},
		{"accepted by the last follower", latest(consensus.StageAccepted, true)},
		{"synced by the last follower", latest(consensus.StageSynced, true)},
		{"synced by the leader", atLeader(consensus.StageSynced)},
		{"acknowledged by the last follower", latest(consensus.StageMatched, true)},
		{"committed at the leader", atLeader(consensus.StageCommitted)},
		{"commit known to the last follower", latest(consensus.StageCommitKnown, true)},
		{"applied by the last member", latest(consensus.StageApplied, false)},
		{"delivered to the last listener", func(_ *entryTimes, _ int, m stageSample) int64 { return m.done }},
	}
	cum := make([][]time.Duration, len(stages))
	step := make([][]time.Duration, len(stages))
	viaLeader, viaFollower := []time.Duration{}, []time.Duration{}
	for _, m := range s.samples {
		index := s.indexOf[m.msgKey]
		if index == 0 || int(index) >= len(s.entries) {
			continue
		}
		e := &s.entries[index]
		// The entry's leader: the server that appended it. An index that
		// more than one leader appended (an election meanwhile) mixes
		// their entries' times, and is left out.
		leader := -1
		for p, at := range e[consensus.StageAppended] {
			if at != 0 {
				if leader >= 0 {
					leader = -2
					break
				}
				leader = p
			}
		}
		if leader == -2 {
			leftOut++
		}
		if leader < 0 {
			continue
		}
		prev := m.sent
		for i, st := range stages {
			t := st.at(e, leader, m)
			if t == 0 {
				continue
			}
			cum[i] = append(cum[i], time.Duration(t-m.sent))
			step[i] = append(step[i], time.Duration(t-prev))
			prev = t
			if i == 0 {
				if int(m.origin) == leader {
					viaLeader = append(viaLeader, time.Duration(t-m.sent))
				} else {
					viaFollower = append(viaFollower, time.Duration(t-m.sent))
				}
			}
		}
	}
	point := func(name string, c, d []time.Duration) StagePoint {
		slices.Sort(c)
		slices.Sort(d)
		return StagePoint{Stage: name, Messages: len(c), P50Ms: millis(percentile(c, 50)), P99Ms: millis(percentile(c, 99)),
			StepP50Ms: millis(percentile(d, 50)), StepP99Ms: millis(percentile(d, 99))}
	}
	for i, st := range stages {
		out = append(out, point(st.name, cum[i], step[i]))
		if i == 0 {
			out = append(out, point("  (sent through the leader)", viaLeader, slices.Clone(viaLeader)),
				point("  (sent through a follower)", viaFollower, slices.Clone(viaFollower)))
		}
	}
	return out, leftOut
}
