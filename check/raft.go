package check

import (
	"encoding/json"
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

// The Raft checkers read the consensus family's contract from a trace:
// "leader" outputs ({"term", "last_index"}) when a server becomes leader,
// "applied" outputs ({"index", "digest"}) for every entry a server
// applies, the digest covering every entry up to it, and "restored"
// outputs (the same fields) when a server's state machine is replaced by
// a snapshot covering every entry up to index (Ongaro and Ousterhout
// 2014, figure 3 and §7).

var raftElectionSafety = checker{
	name:  "raft-election-safety",
	doc:   "Raft election safety: at most one server becomes leader in any term",
	check: checkRaftElectionSafety,
}

var raftStateMachineSafety = checker{
	name:  "raft-state-machine-safety",
	doc:   "Raft state machine safety: every server that applies an entry at an index applies the same one, after the same entries (the digests agree), and applies indexes in order without gaps",
	check: checkRaftStateMachineSafety,
}

var raftLeaderCompleteness = checker{
	name:  "raft-leader-completeness",
	doc:   "Raft leader completeness: the leader of a term holds every entry committed in earlier terms (its log reaches their indexes); an entry applied while the highest term with a leader was k was committed in term k or before",
	check: checkRaftLeaderCompleteness,
}

func init() {
	Register(raftElectionSafety)
	Register(raftStateMachineSafety)
	Register(raftLeaderCompleteness)
}

type raftLeader struct {
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
}

type raftApplied struct {
	Index  uint64 `json:"index"`
	Digest uint64 `json:"digest"`
}

func checkRaftElectionSafety(t *trace.Trace) Result {
	first := map[uint64]int{} // term → the event of its first leader
	var fs []finding
	for i, e := range t.Events {
		if e.Kind != trace.Output || e.Type != "leader" {
			continue
		}
		var l raftLeader
		if err := json.Unmarshal(e.Data, &l); err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: leader output %s: %v", i, e.Data, err)}
		}
		if j, ok := first[l.Term]; ok {
			fs = append(fs, finding{fmt.Sprintf("p%d and p%d both became leader of term %d", t.Events[j].Node, e.Node, l.Term), []int{j, i}})
			continue
		}
		first[l.Term] = i
	}
	return verdict(fs)
}

func checkRaftStateMachineSafety(t *trace.Trace) Result {
	at := map[uint64]int{} // index → the first applied event for it
	last := map[int32]uint64{}
	var fs []finding
	for i, e := range t.Events {
		if e.Kind.Begins() || e.Kind.Stops() {
			delete(last, e.Node) // a new incarnation restarts from its snapshot
		}
		if e.Kind != trace.Output || e.Type != "applied" && e.Type != "restored" {
			continue
		}
		var a raftApplied
		if err := json.Unmarshal(e.Data, &a); err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s output %s: %v", i, e.Type, e.Data, err)}
		}
		if prev, ok := last[e.Node]; ok && e.Type == "restored" && a.Index <= prev {
			fs = append(fs, finding{fmt.Sprintf("p%d restored a snapshot up to entry %d after applying entry %d", e.Node, a.Index, prev), []int{i}})
		}
		if prev, ok := last[e.Node]; ok && e.Type == "applied" && a.Index != prev+1 {
			fs = append(fs, finding{fmt.Sprintf("p%d applied entry %d after entry %d", e.Node, a.Index, prev), []int{i}})
		}
		last[e.Node] = a.Index
		j, ok := at[a.Index]
		if !ok {
			at[a.Index] = i
			continue
		}
		var b raftApplied
		json.Unmarshal(t.Events[j].Data, &b)
		if b.Digest != a.Digest {
			fs = append(fs, finding{fmt.Sprintf("p%d and p%d applied different entries at index %d (digests %x and %x)",
				t.Events[j].Node, e.Node, a.Index, b.Digest, a.Digest), []int{j, i}})
		}
	}
	return verdict(fs)
}

func checkRaftLeaderCompleteness(t *trace.Trace) Result {
	// An entry applied while the highest term with a leader so far was M
	// was committed in a term no later than M, so every leader of a term
	// above M must hold it. below[k] is the highest index applied while
	// the highest leader term was k (and at which event).
	type mark struct {
		index uint64
		at    int
	}
	below := map[uint64]mark{}
	var highest uint64 // the highest term with a leader so far
	var fs []finding
	for i, e := range t.Events {
		if e.Kind != trace.Output {
			continue
		}
		switch e.Type {
		case "applied":
			var a raftApplied
			if json.Unmarshal(e.Data, &a) == nil && a.Index > below[highest].index {
				below[highest] = mark{a.Index, i}
			}
		case "leader":
			var l raftLeader
			if err := json.Unmarshal(e.Data, &l); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: leader output %s: %v", i, e.Data, err)}
			}
			var need mark
			for term, m := range below {
				if term < l.Term && m.index > need.index {
					need = m
				}
			}
			if l.LastIndex < need.index {
				fs = append(fs, finding{fmt.Sprintf("p%d became leader of term %d with a log ending at %d, but entry %d had been committed in an earlier term",
					e.Node, l.Term, l.LastIndex, need.index), []int{need.at, i}})
			}
			highest = max(highest, l.Term)
		}
	}
	return verdict(fs)
}
