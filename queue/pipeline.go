package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/cohort-go/cohort/consensus"
)

// A pipeline of puts through the Go API: one publisher keeps a window of
// puts under way, as with JetStream's asynchronous publish, instead of
// waiting for each put's sync before the next. Each put is still
// acknowledged only once it is durable: what one publisher gains is that
// its puts share syncs, as many publishers' puts do (group commit).
//
// A node's own queues: PutAsync hands each put to the log at once,
// joining the commit of the put before it while the log's committer has
// not taken that yet (one record for the puts that came while the log
// synced the last), and the committer resolves the puts' acks itself
// once their sync is done — no goroutine between the publisher and the
// disk, which on a loaded machine would add its scheduling delay to
// every put. Replicated queues: the puts that came while a run was on its
// way to a majority go together as the next run, started without waiting
// for the one before (runStream), as a stream of puts does (stream.go).

// DefaultWindow bounds the puts a Pipeline holds unacknowledged when
// NewPipeline is given 0: as a Publisher's (JetStream's asynchronous
// publish holds 4,000 by default).
const DefaultWindow = DefaultMaxPending

// Pipeline puts messages on one queue of a Manager or a Replicated in
// this process, without waiting for earlier puts: PutAsync returns at
// once (while fewer than the window's puts are unacknowledged), and the
// put's PutAck is resolved once the put is durable — synced to this
// node's disk, or committed by a majority — or has failed. The puts are
// applied in the order of the PutAsync calls, and acknowledged in that
// order. The puts applied are always a prefix of those put (as a
// stream's): once a put fails, every later one fails with the same error
// and the Pipeline ends — except a put refused at once for its size,
// which fails alone. A Pipeline may be used by many goroutines.
type Pipeline struct {
	window    int
	maxBodies int
	name      string
	m         *Manager // a node's own queues; else runs of a Replicated:
	start     func(ctx context.Context, bodies [][]byte) (wait func() ([]uint64, error), err error)
	ctx       context.Context
	cancel    context.CancelFunc
	commits   chan pipelineCommit
	done      chan struct{} // closing, and every put has its outcome
	doneOnce  sync.Once
	order     sync.Mutex // a Manager's puts: held while one is handed to the log
	last      *commit    // under order: the Manager's commit of the last put

	mu      sync.Mutex
	room    *sync.Cond // a put left the window, or one came, or the end
	queued  []pipelinePut
	held    int   // puts queued or under way, not resolved
	err     error // the end: every later put fails with it
	closing bool
}

type pipelinePut struct {
	body []byte
	ack  *PutAck
}

// pipelineCommit is a commit under way: its puts, and wait, which
// returns the ids of those applied (a prefix) and why the next was not.
type pipelineCommit struct {
	puts []pipelinePut
	wait func() ([]uint64, error)
	err  error
}

// NewPipeline returns a Pipeline of puts to queue name of b, a *Manager
// or a *Replicated, holding at most window puts unacknowledged (0:
// DefaultWindow); a put beyond waits for room. Close it to end it.
func NewPipeline(b Backend, name string, window int) (*Pipeline, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if window < 0 {
		return nil, fmt.Errorf("window %d: want 0 (the default) or more", window)
	}
	p := &Pipeline{window: window, cancel: func() {}, done: make(chan struct{})}
	if p.window == 0 {
		p.window = DefaultWindow
	}
	p.room = sync.NewCond(&p.mu)
	var stop func() // the runs' resends
	switch m := b.(type) {
	case *Manager:
		p.maxBodies, p.m, p.name = MaxMessage, m, name
		return p, nil
	case *Replicated:
		// Runs numbered under an origin of the Pipeline's, each applied
		// only after the one before it (runStream).
		p.ctx, p.cancel = context.WithCancel(context.Background())
		p.commits = make(chan pipelineCommit, maxStreamCommits)
		runs := m.newRunStream()
		stop = runs.close
		origin, seq, after := rand.Uint64()|consensus.ClientOrigin, uint64(1), uint64(0)
		p.maxBodies = MaxReplicatedMessage
		p.start = func(ctx context.Context, bodies [][]byte) (func() ([]uint64, error), error) {
			ch, err := runs.start(ctx, consensus.QueuePutRun{Queue: name, Origin: origin, Seq: seq, After: after, Bodies: bodies})
			after = seq + uint64(len(bodies)) - 1
			seq += uint64(len(bodies))
			return func() ([]uint64, error) { r := <-ch; return r.ids, r.err }, err
		}
	default:
		return nil, fmt.Errorf("queue: a pipeline of puts needs a *Manager or a *Replicated, not %T", b)
	}
	go p.send()
	go func() {
		defer p.doneOnce.Do(func() { close(p.done) })
		p.resolve()
		stop()
		p.cancel()
	}()
	return p, nil
}

// PutAsync puts body; the outcome comes on the returned PutAck. It waits
// only while the window is full.
func (p *Pipeline) PutAsync(body []byte) *PutAck {
	a := &PutAck{done: make(chan struct{})}
	if len(body) > p.maxBodies {
		a.resolve(0, fmt.Errorf("%w: %d bytes, the most is %d", ErrTooBig, len(body), p.maxBodies))
		return a
	}
	if body == nil {
		body = []byte{}
	}
	p.mu.Lock()
	for p.held >= p.window && p.err == nil && !p.closing {
		p.room.Wait()
	}
	switch {
	case p.err != nil:
		err := p.err
		p.mu.Unlock()
		a.resolve(0, err)
		return a
	case p.closing:
		p.mu.Unlock()
		a.resolve(0, ErrPublisherClosed)
		return a
	}
	p.held++
	if p.m == nil {
		p.queued = append(p.queued, pipelinePut{body: body, ack: a})
		p.room.Broadcast()
		p.mu.Unlock()
		return a
	}
	p.mu.Unlock()
	// Under order, so that the puts reach the log in the order of the
	// calls and none after a refusal does.
	p.order.Lock()
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	if err == nil {
		var c *commit
		c, err = p.m.pipelinePut(p.name, body, a, p.last, p.committed)
		if c == nil && err == nil { // a transient queue's, acknowledged
			p.release(1)
		}
		if c != nil {
			p.last = c
		}
	}
	if err != nil {
		p.fail(err)
	}
	p.order.Unlock()
	if err != nil {
		a.resolve(0, err)
		p.release(1)
	}
	return a
}

// committed returns the then of a Manager's commit c: once it is durable
// (or failed: then every later put fails), its puts leave the window.
func (p *Pipeline) committed(c *commit) func(error) {
	return func(err error) {
		if err != nil {
			p.fail(err)
		}
		p.release(len(c.acks))
	}
}

// release takes n resolved puts out of the window.
func (p *Pipeline) release(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= n
	p.room.Broadcast()
	if p.m != nil && p.closing && p.held == 0 {
		p.doneOnce.Do(func() { close(p.done) })
	}
}

// Put puts body and waits for its acknowledgement.
func (p *Pipeline) Put(ctx context.Context, body []byte) (uint64, error) {
	return p.PutAsync(body).Wait(ctx)
}

// take waits for puts and takes those one commit holds (at least one);
// none once the Pipeline is closing with nothing queued, or has failed.
func (p *Pipeline) take() []pipelinePut {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queued) == 0 && !p.closing && p.err == nil {
		p.room.Wait()
	}
	if len(p.queued) == 0 || p.err != nil {
		return nil
	}
	n, size := 1, len(p.queued[0].body)
	for n < len(p.queued) && n < MaxTxOps && size+len(p.queued[n].body) <= p.maxBodies {
		size += len(p.queued[n].body)
		n++
	}
	puts := p.queued[:n:n]
	p.queued = p.queued[n:]
	return puts
}

// send starts a commit of the puts queued while the last ones were
// starting, without waiting for it to be durable: at most
// maxStreamCommits are under way.
func (p *Pipeline) send() {
	defer close(p.commits)
	bodies := func(puts []pipelinePut) [][]byte {
		b := make([][]byte, len(puts))
		for i, put := range puts {
			b[i] = put.body
		}
		return b
	}
	for {
		puts := p.take()
		if len(puts) == 0 {
			return
		}
		wait, err := p.start(p.ctx, bodies(puts))
		p.commits <- pipelineCommit{puts: puts, wait: wait, err: err}
		if err != nil {
			return
		}
	}
}

// resolve waits for each commit in order and resolves its puts' acks;
// after a failure it fails every put not resolved, and those to come.
func (p *Pipeline) resolve() {
	for c := range p.commits {
		var ids []uint64
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err == nil {
			err = c.err
		}
		if err == nil { // else not applied: a replicated run waits for the one before
			ids, err = c.wait()
		}
		if err == nil && len(ids) != len(c.puts) {
			err = fmt.Errorf("%d ids for %d puts", len(ids), len(c.puts))
			ids = nil
		}
		if err != nil {
			p.fail(err)
			p.cancel() // the runs under way end
		}
		for i, put := range c.puts {
			if i < len(ids) {
				put.ack.resolve(ids[i], nil)
			} else {
				put.ack.resolve(0, err)
			}
		}
		p.release(len(c.puts))
	}
	p.mu.Lock()
	queued := p.queued
	p.queued, p.held = nil, 0
	err := p.err
	if err == nil {
		err = ErrPublisherClosed
	}
	p.room.Broadcast()
	p.mu.Unlock()
	for _, put := range queued {
		put.ack.resolve(0, err)
	}
}

// fail ends the Pipeline with err (the first error stays).
func (p *Pipeline) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.room.Broadcast()
	p.mu.Unlock()
}

// Close waits for the outcome of every put and ends the Pipeline. At
// ctx's end every put not acknowledged fails with ctx's error (those
// under way may yet be applied). It returns the error that ended the
// Pipeline early, if any.
func (p *Pipeline) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	p.room.Broadcast()
	if p.m != nil && p.held == 0 {
		p.doneOnce.Do(func() { close(p.done) })
	}
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.fail(ctx.Err())
		p.cancel()
		if p.m != nil {
			return ctx.Err() // the puts under way are resolved by the log
		}
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
