// Package lock is Cohort's distributed lock for applications: a named lock
// backed by one of the mutual exclusion algorithms, running on a live
// cluster node.
//
//	l, err := lock.New(node, "db-migrations", algo)
//	token, err := l.Lock(ctx)   // blocks until this node holds the lock
//	defer l.Unlock()
//
// Every grant carries a fencing token that strictly increases across the
// grants of the lock (when the algorithm provides one, as Ricart–Agrawala
// and Lamport do: the request's Lamport timestamp), so a resource can
// refuse a stale holder.
package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
)

// Lock is a named distributed lock on one node. Its methods are safe for
// concurrent use; goroutines of the same node queue for it locally, in
// order, and the algorithm sees one request at a time from the node: a
// goroutine that finds the lock free here asks for it; one that finds it
// busy waits its turn, and the goroutine that releases the lock asks for
// it on the next one's behalf, in the same breath (see release).
type Lock struct {
	svc  *live.Service
	name string

	mu    sync.Mutex
	busy  bool      // a local goroutine holds the lock, or a request is under way for one
	queue []*waiter // local goroutines waiting for their turn, in order
	held  bool
	token uint64
}

// A waiter is one Lock call: the Enter of the request made for it arrives
// on entered.
type waiter struct {
	hold    time.Duration // see LockFor
	entered chan proc.Output
	stop    func() // stops watching for that Enter; set, under mu, with the request
}

// New returns the lock called name on node n, backed by algorithm a (one
// of the mutex family). Every node of the cluster must use the same
// algorithm for the same name.
func New(n *live.Node, name string, a proc.Algorithm) (*Lock, error) {
	if a.Family != "mutex" {
		return nil, fmt.Errorf("lock %q: %s is not a mutual exclusion algorithm", name, a.Name)
	}
	s, err := n.Service("lock/"+name, a)
	if err != nil {
		return nil, err
	}
	return &Lock{svc: s, name: name}, nil
}

// ValidName checks a lock's name (httpapi.ValidName).
func ValidName(name string) error { return httpapi.ValidName("lock", name) }

// Resolver is a live.Config.Resolve for a cluster whose locks all run
// algorithm a: a node starts lock "lock/x" when the first message for it
// arrives.
func Resolver(a proc.Algorithm) func(string) (proc.Algorithm, bool) {
	return func(service string) (proc.Algorithm, bool) {
		name, ok := strings.CutPrefix(service, "lock/")
		return a, ok && ValidName(name) == nil
	}
}

// ErrNotHeld is returned by Unlock when this node does not hold the lock.
var ErrNotHeld = errors.New("lock not held by this node")

// Lock blocks until this node holds the lock, or ctx ends. It returns the
// grant's fencing token (0 if the algorithm provides none). If ctx ends
// while the request is under way, the request is not withdrawn — the
// algorithms cannot take one back — so the lock, once granted, is released
// at once in the background.
func (l *Lock) Lock(ctx context.Context) (uint64, error) { return l.LockFor(ctx, 0) }

// LockFor is Lock for a holder that may act for up to hold without this
// node: a remote client under a lease of that TTL. An algorithm that
// survives restarts keeps the hold on stable storage while the node holds
// the lock for it, and if the node crashes then, on its restart, lets
// nobody else in until the hold has passed (see mutex.Acquire). A holder
// in this process needs none: it dies with the node.
func (l *Lock) LockFor(ctx context.Context, hold time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w := &waiter{hold: hold, entered: make(chan proc.Output, 1)}
	l.mu.Lock()
	if l.busy {
		l.queue = append(l.queue, w)
		l.mu.Unlock()
	} else {
		l.busy = true
		l.mu.Unlock()
		if err := l.request(w, mutex.Acquire{Hold: w.hold}); err != nil {
			return 0, err
		}
	}
	select {
	case o := <-w.entered:
		l.stopWatching(w)
		return l.granted(o), nil
	case <-ctx.Done():
		if !l.leave(w) {
			go l.abandon(w)
		}
		return 0, ctx.Err()
	case <-l.svc.Done():
		l.leave(w)
		l.stopWatching(w)
		select {
		case o := <-w.entered: // it came just before the service stopped
			return l.granted(o), nil
		default:
		}
		return 0, live.ErrClosed
	}
}

// request gives the algorithm ins — Acquire, or Release then Acquire — the
// Acquire made for w.
func (l *Lock) request(w *waiter, ins ...proc.Input) error {
	stop := l.svc.OnOutput(func(o proc.Output) {
		if _, ok := o.(mutex.Enter); ok {
			select {
			case w.entered <- o:
			default: // only the first one counts
			}
		}
	})
	l.mu.Lock()
	w.stop = stop
	l.mu.Unlock()
	return l.svc.Inputs(ins...)
}

func (l *Lock) stopWatching(w *waiter) {
	l.mu.Lock()
	stop := w.stop
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// leave takes w out of the local queue and reports whether it was there;
// if not, a request is under way for it.
func (l *Lock) leave(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.queue, w); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
		return true
	}
	return false
}

// granted records the grant that Enter o reports and returns its token.
func (l *Lock) granted(o proc.Output) uint64 {
	token := o.(mutex.Enter).Token
	l.mu.Lock()
	l.held, l.token = true, token
	l.mu.Unlock()
	return token
}

// abandon waits for a grant nobody wants any more and gives it back.
func (l *Lock) abandon(w *waiter) {
	select {
	case <-w.entered:
		l.stopWatching(w)
		_ = l.release()
	case <-l.svc.Done():
		l.stopWatching(w)
	}
}

// Unlock releases the lock held by this node.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	held := l.held
	l.held = false
	l.mu.Unlock()
	if !held {
		return ErrNotHeld
	}
	return l.release()
}

// Held reports whether this node holds the lock, and the grant's token.
func (l *Lock) Held() (bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.token
}

// inUse reports whether a goroutine of this node holds the lock, waits
// for it, or has a request under way for it.
func (l *Lock) inUse() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy || l.held || len(l.queue) > 0
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// release gives the lock back: it sends Release and waits for Exit. If a
// local goroutine waits for the lock, it asks for the lock again on its
// behalf along with the Release, so that the algorithm's messages for both
// leave together (a reply and a request to the same node in one write,
// for Ricart–Agrawala); otherwise, or if one comes while the Release is
// under way, the next turn starts once Exit is out.
func (l *Lock) release() error {
	exited := make(chan struct{}, 1)
	stop := l.svc.OnOutput(func(o proc.Output) {
		if _, ok := o.(mutex.Exit); ok {
			select {
			case exited <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	next := l.next(false)
	var err error
	if next != nil {
		err = l.request(next, mutex.Release{}, mutex.Acquire{Hold: next.hold})
	} else {
		err = l.svc.Input(mutex.Release{})
	}
	if err != nil {
		return err
	}
	select {
	case <-exited:
	case <-l.svc.Done():
		select {
		case <-exited:
		default:
			return live.ErrClosed
		}
	}
	if next == nil {
		if next = l.next(true); next != nil {
			return l.request(next, mutex.Acquire{Hold: next.hold})
		}
	}
	return nil
}

// next takes the first local waiter off the queue. If there is none and
// idle is true, the lock is free here from now on.
func (l *Lock) next(idle bool) *waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		if idle {
			l.busy = false
		}
		return nil
	}
	w := l.queue[0]
	l.queue = l.queue[1:]
	return w
}
