package check

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cohort-go/cohort/trace"
)

// The election checkers read the election family's contract from a trace:
// "elect" inputs and "elected" outputs ({"leader": id}). A process's
// elected variable is its last elected output; a crash forgets it (⊥). A
// process is live at the end if it did not crash, or recovered after its
// last crash. Where processes stand by choice (bully-fd, the live leader
// service: "campaign" and "resign" inputs), only the candidates live at
// the end count: the leader is the largest of them, and with none there
// is nobody to elect.

var e1 = checker{
	name:  "E1",
	doc:   "election safety: every live process's elected is ⊥ or the largest id among the processes that have not crashed at the end of the run (among the candidates, where processes campaign)",
	check: checkE1,
}

var e2 = checker{
	name:  "E2",
	doc:   "election liveness: once an election happened, every live process ends with elected ≠ ⊥ (where processes campaign: while a live candidate stands)",
	check: checkE2,
}

var agreement = checker{
	name:  "agreement",
	doc:   "election agreement: no two live processes end the run believing in different leaders",
	check: checkAgreement,
}

func init() {
	Register(e1)
	Register(e2)
	Register(agreement)
}

// electionEnd is each process's state when the trace ends.
type electionEnd struct {
	n        int
	live     []bool
	elected  []int32 // -1 for ⊥
	at       []int   // the output that set elected; -1
	crash    []int   // the last crash of each process; -1
	started  bool    // an election happened (an elect input or an elected output)
	lastSeen []int   // each process's last event

	// Candidacy by choice: campaign and resign inputs were seen (chosen),
	// and who stands at the end.
	chosen    bool
	candidate []bool
}

func electionState(t *trace.Trace) electionEnd {
	n := t.Header.Nodes
	s := electionEnd{n: n, live: make([]bool, n), elected: make([]int32, n), at: make([]int, n), crash: make([]int, n), lastSeen: make([]int, n), candidate: make([]bool, n)}
	// In a run whose membership changes (it has joins or leaves), a process
	// is live from its start, recovery or join; otherwise every process is
	// live from the beginning (traces of live clusters start mid-way).
	dynamic := slices.ContainsFunc(t.Events, func(e trace.Event) bool { return e.Kind == trace.Join || e.Kind == trace.Leave })
	for i := range s.live {
		s.live[i], s.elected[i], s.at[i], s.crash[i], s.lastSeen[i] = !dynamic, -1, -1, -1, -1
	}
	for i := range t.Events {
		e := &t.Events[i]
		p := e.Node
		if p < 0 || int(p) >= n {
			continue
		}
		if e.Kind.IsProcess() {
			s.lastSeen[p] = i
		}
		switch {
		case e.Kind.Stops():
			s.live[p], s.elected[p], s.at[p], s.crash[p], s.candidate[p] = false, -1, -1, i, false
		case e.Kind.Begins():
			s.live[p] = true
		case e.Kind == trace.Input && e.Type == "elect":
			s.started = true
		case e.Kind == trace.Input && (e.Type == "campaign" || e.Type == "resign"):
			s.chosen, s.candidate[p] = true, e.Type == "campaign"
			s.started = s.started || e.Type == "campaign"
		case e.Kind == trace.Output && e.Type == "elected":
			var o struct {
				Leader int32 `json:"leader"`
			}
			if json.Unmarshal(e.Data, &o) == nil {
				s.elected[p], s.at[p], s.started = o.Leader, i, true
			}
		}
	}
	return s
}

// best is the largest id among the live processes (the live candidates,
// where processes campaign), or -1.
func (s electionEnd) best() int32 {
	for p := s.n - 1; p >= 0; p-- {
		if s.live[p] && (!s.chosen || s.candidate[p]) {
			return int32(p)
		}
	}
	return -1
}

// whom names what best ranges over.
func (s electionEnd) whom() string {
	if s.chosen {
		return "candidate"
	}
	return "id"
}

func checkE1(t *trace.Trace) Result {
	s := electionState(t)
	best := s.best()
	if s.chosen && best < 0 {
		return Result{Status: OK, Detail: "no live candidate at the end: nobody to elect"}
	}
	var fs []finding
	for p := 0; p < s.n; p++ {
		if !s.live[p] || s.elected[p] < 0 || s.elected[p] == best {
			continue
		}
		l := s.elected[p]
		events := []int{s.at[p]}
		why := ""
		switch {
		case l >= 0 && int(l) < s.n && !s.live[l]:
			verb := "crashed"
			if t.Events[s.crash[l]].Kind == trace.Leave {
				verb = "left"
			}
			why = fmt.Sprintf(", which %s (#%d)", verb, s.crash[l])
			events = append(events, s.crash[l])
		case l > best:
			why = ", which does not exist"
		}
		fs = append(fs, finding{
			fmt.Sprintf("p%d ended with elected = p%d%s; the largest live %s is p%d", p, l, why, s.whom(), best),
			events,
		})
	}
	return verdict(fs)
}

func checkE2(t *trace.Trace) Result {
	s := electionState(t)
	if !s.started {
		return Result{Status: OK, Detail: "no election took place"}
	}
	if s.chosen && s.best() < 0 {
		return Result{Status: OK, Detail: "no live candidate at the end: nobody to elect"}
	}
	var fs []finding
	for p := 0; p < s.n; p++ {
		if s.live[p] && s.elected[p] < 0 {
			events := []int{}
			if s.lastSeen[p] >= 0 {
				events = append(events, s.lastSeen[p])
			}
			fs = append(fs, finding{fmt.Sprintf("p%d is live but its elected is still ⊥ when the run ends", p), events})
		}
	}
	return verdict(fs)
}

func checkAgreement(t *trace.Trace) Result {
	s := electionState(t)
	first := -1
	var fs []finding
	for p := 0; p < s.n; p++ {
		if !s.live[p] || s.elected[p] < 0 {
			continue
		}
		if first < 0 {
			first = p
			continue
		}
		if s.elected[p] != s.elected[first] {
			fs = append(fs, finding{
				fmt.Sprintf("p%d believes in p%d, p%d in p%d", first, s.elected[first], p, s.elected[p]),
				[]int{s.at[first], s.at[p]},
			})
		}
	}
	return verdict(fs)
}
