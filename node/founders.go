package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/wal"
	"github.com/cohort-go/cohort/proc"
)

// How the founders of a cluster hold each other to one set of kinds (see
// kinds.go). A node that joins is held to its contact's; the founders
// have nobody to defer to, so they compare among themselves: each, as it
// starts, tells every founder its kinds and is told theirs (the service
// "kinds", below), and
//
//	wait until the founders that agree with me, myself included, are a
//	majority, or every founder has answered, or founderWait has passed;
//	if a founder answered with other kinds and those that agree with me
//	are not a majority: refuse to start (ErrKinds, naming both sets).
//
// So of three founders started with raft-lock, raft-lock and
// ricart-agrawala, the third refuses and the other two run (and log the
// third's kinds as an error); of two that differ, both refuse; a founder
// started with other kinds beside a running cluster refuses. A founder
// that hears nobody in time (the others are down) starts: it has no
// evidence against its kinds. Later announcements that differ — a founder
// restarted with another config — are logged as errors by the founders
// already running, and that founder refuses unless it has a majority.
//
// A founder that heard agreement (a majority of the founders, or all of
// them) writes its kinds in its data directory (agreedFile). Restarted
// from it with the same kinds, it has its evidence already: it starts at
// once, without waiting to hear the others (who may be down), and keeps
// announcing its kinds and logging the others' as before.
//
// The same exchange keeps a founder that lost its data directory from
// rejoining as itself. Raft assumes that a server keeps what it made
// durable: one restarted empty under the same ID may vote a second time
// in a term, and the entries it acknowledged may count towards commits
// that now rest on fewer copies than a majority. So each founder says in
// its announcements whether it holds state (its directory records that
// it ran: it may have voted and acknowledged entries), and says so again
// once it starts (recorded first); every
// founder records, in its own data directory (stateFile, synced), the
// founders it heard with state and when. A founder whose directory holds
// none announces so; a founder that recorded it with state tells it, and
//
//	a founder without state, told by a founder that heard it with
//	state: refuse to start (ErrLostState, naming its directory, that
//	founder and when) — the directory must be restored, or the member
//	removed and a new one joined.
//
// A founder without state that hears a founder with state (the cluster
// ran before) waits to hear every founder (or the wait), not only a
// majority, so that one who knew is heard. On the very first start
// nobody has state, and nobody has heard anybody with state: every
// founder starts as before, and so does a founder that first starts
// late, once the others run.
//
// A node that joined a cluster of replicated logs, with a data
// directory, is held to the same rule by the same exchange: once its
// contact's members map has told it where the founders are, it
// announces its kinds and whether it holds state to every founder (again
// and again to those it has not heard, so that a founder down at the
// time hears it once back); the founders record it as they record one
// another, and answer. So
//
//	a joined node without state, told by a founder that heard it with
//	state: refuse to start (ErrLostState, naming its directory, that
//	founder and when) — the directory must be restored, or the member
//	removed and a new one joined under another ID.
//
// A joined node without state waits to hear every founder (or the
// wait), then records that it ran and says so; one with state starts at
// once. It runs no replicated log until then: an empty node under an
// old ID that a leader reached first could grant a vote or acknowledge
// entries before it is refused. Nodes that joined record nobody: only
// the founders' records count.
//
// What it does not catch: a node whose directory was wiped while every
// founder that recorded it is down (it hears nobody within the wait,
// starts, and from then on holds state again); a node run without a
// data directory (it keeps nothing, so it announces no state; `cluster
// add` refuses it as a voter); and a node that joined and was wiped
// before any founder recorded it. Those the leader of each replicated
// log reports, as an error naming the node (consensus.LostState), once
// the node rejects entries it had acknowledged to that leader.

// founderWait is how long a founder waits, as it starts, to hear the
// kinds of the other founders, unless Config.FoundersWait says otherwise.
const founderWait = time.Second

// foundersClock is the founders' check's clock: time.Now, but for a
// test that steps it.
var foundersClock = time.Now

// kindsService is the service through which the founders tell each other
// their kinds.
const kindsService = "kinds"

// kindsAnnounce tells a founder the sender's kinds (Kinds.String); Reply
// is set on the answer to one. State: the sender holds state
// (holdsState). YouHadState, if not "":
// the sender recorded the recipient with state at this time (RFC 3339).
type kindsAnnounce struct {
	Kinds       string
	Reply       bool
	State       bool   `json:",omitempty"`
	YouHadState string `json:",omitempty"`
}

// Kind implements proc.Message.
func (kindsAnnounce) Kind() string { return "kinds" }

func (m kindsAnnounce) String() string { return fmt.Sprintf("KINDS(%s)", m.Kinds) }

// heardKinds is the output of a founder's announcement: From runs Kinds,
// holds state or not, and recorded us with state at YouHadState (if not "").
type heardKinds struct {
	From        proc.ID
	Kinds       string
	State       bool
	YouHadState string
}

// Kind implements proc.Output.
func (heardKinds) Kind() string { return "heard-kinds" }

// kindsProc announces its node's kinds, and whether it holds state, to
// every founder at start, and answers each announcement with them. A
// node that joined announces them to the founders too, again and again
// (after joinedRetry, doubling up to joinedRetryMax) to those it has not
// heard yet: it may not know their addresses at first, and a founder
// that is down records it once it is back.
type kindsProc struct {
	founders int // the founding members, 0 .. founders−1
	kinds    string
	state    bool               // this node holds state
	heard    map[proc.ID]string // the kinds of the nodes heard (founders; at a founder, joiners too)
	rich     map[proc.ID]bool   // the nodes that announced state
	knew     map[proc.ID]string // the nodes recorded here with state, and when
	told     map[proc.ID]string // without state: the founders that recorded us with it, and when
	retry    time.Duration      // a joiner's next wait before it announces again to the founders unheard
}

// A node that joined announces its kinds again to the founders it has not
// heard after joinedRetry, then after twice as long each time, up to
// joinedRetryMax.
const (
	joinedRetry    = 100 * time.Millisecond
	joinedRetryMax = 10 * time.Second
)

// hasState is the input that says this node holds state now: it
// announces so to every founder.
type hasState struct{}

// Kind implements proc.Input.
func (hasState) Kind() string { return "has-state" }

// recordedState is the input that says founder ID is recorded in this
// node's data directory as heard with state at At: it tells ID so, from
// now on, if ID announces that it holds none.
type recordedState struct {
	ID proc.ID
	At string
}

// Kind implements proc.Input.
func (recordedState) Kind() string { return "recorded-state" }

// founderState is what a founder's data directory says, as it starts:
// whether it holds state, and the founders it recorded with state.
type founderState struct {
	state bool
	knew  map[proc.ID]string
}

// readFounderState reads it from dir ("": none).
func readFounderState(dir string) (founderState, error) {
	if dir == "" {
		return founderState{}, nil
	}
	knew, err := readStateRecord(dir)
	return founderState{state: holdsState(dir), knew: knew}, err
}

// kindsAlgorithm is the kinds service of a cluster whose founding
// members are 0 .. founders−1, at a node that runs kinds k and whose data
// directory says st. Members that joined take part (Assumes.Joins): they
// announce to the founders, who answer them.
func kindsAlgorithm(k Kinds, st founderState, founders int) proc.Algorithm {
	state, knew := st.state, st.knew
	return proc.Algorithm{Family: "node", Name: "founder-kinds",
		Summary: "the founders of a cluster tell each other what they run behind the services, and whether they hold state; members that joined tell the founders",
		Assumes: proc.Assumptions{Joins: true},
		New: func(proc.ID, int) proc.Process {
			return &kindsProc{founders: founders, kinds: k.String(), state: state, heard: map[proc.ID]string{}, rich: map[proc.ID]bool{},
				knew: maps.Clone(knew), told: map[proc.ID]string{}, retry: joinedRetry}
		},
		Messages: []proc.Message{kindsAnnounce{}}}
}

func (p *kindsProc) announce(env proc.Env, to proc.ID, reply bool) {
	env.Send(to, kindsAnnounce{Kinds: p.kinds, Reply: reply, State: p.state, YouHadState: p.knew[to]})
}

// joined reports whether this node joined the running cluster.
func (p *kindsProc) joined(env proc.Env) bool { return int(env.Self()) >= p.founders }

func (p *kindsProc) Start(env proc.Env) {
	for q := range proc.ID(p.founders) {
		if q != env.Self() {
			p.announce(env, q, false)
		}
	}
	if p.joined(env) {
		env.SetTimer(p.retry, nil)
	}
}

func (p *kindsProc) Receive(env proc.Env, from proc.ID, m proc.Message) {
	a, ok := m.(kindsAnnounce)
	if !ok {
		return
	}
	p.heard[from] = a.Kinds
	if a.State {
		p.rich[from] = true
	}
	if a.YouHadState != "" && !p.state {
		p.told[from] = a.YouHadState
	}
	env.Output(heardKinds{From: from, Kinds: a.Kinds, State: a.State, YouHadState: a.YouHadState})
	if !a.Reply {
		p.announce(env, from, true)
	}
}

// Timeout announces a joiner's kinds again to the founders it has not
// heard, until it has heard every one.
func (p *kindsProc) Timeout(env proc.Env, _ any) {
	unheard := false
	for q := range proc.ID(p.founders) {
		if _, ok := p.heard[q]; !ok {
			p.announce(env, q, false)
			unheard = true
		}
	}
	if unheard {
		p.retry = min(2*p.retry, joinedRetryMax)
		env.SetTimer(p.retry, nil)
	}
}

func (p *kindsProc) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case hasState:
		p.state = true
		for q := range proc.ID(p.founders) {
			if q != env.Self() {
				p.announce(env, q, true) // news: no answer wanted
			}
		}
	case recordedState:
		p.knew[in.ID] = in.At
	}
}

// agreedFile is the file in a founder's data directory that holds the
// kinds the founders were heard to agree on (Kinds.String).
const agreedFile = "founder-kinds"

// checkFounders runs the kinds service on founder self of n and applies
// the rule above: an error (ErrKinds) if this founder must not start. A
// founder that starts keeps the service running, and logs every founder
// heard from then on with other kinds. With a data directory dir, it
// starts at once if dir records agreement on ours, and records it when
// it hears it.
func checkFounders(ctx context.Context, ln *live.Node, self proc.ID, n int, ours Kinds, wait time.Duration, dir string, st founderState, recording *sync.WaitGroup, log *slog.Logger) error {
	if n < 2 {
		return nil
	}
	state := st.state
	svc, err := ln.Service(kindsService, kindsAlgorithm(ours, st, n))
	if err != nil {
		return err
	}
	if dir != "" {
		if err := recordStates(svc, dir, st.knew, recording, log); err != nil {
			return err
		}
	}
	// started logs, from now on, every founder heard with other kinds,
	// but those of others, already logged, and every founder that says
	// it heard us with state if we started without.
	started := func(others []proc.ID) {
		svc.OnOutput(func(o proc.Output) {
			h, ok := o.(heardKinds)
			if !ok {
				return
			}
			if int(h.From) < n && !slices.Contains(others, h.From) {
				// (A node that joined is held to its contact's kinds:
				// checkJoin.)
				if err := differ(h.From, ParseKinds(h.Kinds), fmt.Sprintf("node %d", self), ours); err != nil {
					log.Error("a founder runs other kinds", "founder", int(h.From), "err", err)
				}
			}
			if h.YouHadState != "" && !state {
				log.Error("this node started without state, but a founder heard it with state: "+mustNotRejoin, "founder", int(h.From), "at", h.YouHadState, "data_dir", dir)
			}
		})
	}
	if state && agreedOn(dir, ours.String()) {
		started(nil)
		return nil
	}
	majority := n/2 + 1
	var heard, told map[proc.ID]string
	ran := false // a founder heard holds state: the cluster ran before
	deadline := foundersClock().Add(wait)
	for {
		if err := svc.Read(func(p proc.Process) {
			k := p.(*kindsProc)
			heard, told, ran = founderKeys(k.heard, n), maps.Clone(k.told), len(founderKeys(k.rich, n)) > 0
		}); err != nil {
			return err
		}
		if len(told) > 0 {
			id := slices.Min(slices.Collect(maps.Keys(told)))
			where := "none is set: it keeps no state"
			if dir != "" {
				where = dir + " holds none"
			}
			return fmt.Errorf("node %d may not start: %w: its data directory %s, but node %d heard it with state at %s: %s",
				self, ErrLostState, where, id, told[id], mustNotRejoin)
		}
		agree, others := 1, []proc.ID(nil)
		for _, id := range slices.Sorted(maps.Keys(heard)) {
			if differ(id, ParseKinds(heard[id]), "", ours) == nil {
				agree++
			} else {
				others = append(others, id)
			}
		}
		// One reading of the clock for both cases: read twice, the deadline
		// could pass between them, and the second case be taken with no
		// founder against.
		done := len(heard) == n-1 || foundersClock().After(deadline)
		// A founder without state in a cluster that ran before waits
		// for every founder (or the wait): the one that heard it with
		// state may answer last.
		enough := agree >= majority && (state || !ran || done)
		switch {
		case enough || len(others) == 0 && done:
			for _, id := range others {
				log.Error("a founder runs other kinds than the majority of the founders: it refuses to start", "founder", int(id), "kinds", heard[id], "ours", ours.String())
			}
			if dir != "" && (agree >= majority || len(heard) == n-1) {
				// Agreement heard, not only nobody against: on record.
				if err := recordAgreed(dir, ours.String()); err != nil {
					return fmt.Errorf("recording the founders' kinds: %w", err)
				}
			}
			if dir != "" && !state {
				// It starts: from now on it holds state (on record
				// before anyone hears so), and the others hear so.
				if err := recordRan(dir); err != nil {
					return fmt.Errorf("data_dir: %w", err)
				}
				state = true // what others say of us from now on is of this run
				if err := svc.Input(hasState{}); err != nil {
					return err
				}
			}
			started(others)
			return nil
		case done:
			id := others[0]
			return fmt.Errorf("node %d may not start: %w (node %d runs %s; node %d runs %s): the founders must all run the same, and of the %d only %d, this one included, were heard to run these, not a majority; change node.yaml here or on the others",
				self, differ(self, ours, fmt.Sprintf("node %d", id), ParseKinds(heard[id])), self, ours, id, orNone(heard[id]), n, agree)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(changePoll):
		}
	}
}

// checkJoined runs the kinds service on node self, which joined a
// cluster of n founders and keeps its state in dir, and applies the rule
// for a member that joined (see above): it fails (ErrLostState) if dir
// holds no state and a founder recorded it with state. Without state, it
// waits to hear every founder, or wait; it then records that it ran
// (synced before the founders hear so) and tells them. With state it
// returns at once: the service goes on telling the founders so.
func checkJoined(ctx context.Context, ln *live.Node, self proc.ID, n int, ours Kinds, wait time.Duration, dir string, st founderState) error {
	svc, err := ln.Service(kindsService, kindsAlgorithm(ours, st, n))
	if err != nil || st.state {
		return err
	}
	deadline := foundersClock().Add(wait)
	for {
		var heard int
		var told map[proc.ID]string
		if err := svc.Read(func(p proc.Process) {
			k := p.(*kindsProc)
			heard, told = len(founderKeys(k.heard, n)), maps.Clone(k.told)
		}); err != nil {
			return err
		}
		if len(told) > 0 {
			id := slices.Min(slices.Collect(maps.Keys(told)))
			return fmt.Errorf("node %d may not join: %w: its data directory %s holds none, but node %d heard it with state at %s: %s under a new id (cohort cluster remove %d, then start it with another id and an empty directory)",
				self, ErrLostState, dir, id, told[id], mustNotRejoin, self)
		}
		if heard == n || foundersClock().After(deadline) {
			if err := recordRan(dir); err != nil {
				return fmt.Errorf("data_dir: %w", err)
			}
			return svc.Input(hasState{})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(changePoll):
		}
	}
}

// founderKeys is m without the nodes that joined (IDs n and beyond).
func founderKeys[V any](m map[proc.ID]V, n int) map[proc.ID]V {
	out := map[proc.ID]V{}
	for id, v := range m {
		if int(id) < n {
			out[id] = v
		}
	}
	return out
}

// agreedOn reports whether dir records the founders' agreement on kinds
// (a record of the storage log, CRC-checked: a torn or damaged file
// records nothing, and the founder checks as if it had none).
func agreedOn(dir, kinds string) bool {
	recs, _ := readRecords(dir, agreedFile)
	return len(recs) > 0 && string(recs[len(recs)-1]) == kinds
}

// readRecords reads the records of the file name in dir, a storage log
// (wal.Log; none if the file does not exist).
func readRecords(dir, name string) ([][]byte, error) {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	l, err := wal.Open(path)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Recovered(), nil
}

// writeRecords makes recs the records of the file name in dir, durably
// (wal.Log.Replace: written aside, synced, renamed over the old records,
// the directory synced).
func writeRecords(dir, name string, recs ...[]byte) error {
	l, err := wal.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	return errors.Join(l.Replace(recs), l.Close())
}

// recordAgreed records in dir the founders' agreement on kinds, durably.
func recordAgreed(dir, kinds string) error { return writeRecords(dir, agreedFile, []byte(kinds)) }

// ErrLostState: a founder's data directory holds no state, but another
// founder heard it with state: it lost its data.
var ErrLostState = errors.New("it lost its state")

const mustNotRejoin = "a node that lost its data must not rejoin as itself (it may vote twice in a term, and what it acknowledged may be held by fewer than a majority); restore the directory, or remove the member and join anew"

// stateFile is the file in a founder's data directory that records the
// nodes heard with state, founders and joined ones, and when: a record
// "ID time" for each.
const stateFile = "founders-with-state"

// ranFile is the file in a node's data directory that says it ran, a
// founder or a node that joined (a record, synced before the founders
// hear so).
const ranFile = "founder-ran"

// recordRan writes ranFile in dir, durably.
func recordRan(dir string) error { return writeRecords(dir, ranFile, []byte("ran")) }

// holdsState reports whether dir holds this node's state: it records
// that the node ran (ranFile), or, written by an earlier release at a
// founder, the founders' agreement (agreedFile).
func holdsState(dir string) bool {
	for _, name := range []string{ranFile, agreedFile} {
		if recs, _ := readRecords(dir, name); len(recs) > 0 {
			return true
		}
	}
	return false
}

// readStateRecord reads stateFile in dir ("" or none: nothing recorded).
func readStateRecord(dir string) (map[proc.ID]string, error) {
	knew := map[proc.ID]string{}
	if dir == "" {
		return knew, nil
	}
	recs, err := readRecords(dir, stateFile)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		var id proc.ID
		var at string
		if _, err := fmt.Sscan(string(rec), &id, &at); err == nil {
			knew[id] = at
		}
	}
	return knew, nil
}

// recordStates records in dir (in a goroutine counted in recording,
// which ends once svc stops), as svc hears them, the nodes that announce
// state (founders, and nodes that joined), durably (wal.Log.Replace),
// and then tells svc (recordedState): it answers only from what is on
// record.
func recordStates(svc *live.Service, dir string, knew map[proc.ID]string, recording *sync.WaitGroup, log *slog.Logger) error {
	heard := make(chan proc.ID, 64)
	svc.OnOutput(func(o proc.Output) {
		if h, ok := o.(heardKinds); ok && h.State {
			select {
			case heard <- h.From:
			default: // announcements are rare: one per node's start
			}
		}
	})
	// Those heard before (a founder's announcement starts the service).
	var rich []proc.ID
	if err := svc.Read(func(p proc.Process) { rich = slices.Sorted(maps.Keys(p.(*kindsProc).rich)) }); err != nil {
		return err
	}
	for _, id := range rich {
		select {
		case heard <- id:
		default:
		}
	}
	knew = maps.Clone(knew)
	recording.Go(func() {
		for {
			var id proc.ID
			select {
			case id = <-heard:
			case <-svc.Done():
				return
			}
			knew[id] = time.Now().UTC().Format(time.RFC3339)
			var recs [][]byte
			for _, q := range slices.Sorted(maps.Keys(knew)) {
				recs = append(recs, fmt.Appendf(nil, "%d %s", q, knew[q]))
			}
			if err := writeRecords(dir, stateFile, recs...); err != nil {
				log.Error("recording a founder heard with state", "founder", int(id), "err", err)
				continue
			}
			if svc.Input(recordedState{ID: id, At: knew[id]}) != nil {
				return
			}
		}
	})
	return nil
}
