// Package queuetest drives a producer and a consumer of one queue through
// a cluster's HTTP API while a test changes the cluster under them
// (restarts, kills, changes of the voters), and judges what they saw, as
// a Jepsen checker judges a history: every put the API acknowledged is
// delivered, and no message is delivered again once an ack of it was
// answered.
//
//	h := queuetest.Start("jobs", token, endpoints...)
//	... restart nodes; h.Use(the endpoints now serving) ...
//	if err := h.Drain(ctx); err != nil { t.Fatal(err) }
//	if err := h.Check(); err != nil { t.Fatal(err) }
//
// A producer of puts over a stream (StartStream, queue.Publisher) sends
// many at once and goes on through another node when one is lost; the
// history then also checks that no put was stored twice (its body
// delivered under two ids), which a resend of a put applied before would
// do without the node's duplicate table.
//
// A request that fails is not an answer: a put whose reply was lost may
// or may not be in the queue (it may be delivered, and need not be), a
// message whose ack failed may come back (at-least-once), and the
// history counts neither against the queue.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/queue"
)

// Visibility is the lease of the consumer's gets: a message whose ack
// failed comes back after it.
const Visibility = 2 * time.Second

// History is the producer's and the consumer's operations on one queue.
// Its methods are safe for concurrent use.
type History struct {
	queue, token string

	mu   sync.Mutex
	eps  []string
	next int
	// acked: bodies whose put was acknowledged; tried: those put with
	// no answer.
	acked, tried map[string]bool
	got          map[string]int             // deliveries of each body
	ids          map[string]map[uint64]bool // the ids each body was delivered under
	done         map[string]bool            // bodies whose ack was answered
	again        []string                   // bodies delivered after their ack was answered
	failed       int                        // requests that failed
	publishers   int                        // opened by a stream producer
	streams      int                        // opened by its Publishers, once they ended
	seq          int

	pause, stop context.CancelFunc // the producer's, and both's
	wg          sync.WaitGroup
	paused      chan struct{} // closed once the producer stopped
}

// Start starts a producer and a consumer of queue through the API at
// endpoints (token: the bearer token), each request through the next
// endpoint in turn.
func Start(name, token string, endpoints ...string) *History {
	return start(name, token, endpoints, func(ctx context.Context, h *History) error {
		return h.Put(ctx, h.endpoint())
	})
}

// StartStream is Start with a producer that puts over a stream of puts
// (queue.Publisher, given every endpoint), up to inFlight puts at once:
// when a node goes away the Publisher goes on through another.
func StartStream(name, token string, inFlight int, endpoints ...string) *History {
	return start(name, token, endpoints, func(ctx context.Context, h *History) error {
		return h.publish(ctx, inFlight)
	})
}

// start starts a consumer, and a producer that calls produce until the
// producer is paused or stopped, resting after each failure.
func start(name, token string, endpoints []string, produce func(context.Context, *History) error) *History {
	ctx, stop := context.WithCancel(context.Background())
	h := &History{queue: name, token: token, eps: slices.Clone(endpoints),
		acked: map[string]bool{}, tried: map[string]bool{}, got: map[string]int{}, done: map[string]bool{},
		ids: map[string]map[uint64]bool{}, stop: stop, paused: make(chan struct{})}
	pctx, pause := context.WithCancel(ctx)
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		defer close(h.paused)
		for pctx.Err() == nil {
			if produce(pctx, h) != nil {
				h.rest(pctx)
			}
		}
	}()
	h.consume(ctx)
	h.pause = pause
	return h
}

// publish puts fresh bodies over one Publisher until ctx ends or the
// Publisher fails, and records each answer.
func (h *History) publish(ctx context.Context, inFlight int) error {
	h.mu.Lock()
	c := &queue.Client{Endpoints: slices.Clone(h.eps), Token: h.token}
	h.mu.Unlock()
	p, err := c.Publish(ctx, h.queue)
	if err != nil {
		h.mu.Lock()
		h.failed++
		h.mu.Unlock()
		return err
	}
	p.MaxPending = inFlight
	h.mu.Lock()
	h.publishers++
	h.mu.Unlock()
	var answers sync.WaitGroup
	for ctx.Err() == nil {
		h.mu.Lock()
		h.seq++
		body := fmt.Sprintf("m%06d", h.seq)
		h.mu.Unlock()
		a := p.PutAsync([]byte(body))
		answers.Go(func() {
			<-a.Done()
			_, err := a.Result()
			h.mu.Lock()
			defer h.mu.Unlock()
			if err != nil {
				h.tried[body] = true
				h.failed++
				return
			}
			h.acked[body] = true
		})
		select {
		case <-a.Done():
			if _, err = a.Result(); err != nil {
				answers.Wait()
				h.mu.Lock()
				h.streams += p.Streams()
				h.mu.Unlock()
				return err
			}
		default:
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Close(cctx)
	answers.Wait()
	h.mu.Lock()
	h.streams += p.Streams()
	h.mu.Unlock()
	return err
}

// consume starts the consumer.
func (h *History) consume(ctx context.Context) {
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			if n, err := h.Get(ctx, h.endpoint()); err != nil || n == 0 {
				h.rest(ctx)
			}
		}
	}()
}

// rest waits a little after a failure, or until ctx ends.
func (h *History) rest(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

// Use sends the requests through endpoints from now on.
func (h *History) Use(endpoints ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.eps = slices.Clone(endpoints)
}

func (h *History) endpoint() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	return h.eps[h.next%len(h.eps)]
}

func (h *History) client(ep string) *queue.Client {
	return &queue.Client{Endpoints: []string{ep}, Token: h.token}
}

// Put puts a fresh body through ep, and records the answer.
func (h *History) Put(ctx context.Context, ep string) error {
	h.mu.Lock()
	h.seq++
	body := fmt.Sprintf("m%06d", h.seq)
	h.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := h.client(ep).Put(rctx, h.queue, []byte(body))
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.tried[body] = true
		h.failed++
		return err
	}
	h.acked[body] = true
	return nil
}

// Get gets up to 8 messages through ep and acks each, and records what
// it saw; it returns how many it got.
func (h *History) Get(ctx context.Context, ep string) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ms, err := h.client(ep).Get(rctx, h.queue, queue.GetOptions{Count: 8, Wait: 200 * time.Millisecond, Visibility: Visibility})
	if err != nil {
		h.mu.Lock()
		h.failed++
		h.mu.Unlock()
		return 0, err
	}
	for _, m := range ms {
		h.delivered(string(m.Body), m.ID)
		err := h.client(ep).AckLease(rctx, h.queue, m.Lease, m.ID)
		h.Acked(string(m.Body), err)
	}
	return len(ms), nil
}

// Delivered records a delivery of body.
func (h *History) Delivered(body string) { h.delivered(body, 0) }

// delivered records a delivery of body as message id (0: not known).
func (h *History) delivered(body string, id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[body]++
	if id != 0 {
		if h.ids[body] == nil {
			h.ids[body] = map[uint64]bool{}
		}
		h.ids[body][id] = true
	}
	if h.done[body] {
		h.again = append(h.again, body)
	}
}

// Acked records the answer to an ack of body (err nil: acknowledged).
func (h *History) Acked(body string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failed++
		return
	}
	h.done[body] = true
}

// Publishers is how many Publishers a stream producer opened: 1 if
// the first lasted, through every stream it lost.
func (h *History) Publishers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.publishers
}

// Streams is how many streams the stream producer's Publishers opened,
// counted once each ended (after Drain or Stop): more than Publishers
// when one replaced a stream it lost.
func (h *History) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams
}

// Acknowledged is how many puts were acknowledged so far.
func (h *History) Acknowledged() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acked)
}

// Drain stops the producer and lets the consumer run until every
// acknowledged put was delivered and the queue holds nothing (none
// ready, none leased) as an endpoint in use reports it, or ctx ends; then
// it stops the consumer.
func (h *History) Drain(ctx context.Context) error {
	h.pause()
	<-h.paused
	defer h.Stop()
	for {
		if h.missing() == 0 {
			qs, err := h.client(h.endpoint()).Queues(ctx)
			i := slices.IndexFunc(qs, func(s queue.Stats) bool { return s.Name == h.queue })
			if err == nil && (i < 0 || qs[i].Ready+qs[i].Leased == 0) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("draining %s: %d acknowledged puts not delivered: %w", h.queue, h.missing(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the producer and the consumer, and waits for them to end.
// It may be called again, and after Drain.
func (h *History) Stop() {
	h.stop()
	h.wg.Wait()
}

// missing is how many acknowledged puts were not delivered yet.
func (h *History) missing() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for b := range h.acked {
		if h.got[b] == 0 {
			n++
		}
	}
	return n
}

// Check judges the history: every acknowledged put delivered, none
// delivered after an ack of it was answered, and none stored twice
// (delivered under two ids). Call it after Drain.
func (h *History) Check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var lost []string
	for b := range h.acked {
		if h.got[b] == 0 {
			lost = append(lost, b)
		}
	}
	slices.Sort(lost)
	var errs []error
	if len(lost) > 0 {
		errs = append(errs, fmt.Errorf("%d acknowledged puts never delivered: %v", len(lost), head(lost)))
	}
	if len(h.again) > 0 {
		errs = append(errs, fmt.Errorf("%d deliveries of messages whose ack had been answered: %v", len(h.again), head(h.again)))
	}
	var twice []string
	for b, ids := range h.ids {
		if len(ids) > 1 {
			twice = append(twice, b)
		}
	}
	slices.Sort(twice)
	if len(twice) > 0 {
		errs = append(errs, fmt.Errorf("%d puts stored twice (delivered under two ids): %v", len(twice), head(twice)))
	}
	return errors.Join(errs...)
}

// Summary tells what the history holds.
func (h *History) Summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	deliveries := 0
	for _, n := range h.got {
		deliveries += n
	}
	return fmt.Sprintf("%d puts acknowledged, %d unanswered; %d deliveries of %d messages, %d acks answered; %d requests failed",
		len(h.acked), len(h.tried), deliveries, len(h.got), len(h.done), h.failed)
}

func head(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}
