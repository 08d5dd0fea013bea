package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
)

// The voters: which nodes vote in the cluster's replicated logs — that of
// the locks (and elections), and that of the groups when they are
// replicated. The founders vote from the start; a node that joined the
// running cluster votes once an operator adds it (`cohort cluster add`),
// as etcd's `member add` does: never silently. A change goes to each log's
// leader, one server at a time (Ongaro's thesis §4.1); a newcomer first
// catches up as a learner (§4.2.1). The configuration is an entry of the
// log, so every node — restarted or not — follows the one its log (or
// snapshot) holds, never a config file's. The replicated queues' log
// (with queues: replicated) changes with the others, so a node serves
// the queues while it votes in their log, like the locks.

// voterLog is one replicated log of the node, and whether this node votes
// in it now.
type voterLog struct {
	name  string // its service: "locks", "groups", "queues"
	self  proc.ID
	svc   *live.Service
	voter atomic.Bool
	// left and back, if set, are called when this node stops voting in
	// the log, and when it votes in it again.
	left, back func()
}

// raftHolder is a state machine on Raft (consensus.Locks, Groups).
type raftHolder interface{ Raft() *consensus.Raft }

// VoterLog is one replicated log's configuration as a node holds it.
type VoterLog struct {
	Service   string `json:"service"`   // "locks" (with the elections), "groups", "queues"
	Voters    []int  `json:"voters"`    // the configuration this node follows; none known yet at a newcomer
	Committed bool   `json:"committed"` // this node knows it committed
	Leader    int    `json:"leader"`    // the leader this node knows; -1: none
	Term      uint64 `json:"term"`
}

// Voters is the answer of GET /v1/cluster/voters and of a change.
type Voters struct {
	Node  int        `json:"node"`  // the node that answers
	Voter bool       `json:"voter"` // it votes in every log
	Logs  []VoterLog `json:"logs"`
}

// Errors of a change of the voters, each with its HTTP status (see
// statusOf).
var (
	// ErrNotReplicated: the cluster's locks are a textbook algorithm,
	// which runs on the founders only; there is no configuration to change.
	ErrNotReplicated = errors.New("no replicated log to change")
	// ErrNotMember: the node is not a member of the cluster (it never
	// joined), or, for a removal, not a voter.
	ErrNotMember = errors.New("not a member")
	// ErrNotAlive: the node to add is suspected, dead or gone.
	ErrNotAlive = errors.New("not alive")
	// ErrRefused: the leader cannot make the change now (another is under
	// way; the node is a voter already; it did not catch up).
	ErrRefused = errors.New("refused")
	// ErrNoLeader: no leader answered in time.
	ErrNoLeader = errors.New("no leader")
)

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotReplicated):
		return http.StatusNotImplemented
	case errors.Is(err, ErrNotMember):
		return http.StatusNotFound
	case errors.Is(err, ErrNotAlive), errors.Is(err, ErrRefused):
		return http.StatusConflict
	case errors.Is(err, ErrNoLeader):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// read returns the log's configuration as this node holds it.
func (l *voterLog) read() (VoterLog, error) {
	v := VoterLog{Service: l.name}
	err := l.svc.Read(func(p proc.Process) {
		r := p.(raftHolder).Raft()
		ms, committed := r.Configuration()
		lead, term := r.Leader()
		for _, m := range ms {
			v.Voters = append(v.Voters, int(m))
		}
		v.Committed, v.Leader, v.Term = committed, int(lead), term
		if r.Commit() == 0 && lead == proc.None && !slices.Contains(ms, l.self) {
			// A newcomer that has heard from no leader: what it holds is
			// its guess at the founders, not the log's.
			v.Voters, v.Committed = nil, false
		}
	})
	if err != nil {
		// (The service stopped: f may yet run, and v is not ours to read.)
		return VoterLog{Service: l.name}, err
	}
	return v, nil
}

// refresh sets voter from the log.
func (l *voterLog) refresh() {
	if v, err := l.read(); err == nil {
		now := slices.Contains(v.Voters, int(l.self))
		switch was := l.voter.Swap(now); {
		case was && !now && l.left != nil:
			l.left()
		case !was && now && l.back != nil:
			l.back()
		}
	}
}

// Voters is the configuration of each replicated log as this node holds it.
func (n *Node) Voters() (Voters, error) {
	vs := Voters{Node: int(n.cfg.ID), Voter: len(n.logs) > 0}
	for _, l := range n.logs {
		v, err := l.read()
		if err != nil {
			return Voters{}, err
		}
		vs.Logs = append(vs.Logs, v)
		vs.Voter = vs.Voter && slices.Contains(v.Voters, int(n.cfg.ID))
	}
	return vs, nil
}

// ChangeVoters adds node id to the configuration of every replicated log
// (add), or removes it, one log after another; a log whose committed
// configuration is already the one asked for is left alone, so a change
// cut short is finished by asking again (but adding a voter of every log,
// or removing a node no log has, is refused). To be added, a node must be an
// alive member (it joined, or is a founder). It returns when every log has
// committed the change, or fails naming the reason (errors.Is: ErrNotMember,
// ErrNotAlive, ErrRefused, ErrNoLeader, ctx's error).
func (n *Node) ChangeVoters(ctx context.Context, id proc.ID, add bool) (Voters, error) {
	if len(n.logs) == 0 {
		return Voters{}, fmt.Errorf("%w: the cluster's locks are %s, a textbook algorithm run by the founding members, not a replicated log", ErrNotReplicated, n.cfg.Lock.Name)
	}
	if id < 0 || int(id) >= MaxIDs {
		return Voters{}, fmt.Errorf("%w: node %d: ids are 0 to %d", ErrNotMember, id, MaxIDs-1)
	}
	before, err := n.Voters()
	if err != nil {
		return Voters{}, err
	}
	if add {
		in := true
		for _, v := range before.Logs {
			in = in && v.Committed && slices.Contains(v.Voters, int(id))
		}
		if in {
			return before, fmt.Errorf("%w: node %d is a voter already (voters: %v)", ErrRefused, id, before.Logs[0].Voters)
		}
		if err := n.mayVote(ctx, id); err != nil {
			return before, err
		}
	} else {
		in := false
		for _, v := range before.Logs {
			in = in || slices.Contains(v.Voters, int(id))
		}
		if !in {
			return before, fmt.Errorf("%w: node %d is not a voter (voters: %v)", ErrNotMember, id, before.Logs[0].Voters)
		}
	}
	for _, l := range n.logs {
		if err := l.change(ctx, id, add); err != nil {
			vs, _ := n.Voters()
			return vs, fmt.Errorf("%s: %w", l.name, err)
		}
	}
	for _, l := range n.logs {
		l.refresh()
	}
	return n.Voters()
}

// mayVote checks that node id may be added: a member of the cluster that
// is alive, keeps its state on stable storage — a voter that forgot its
// log at a restart could vote twice in a term or lose committed entries —
// and runs the same kinds as this node (kinds.go). The members map tells
// which members keep a data_dir and what they run; news of a member that
// has just joined is waited for, up to durableWait.
func (n *Node) mayVote(ctx context.Context, id proc.ID) error {
	if n.members == nil {
		if int(id) < n.cfg.N {
			return nil
		}
		return fmt.Errorf("%w: node %d is not one of the %d founding members, and this cluster takes no joins (members: false)", ErrNotMember, id, n.cfg.N)
	}
	deadline := time.Now().Add(durableWait)
	for {
		ms, err := n.members.Members()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(ms, func(m members.Member) bool { return m.ID == int(id) })
		switch {
		case i < 0:
			return fmt.Errorf("%w: node %d has not joined the cluster (cohort members lists those that have)", ErrNotMember, id)
		case ms[i].State != "alive":
			return fmt.Errorf("%w: node %d is %s (cohort members)", ErrNotAlive, id, ms[i].State)
		case ms[i].Kinds != "":
			if err := differ(id, ParseKinds(ms[i].Kinds), fmt.Sprintf("node %d", n.cfg.ID), n.cfg.kinds()); err != nil {
				return fmt.Errorf("%w: %w (as the members map tells): every voter must run the same, or it would be half added; change node %d's node.yaml and restart it", ErrRefused, err, id)
			}
		}
		switch {
		case ms[i].Durable && ms[i].Kinds != "":
			return nil
		case !time.Now().After(deadline):
		case !ms[i].Durable:
			return fmt.Errorf("%w: node %d keeps no data_dir (as the members map tells): a voter must keep its log across restarts; give it data_dir in its node.yaml and restart it", ErrRefused, id)
		default:
			return fmt.Errorf("%w: node %d announces no kinds of lock, group and queues in the members map (an older release?): a voter must run the same as the others (%s)", ErrRefused, id, n.cfg.kinds())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(changePoll):
		}
	}
}

// durableWait is how long an addition waits for the members map to tell
// that the node keeps a data_dir.
const durableWait = 3 * time.Second

// changePoll is how often a change's progress is read from the log.
const changePoll = 10 * time.Millisecond

// change adds or removes id in this log and waits until the change is
// committed here. The leader answers a refusal; success shows in the log.
func (l *voterLog) change(ctx context.Context, id proc.ID, add bool) error {
	// What this node holds may be behind the leader: a change just
	// committed through another node may not have reached it yet (a
	// removal, say, that this node still shows undone). So what it holds
	// is trusted to show the change made only where it leads, once a
	// configuration other than the one it held when asked has reached it,
	// or once the leader has answered that the change is made.
	asked, began := l.latest(), time.Now()
	made := false // the leader said so
	done := func() (bool, error) {
		v, err := l.read()
		fresh := made || v.Leader == int(l.self) || !slices.Equal(v.Voters, asked)
		return err == nil && fresh && v.Committed && slices.Contains(v.Voters, int(id)) == add, err
	}
	if ok, err := done(); ok || err != nil {
		return err
	}
	term := l.term()
	answers := make(chan proc.Output, 8)
	stop := l.svc.OnOutput(func(o proc.Output) {
		switch o := o.(type) {
		case consensus.Refused:
		case consensus.NotLeader:
			if o.Data != nil {
				return // a proposal's, not ours
			}
		default:
			return
		}
		select {
		case answers <- o:
		default:
		}
	})
	defer stop()
	var in proc.Input = consensus.RemoveServer{ID: id}
	if add {
		in = consensus.AddServer{ID: id}
	}
	if err := l.svc.Input(in); err != nil {
		return err
	}
	tick := time.NewTicker(changePoll)
	defer tick.Stop()
	var retry <-chan time.Time // set while there is no leader to ask
	for {
		select {
		case <-ctx.Done():
			if retry != nil {
				return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
			}
			return fmt.Errorf("the change was not committed in time (the leader may have lost it: ask again): %w", ctx.Err())
		case o := <-answers:
			switch o := o.(type) {
			case consensus.Refused:
				made = made || o.Made(id, add)
				if ok, _ := done(); ok {
					return nil
				}
				if o.Pending(id, add) {
					// This change, asked twice, is under way or made at
					// the leader: wait for this node to see it committed.
					continue
				}
				if o.Uncommitted() {
					v, _ := l.read()
					switch {
					case slices.Contains(v.Voters, int(id)) == add:
						// The change under way is this one (asked again
						// of a new leader): wait for its commit.
						continue
					case time.Since(began) < settleWait && slices.Equal(l.latest(), asked):
						// The leader has yet to commit the configuration
						// this node holds, or an entry of its term (a
						// leader just elected — after the last change
						// removed its predecessor, say): no other change
						// has reached this node, so ask again.
						retry = time.After(settlePoll)
						continue
					}
				}
				return fmt.Errorf("%w: %s", ErrRefused, o.Reason)
			case consensus.NotLeader:
				retry = time.After(100 * time.Millisecond)
			}
		case <-retry:
			retry = nil
			if err := l.svc.Input(in); err != nil {
				return err
			}
		case <-tick.C:
			if ok, err := done(); ok || err != nil {
				return err
			}
			if t := l.term(); t != term && retry == nil {
				// A new leader knows nothing of a change the last one
				// was catching a newcomer up for, or had not yet
				// replicated: ask it.
				term, began = t, time.Now()
				if err := l.svc.Input(in); err != nil {
					return err
				}
			}
		}
	}
}

// term is the log's term as this node knows it.
func (l *voterLog) term() uint64 {
	v, _ := l.read()
	return v.Term
}

// latest is the log's last configuration as this node holds it,
// committed or not.
func (l *voterLog) latest() []int {
	v, _ := l.read()
	return v.Voters
}

// A change refused because the leader has yet to commit the last
// configuration is asked again every settlePoll for up to settleWait
// while no other configuration reaches this node: a leader just elected
// commits an entry of its term within a heartbeat or two.
const (
	settleWait = 3 * time.Second
	settlePoll = 50 * time.Millisecond
)

// watchVoters keeps each log's voter flag up to date until ctx ends.
func (n *Node) watchVoters(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, l := range n.logs {
				l.refresh()
			}
		}
	}
}

// logNamed is the node's replicated log of service name, or nil.
func (n *Node) logNamed(name string) *voterLog {
	for _, l := range n.logs {
		if l.name == name {
			return l
		}
	}
	return nil
}

// serves names what the node serves while it votes in the log.
func (l *voterLog) serves() string {
	switch l.name {
	case lock.ServiceName:
		return "locks and elections"
	case queue.ServiceName:
		return "queues"
	}
	return l.name
}

// votersOnly serves h while this node votes in log l, and else answers
// 503 saying why.
func (n *Node) votersOnly(l *voterLog, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.voter.Load() {
			l.refresh() // it may have been added since the last look
		}
		if l.voter.Load() {
			h.ServeHTTP(w, r)
			return
		}
		how := "was removed from it"
		w.Header().Set(queue.NotVoterHeader, "1")
		if n.joined() {
			how = "joined the running cluster and was not added to it, or was removed"
		}
		httpapi.Fail(w, http.StatusServiceUnavailable, fmt.Sprintf(
			"node %d does not vote in the cluster's replicated log of %s (it %s): it serves %s once added (cohort cluster add %d); ask another node meanwhile",
			n.cfg.ID, l.name, how, l.serves(), n.cfg.ID))
	})
}

// clusterRoutes serves the voters: GET /v1/cluster/voters, and PUT (add)
// or DELETE (remove) /v1/cluster/voters/{id}.
func (n *Node) clusterRoutes(api *http.ServeMux) {
	api.HandleFunc("GET /v1/cluster/voters", func(w http.ResponseWriter, r *http.Request) {
		if len(n.logs) == 0 {
			httpapi.Fail(w, http.StatusNotImplemented, fmt.Sprintf("%v: the cluster's locks are %s", ErrNotReplicated, n.cfg.Lock.Name))
			return
		}
		vs, err := n.Voters()
		if err != nil {
			httpapi.Fail(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, vs)
	})
	change := func(add bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id, err := ParseID(r.PathValue("id"))
			if err != nil {
				httpapi.Fail(w, http.StatusBadRequest, err.Error())
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), changeTimeout)
			defer cancel()
			vs, err := n.ChangeVoters(ctx, id, add)
			if err != nil {
				n.log.Warn("changing the voters", "node", int(id), "add", add, "err", err)
				httpapi.Fail(w, statusOf(err), err.Error())
				return
			}
			verb := "removed"
			if add {
				verb = "added"
			}
			n.log.Info("voters changed: node "+verb, "node", int(id), "voters", vs.Logs[0].Voters)
			httpapi.Reply(w, http.StatusOK, vs)
		}
	}
	api.HandleFunc("PUT /v1/cluster/voters/{id}", change(true))
	api.HandleFunc("DELETE /v1/cluster/voters/{id}", change(false))
}

// changeTimeout bounds a change on the API: a newcomer's catch-up is
// refused by the leader well within it (10 election timeouts in a round).
const changeTimeout = 30 * time.Second

// ParseID parses a node's id: a number from 0 to MaxIDs−1.
func ParseID(s string) (proc.ID, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(s, "p"))
	if err != nil || id < 0 || id >= MaxIDs {
		return proc.None, fmt.Errorf("node id %q: want a number from 0 to %d", s, MaxIDs-1)
	}
	return proc.ID(id), nil
}

// Client changes and reads a cluster's voters over the API.
type Client struct {
	Endpoints []string // nodes' API addresses; a call uses the first that answers
	Token     string
	HTTP      *http.Client
}

func (c *Client) api() *httpapi.Client {
	return &httpapi.Client{Endpoints: c.Endpoints, Token: c.Token, HTTP: c.HTTP}
}

// Voters is the configuration as the first node that answers holds it.
func (c *Client) Voters(ctx context.Context) (Voters, error) {
	return c.call(ctx, http.MethodGet, "/v1/cluster/voters")
}

// Add adds node id to the voters; Remove removes it.
func (c *Client) Add(ctx context.Context, id proc.ID) (Voters, error) {
	return c.call(ctx, http.MethodPut, fmt.Sprintf("/v1/cluster/voters/%d", id))
}

func (c *Client) Remove(ctx context.Context, id proc.ID) (Voters, error) {
	return c.call(ctx, http.MethodDelete, fmt.Sprintf("/v1/cluster/voters/%d", id))
}

func (c *Client) call(ctx context.Context, method, path string) (Voters, error) {
	var vs Voters
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, method, base+path, nil, &vs)
	})
	return vs, err
}
