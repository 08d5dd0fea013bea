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
	"strings"
	"sync"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
)

// Lock is a named distributed lock on one node. Its methods are safe for
// concurrent use; goroutines of the same node queue for it locally.
type Lock struct {
	svc  *live.Service
	name string
	sem  chan struct{} // full while a local goroutine holds or is acquiring the lock

	mu    sync.Mutex
	held  bool
	token uint64
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
	return &Lock{svc: s, name: name, sem: make(chan struct{}, 1)}, nil
}

// Resolver is a live.Config.Resolve for a cluster whose locks all run
// algorithm a: a node starts lock "lock/x" when the first message for it
// arrives.
func Resolver(a proc.Algorithm) func(string) (proc.Algorithm, bool) {
	return func(service string) (proc.Algorithm, bool) {
		name, ok := strings.CutPrefix(service, "lock/")
		return a, ok && validName.MatchString(name)
	}
}

// ErrNotHeld is returned by Unlock when this node does not hold the lock.
var ErrNotHeld = errors.New("lock not held by this node")

// Lock blocks until this node holds the lock, or ctx ends. It returns the
// grant's fencing token (0 if the algorithm provides none). If ctx ends
// while the request is under way, the request is not withdrawn — the
// algorithms cannot take one back — so the lock, once granted, is released
// at once in the background.
func (l *Lock) Lock(ctx context.Context) (uint64, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	entered, stop := l.watch(isEnter)
	if err := l.svc.Input(mutex.Acquire{}); err != nil {
		stop()
		<-l.sem
		return 0, err
	}
	select {
	case o := <-entered:
		stop()
		return l.granted(o), nil
	case <-ctx.Done():
		go l.abandon(entered, stop)
		return 0, ctx.Err()
	case <-l.svc.Done():
		stop()
		select {
		case o := <-entered: // it came just before the service stopped
			return l.granted(o), nil
		default:
		}
		<-l.sem
		return 0, live.ErrClosed
	}
}

// granted records the grant that Enter o reports and returns its token.
func (l *Lock) granted(o proc.Output) uint64 {
	token := o.(mutex.Enter).Token
	l.mu.Lock()
	l.held, l.token = true, token
	l.mu.Unlock()
	return token
}

// watch returns a channel that receives the first output of the service
// that match accepts, from now on, and the function that stops watching.
// The service calls the hook in the goroutine that handles the event
// (often the one that gave the input, or the transport's reader), so the
// output reaches the waiter with one goroutine wake-up at most.
func (l *Lock) watch(match func(proc.Output) bool) (<-chan proc.Output, func()) {
	ch := make(chan proc.Output, 1)
	stop := l.svc.OnOutput(func(o proc.Output) {
		if match(o) {
			select {
			case ch <- o:
			default: // only the first one counts
			}
		}
	})
	return ch, stop
}

func isEnter(o proc.Output) bool { _, ok := o.(mutex.Enter); return ok }
func isExit(o proc.Output) bool  { _, ok := o.(mutex.Exit); return ok }

// abandon waits for a grant nobody wants any more and gives it back.
func (l *Lock) abandon(entered <-chan proc.Output, stop func()) {
	select {
	case <-entered:
		stop()
		_ = l.release()
	case <-l.svc.Done():
		stop()
		<-l.sem
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

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// release sends Release, waits for Exit and frees the local slot.
func (l *Lock) release() error {
	defer func() { <-l.sem }()
	exited, stop := l.watch(isExit)
	defer stop()
	if err := l.svc.Input(mutex.Release{}); err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-l.svc.Done():
		select {
		case <-exited:
			return nil
		default:
			return live.ErrClosed
		}
	}
}
