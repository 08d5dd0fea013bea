package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
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
// is set on the answer to one.
type kindsAnnounce struct {
	Kinds string
	Reply bool
}

// Kind implements proc.Message.
func (kindsAnnounce) Kind() string { return "kinds" }

func (m kindsAnnounce) String() string { return fmt.Sprintf("KINDS(%s)", m.Kinds) }

// heardKinds is the output of a founder's announcement: From runs Kinds.
type heardKinds struct {
	From  proc.ID
	Kinds string
}

// Kind implements proc.Output.
func (heardKinds) Kind() string { return "heard-kinds" }

// kindsProc announces its node's kinds to every founder at start, and
// answers each announcement with them.
type kindsProc struct {
	kinds string
	heard map[proc.ID]string // the founders' kinds, as they announced them
}

func kindsAlgorithm(k Kinds) proc.Algorithm {
	return proc.Algorithm{Family: "node", Name: "founder-kinds",
		Summary:  "the founders of a cluster tell each other what they run behind the services",
		New:      func(proc.ID, int) proc.Process { return &kindsProc{kinds: k.String(), heard: map[proc.ID]string{}} },
		Messages: []proc.Message{kindsAnnounce{}}}
}

func (p *kindsProc) Start(env proc.Env) {
	for q := range proc.ID(env.N()) {
		if q != env.Self() {
			env.Send(q, kindsAnnounce{Kinds: p.kinds})
		}
	}
}

func (p *kindsProc) Receive(env proc.Env, from proc.ID, m proc.Message) {
	a, ok := m.(kindsAnnounce)
	if !ok {
		return
	}
	p.heard[from] = a.Kinds
	env.Output(heardKinds{From: from, Kinds: a.Kinds})
	if !a.Reply {
		env.Send(from, kindsAnnounce{Kinds: p.kinds, Reply: true})
	}
}

func (p *kindsProc) Timeout(proc.Env, any)      {}
func (p *kindsProc) Input(proc.Env, proc.Input) {}

// agreedFile is the file in a founder's data directory that holds the
// kinds the founders were heard to agree on (Kinds.String).
const agreedFile = "founder-kinds"

// checkFounders runs the kinds service on founder self of n and applies
// the rule above: an error (ErrKinds) if this founder must not start. A
// founder that starts keeps the service running, and logs every founder
// heard from then on with other kinds. With a data directory dir, it
// starts at once if dir records agreement on ours, and records it when
// it hears it.
func checkFounders(ctx context.Context, ln *live.Node, self proc.ID, n int, ours Kinds, wait time.Duration, dir string, log *slog.Logger) error {
	if n < 2 {
		return nil
	}
	svc, err := ln.Service(kindsService, kindsAlgorithm(ours))
	if err != nil {
		return err
	}
	// started logs, from now on, every founder heard with other kinds,
	// but those of others, already logged.
	started := func(others []proc.ID) {
		svc.OnOutput(func(o proc.Output) {
			if h, ok := o.(heardKinds); ok && !slices.Contains(others, h.From) {
				if err := differ(h.From, ParseKinds(h.Kinds), fmt.Sprintf("node %d", self), ours); err != nil {
					log.Error("a founder runs other kinds", "founder", int(h.From), "err", err)
				}
			}
		})
	}
	if dir != "" && agreedOn(dir, ours.String()) {
		started(nil)
		return nil
	}
	majority := n/2 + 1
	var heard map[proc.ID]string
	deadline := foundersClock().Add(wait)
	for {
		if err := svc.Read(func(p proc.Process) { heard = maps.Clone(p.(*kindsProc).heard) }); err != nil {
			return err
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
		switch {
		case agree >= majority || len(others) == 0 && done:
			for _, id := range others {
				log.Error("a founder runs other kinds than the majority of the founders: it refuses to start", "founder", int(id), "kinds", heard[id], "ours", ours.String())
			}
			if dir != "" && (agree >= majority || len(heard) == n-1) {
				// Agreement heard, not only nobody against: on record.
				if err := recordAgreed(dir, ours.String()); err != nil {
					return fmt.Errorf("recording the founders' kinds: %w", err)
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

// agreedOn reports whether dir records the founders' agreement on kinds
// (a record of the storage log, CRC-checked: a torn or damaged file
// records nothing, and the founder checks as if it had none).
func agreedOn(dir, kinds string) bool {
	l, err := wal.Open(filepath.Join(dir, agreedFile))
	if err != nil {
		return false
	}
	defer l.Close()
	recs := l.Recovered()
	return len(recs) > 0 && string(recs[len(recs)-1]) == kinds
}

// recordAgreed records in dir the founders' agreement on kinds, durably
// (wal.Log.Replace: written aside, synced, renamed over the old record,
// the directory synced).
func recordAgreed(dir, kinds string) error {
	l, err := wal.Open(filepath.Join(dir, agreedFile))
	if err != nil {
		return err
	}
	return errors.Join(l.Replace([][]byte{[]byte(kinds)}), l.Close())
}
