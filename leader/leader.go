// Package leader is Cohort's leader election for applications: a named
// election on a live cluster node, run by the bully-fd algorithm (the
// bully algorithm driven by a heartbeat failure detector).
//
//	e, err := leader.New(node, "scheduler", election.DefaultLeader)
//	err = e.Campaign(ctx)              // blocks until this node leads
//	for l := range e.Watch(ctx) { ... } // every change of leader
//	id, ok := e.Leader()
//
// Every node of the cluster takes part in every election it hears of, as an
// observer; Campaign makes this node a candidate, and the highest candidate
// that the failure detector does not suspect leads — with the default
// configuration, only while it hears from a majority of the cluster, so a
// leader cut off in a minority steps down before the others elect anew.
// Each leadership has a term, higher than every term before it that its
// leader heard of: hand it to a resource as a fencing token. A leader that crashes
// is replaced once the survivors stop hearing its heartbeats (Timeout,
// 300 ms by default); when it comes back it leads again, as the bully
// algorithm wants.
package leader

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

// Algorithm is the bully-fd entry of the election family with cfg's
// timeouts and every process an observer until it campaigns. Every node of
// a cluster must use the same configuration.
func Algorithm(cfg election.LeaderConfig) proc.Algorithm {
	a, err := registry.Find("election", "bully-fd")
	if err != nil {
		panic("leader: " + err.Error())
	}
	cfg.Candidate = false
	a.New = election.NewBullyFD(cfg)
	return a
}

// Resolver is a live.Config.Resolve for a cluster whose elections all run
// with cfg: a node joins election "leader/x" when the first message for it
// arrives.
func Resolver(cfg election.LeaderConfig) func(string) (proc.Algorithm, bool) {
	a := Algorithm(cfg)
	return func(service string) (proc.Algorithm, bool) {
		name, ok := strings.CutPrefix(service, "leader/")
		return a, ok && ValidName(name) == nil
	}
}

// ValidName checks an election's name.
func ValidName(name string) error { return httpapi.ValidName("election", name) }

// Leadership is a node's view of an election.
type Leadership struct {
	Leader  proc.ID   `json:"leader"`    // proc.None (-1) while there is none
	Term    uint64    `json:"term"`      // the leadership's term: rises with every new leader (a fencing token)
	Self    bool      `json:"is_leader"` // this node leads
	Since   time.Time `json:"since"`     // when this view began
	Changes uint64    `json:"changes"`   // how many times the view changed on this node
}

// Election is a named election on one node. Its methods are safe for
// concurrent use.
type Election struct {
	svc  *live.Service
	name string
	self proc.ID

	mu          sync.Mutex
	cur         Leadership
	changed     chan struct{} // closed and replaced at every change
	campaigning bool
	done        chan struct{} // closed when the service stops
}

// New joins the election called name on node n, as an observer. cfg must
// be the same on every node (election.DefaultLeader unless tuned).
func New(n *live.Node, name string, cfg election.LeaderConfig) (*Election, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	svc, err := n.Service("leader/"+name, Algorithm(cfg))
	if err != nil {
		return nil, err
	}
	e := &Election{svc: svc, name: name, self: n.Self(), changed: make(chan struct{}), done: make(chan struct{}),
		cur: Leadership{Leader: proc.None, Since: time.Now()}}
	outs, _ := svc.Subscribe(1024)
	go e.follow(outs)
	// The service may have run before we subscribed (a peer's message
	// starts it): ask for its current view.
	if err := svc.Input(election.Report{}); err != nil {
		return nil, err
	}
	return e, nil
}

// follow turns the algorithm's Elected outputs into the node's view.
func (e *Election) follow(outs <-chan proc.Output) {
	defer close(e.done)
	for o := range outs {
		el, ok := o.(election.Elected)
		if !ok {
			continue
		}
		e.mu.Lock()
		if el.Leader != e.cur.Leader || el.Term != e.cur.Term {
			e.cur = Leadership{Leader: el.Leader, Term: el.Term, Self: el.Leader == e.self, Since: time.Now(), Changes: e.cur.Changes + 1}
			close(e.changed)
			e.changed = make(chan struct{})
		}
		e.mu.Unlock()
	}
	select {
	case <-e.svc.Done():
	default:
		// Cut off for falling behind (live.Service.Subscribe): the view
		// is no longer followed, so it must not claim a leader.
		e.mu.Lock()
		e.cur = Leadership{Leader: proc.None, Since: time.Now(), Changes: e.cur.Changes + 1}
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
	}
}

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Leader returns the leader as this node sees it; false while there is
// none (an election is under way).
func (e *Election) Leader() (proc.ID, bool) {
	l := e.Current()
	return l.Leader, l.Leader != proc.None
}

// Current returns this node's view of the election.
func (e *Election) Current() Leadership {
	l, _ := e.snapshot()
	return l
}

func (e *Election) snapshot() (Leadership, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur, e.changed
}

// ErrClosed is returned once the node is closed.
var ErrClosed = live.ErrClosed

// Campaign makes this node a candidate and blocks until it leads, or ctx
// ends — then the candidacy is withdrawn, as if Resign were called. A
// higher candidate that is alive keeps this node waiting: it leads first.
func (e *Election) Campaign(ctx context.Context) error {
	e.mu.Lock()
	e.campaigning = true
	e.mu.Unlock()
	if err := e.svc.Input(election.Campaign{}); err != nil {
		return err
	}
	for {
		l, changed := e.snapshot()
		if l.Self {
			return nil
		}
		select {
		case <-changed:
		case <-e.done:
			return ErrClosed
		case <-ctx.Done():
			_ = e.Resign()
			return ctx.Err()
		}
	}
}

// Resign withdraws this node's candidacy; if it leads, it steps down and
// the next candidate takes over.
func (e *Election) Resign() error {
	e.mu.Lock()
	e.campaigning = false
	e.mu.Unlock()
	return e.svc.Input(election.Resign{})
}

// Campaigning reports whether this node is a candidate.
func (e *Election) Campaigning() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.campaigning
}

// Watch sends this node's view of the election now and after every change,
// until ctx ends or the node closes; then it closes the channel. A slow
// reader misses intermediate views, never the latest.
func (e *Election) Watch(ctx context.Context) <-chan Leadership {
	ch := make(chan Leadership)
	go func() {
		defer close(ch)
		var sent uint64
		first := true
		for {
			l, changed := e.snapshot()
			if first || l.Changes != sent {
				select {
				case ch <- l:
					sent, first = l.Changes, false
					continue
				case <-ctx.Done():
					return
				case <-e.done:
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-e.done:
				return
			}
		}
	}()
	return ch
}

// WaitFor blocks until ok holds for this node's view, or ctx ends.
func (e *Election) WaitFor(ctx context.Context, ok func(Leadership) bool) (Leadership, error) {
	for {
		l, changed := e.snapshot()
		if ok(l) {
			return l, nil
		}
		select {
		case <-changed:
		case <-e.done:
			return l, ErrClosed
		case <-ctx.Done():
			return l, ctx.Err()
		}
	}
}
