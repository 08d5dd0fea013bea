package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

// What must be the same on every node of a cluster, and how a node that
// joins is held to it. A replicated log's voters must all run the state
// machine the log is for: a node added to the voters of the locks' log
// that runs textbook locks, or to the queues' log with queues: local,
// would be half added — counted in the log's majorities yet serving none
// of it. Each node announces its kinds in the members map
// (members.Config.Kinds); a joiner whose kinds differ from its contact's
// is refused when it starts (New), and `cluster add` refuses a node whose
// announced kinds differ from the adding node's (mayVote) — a node joined
// through an older release, say, that announces none or others. A
// textbook cluster (its locks not replicated) holds its joiners to
// nothing: its locks and groups run on the founders only, and every
// node's queues are its own.

// Kinds is what a node runs behind the services that must agree across a
// cluster, by name: "lock" and "group" (the algorithms), "queues"
// ("replicated" or "local") and, for replicated queues, "queue_limits"
// (the state machine applies them: voters with other limits would hold
// other states).
type Kinds map[string]string

// kinds is the node's Kinds under cfg.
func (cfg Config) kinds() Kinds {
	k := Kinds{"lock": cfg.Lock.Name, "group": cfg.Group.Name, "queues": "local"}
	if cfg.Lock.Family == "consensus" && !cfg.LocalQueues {
		k["queues"] = "replicated"
		l, d := cfg.QueueLimits, consensus.DefaultQueueLimits
		k["queue_limits"] = fmt.Sprintf("messages:%d,bytes:%d,queues:%d,state:%d",
			or(l.Messages, d.Messages), or(l.Bytes, d.Bytes), or(l.Queues, d.Queues), or(l.State, d.State))
	}
	return k
}

func or[T comparable](v, dflt T) T {
	var zero T
	if v == zero {
		return dflt
	}
	return v
}

// String is the kinds as the members map carries them: "name=value"
// pairs, by name, separated by spaces.
func (k Kinds) String() string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(k)) {
		out = append(out, name+"="+k[name])
	}
	return strings.Join(out, " ")
}

// ParseKinds parses what String writes.
func ParseKinds(s string) Kinds {
	k := Kinds{}
	for _, f := range strings.Fields(s) {
		if name, v, ok := strings.Cut(f, "="); ok {
			k[name] = v
		}
	}
	return k
}

// raftLock is the replicated lock's name (lock.ReplicatedAlgorithm): a
// cluster that runs it has replicated logs whose voters change.
const raftLock = "raft-lock"

// ErrKinds: a node runs other kinds than the cluster's behind a service
// that must be the same on every node.
var ErrKinds = errors.New("kinds differ")

// differ compares a node's kinds with the cluster's, and names each that
// differs with both values; nil if they agree.
func differ(node proc.ID, theirs Kinds, cluster string, ours Kinds) error {
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(union(theirs, ours))) {
		if name == "queue_limits" && theirs["queues"] != ours["queues"] {
			continue // limits of replicated queues, which one side does not run
		}
		if theirs[name] != ours[name] {
			diffs = append(diffs, fmt.Sprintf("%s: %s at node %d, %s at %s", name, orNone(theirs[name]), node, orNone(ours[name]), cluster))
		}
	}
	if diffs == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrKinds, strings.Join(diffs, "; "))
}

func union(a, b Kinds) Kinds {
	u := Kinds{}
	for name := range a {
		u[name] = ""
	}
	for name := range b {
		u[name] = ""
	}
	return u
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// kindsWait is how long a node that joins waits for the members map to
// tell its contact's kinds (the map comes whole from the contact at the
// join), and how long `cluster add` waits for a newcomer's.
const kindsWait = 5 * time.Second

// checkJoin waits for the kinds of the contact through which this node
// joined, and fails naming each kind that differs (ErrKinds). A contact
// that announces none within kindsWait (an older release) is let be:
// `cluster add` checks again before the node may vote.
func checkJoin(ctx context.Context, ms *members.Server, self, contact proc.ID, ours Kinds, log *slog.Logger) error {
	deadline := time.Now().Add(kindsWait)
	for {
		list, err := ms.Members()
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(list, func(m members.Member) bool { return m.ID == int(contact) }); i >= 0 && list[i].Kinds != "" {
			theirs := ParseKinds(list[i].Kinds)
			if theirs["lock"] != raftLock {
				// A textbook cluster: its locks and groups run on the
				// founders only, and every node's queues are its own —
				// no log for a joiner to be half added to.
				return nil
			}
			if err := differ(self, ours, fmt.Sprintf("node %d, the contact it joins through", contact), theirs); err != nil {
				return fmt.Errorf("node %d may not join this cluster: %w (every node must run the same; change its node.yaml)", self, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			log.Warn("the contact announced no kinds in time: cohort cluster add checks them", "contact", int(contact))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(changePoll):
		}
	}
}
