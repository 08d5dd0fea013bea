package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/queue"
)

// The message-queue benchmark: acknowledged persistent puts per second
// and the latency of one put, with Publishers clients each putting
// MessageSize-byte messages one after another (each waits for its
// acknowledgement: the message on disk), for Duration; then the time to
// get and acknowledge every message put, by one consumer taking batches
// of GetBatch. The same workload drives Cohort's queues and, in the
// tests, NATS JetStream.

// QueueConfig configures a queue benchmark run.
type QueueConfig struct {
	Publishers  int           // concurrent publishers
	Duration    time.Duration // of the puts
	MessageSize int           // bytes; 128 by default
	GetBatch    int           // messages a get takes at once; 100 by default
}

// QueueResult is one system's measurement.
type QueueResult struct {
	System     string        `json:"system"`
	Publishers int           `json:"publishers"`
	Puts       int           `json:"puts"`
	PutsPerSec float64       `json:"puts_per_sec"`
	P50        time.Duration `json:"put_p50_ns"`
	P99        time.Duration `json:"put_p99_ns"`
	GetsPerSec float64       `json:"gets_per_sec"` // got and acknowledged
}

func (r QueueResult) String() string {
	return fmt.Sprintf("%-42s %4d  %9.0f  %9s  %9s  %9.0f", r.System, r.Publishers, r.PutsPerSec,
		r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.GetsPerSec)
}

// QueueHeader heads a table of QueueResult.String.
const QueueHeader = "system                                     pubs  puts/s     put p50    put p99    gets/s"

// QueueSystem is what the workload drives.
type QueueSystem struct {
	Name string
	// Put puts one message — or Batch of them — and returns once it is
	// acknowledged.
	Put   func(ctx context.Context, body []byte) error
	Batch int // messages a Put puts (0: 1); the latencies are a batch's
	// Flush, if set, makes Put asynchronous: Put returns once the put is
	// sent (waiting only while a window of puts is unacknowledged), and
	// Flush, called by each publisher at the end, waits for every put's
	// outcome and returns how many failed (a full queue: not counted) or
	// another error. No latency is measured then.
	Flush func(ctx context.Context) (failed int, err error)

	client  *queue.Client // Cohort over HTTP: its client
	backend queue.Backend // Cohort through the Go API: its queues
	// Get gets and acknowledges up to max messages; 0 when none is left.
	Get func(ctx context.Context, max int) (int, error)
}

// RunQueue runs the workload on s.
func RunQueue(ctx context.Context, s QueueSystem, c QueueConfig) (QueueResult, error) {
	if c.MessageSize == 0 {
		c.MessageSize = 128
	}
	if c.GetBatch == 0 {
		c.GetBatch = 100
	}
	body := make([]byte, c.MessageSize)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		first error
		lost  int // asynchronous puts that failed, the queue full
		wg    sync.WaitGroup
		full  atomic.Bool // a put was refused, the queue full: the puts end
	)
	start := time.Now()
	end := start.Add(c.Duration)
	batch := max(s.Batch, 1)
	for range c.Publishers {
		wg.Go(func() {
			var mine []time.Duration
			var err error
			for time.Now().Before(end) && err == nil && ctx.Err() == nil && !full.Load() {
				t := time.Now()
				if err = s.Put(ctx, body); isFull(err) {
					full.Store(true)
					err = nil
					break
				}
				mine = append(mine, time.Since(t))
			}
			failed := 0
			if err == nil && s.Flush != nil {
				if failed, err = s.Flush(ctx); isFull(err) {
					full.Store(true)
					err = nil
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lost += failed
			if err == nil {
				lats = append(lats, mine...)
			} else if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return QueueResult{}, fmt.Errorf("%s: put: %w", s.Name, first)
	}
	slices.Sort(lats)
	puts := len(lats)*batch - lost
	r := QueueResult{System: s.Name, Publishers: c.Publishers, Puts: puts,
		PutsPerSec: float64(puts) / elapsed.Seconds(), P50: percentile(lats, 50), P99: percentile(lats, 99)}
	if s.Flush != nil {
		r.P50, r.P99 = 0, 0
	}
	if full.Load() {
		r.System += " [full]"
	}
	start = time.Now()
	got := 0
	for got < r.Puts {
		n, err := s.Get(ctx, c.GetBatch)
		if err != nil {
			return r, fmt.Errorf("%s: get: %w", s.Name, err)
		}
		if n == 0 {
			return r, fmt.Errorf("%s: got %d of the %d messages put", s.Name, got, r.Puts)
		}
		got += n
	}
	r.GetsPerSec = float64(got) / time.Since(start).Seconds()
	return r, nil
}

// isFull reports whether err is a put refused because the queue is full
// (the Go API's ErrFull, HTTP's 507): a replicated queue holds at most
// consensus.DefaultQueueLimits.Messages, which a fast system passes
// within a long run. The run then ends there, its rate measured until
// then, and its row marked [full].
func isFull(err error) bool {
	return err != nil && (errors.Is(err, queue.ErrFull) || strings.Contains(err.Error(), "HTTP 507"))
}

// CohortQueue opens a persistent queue manager in a new directory under
// dir and returns the system that drives it — through the Go API, or
// over HTTP on loopback — and a function that closes it.
func CohortQueue(dir string, overHTTP bool) (QueueSystem, func(), error) {
	d, err := os.MkdirTemp(dir, "cohort-bench-queue-")
	if err != nil {
		return QueueSystem{}, nil, err
	}
	m, err := queue.Open(queue.Config{Dir: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(d)
		return QueueSystem{}, nil, err
	}
	const name = "bench"
	if !overHTTP {
		return QueueSystem{
			Name:    "cohort (Go API, fsync per put)",
			backend: m,
			Put: func(_ context.Context, body []byte) error {
				_, err := m.Put(name, body)
				return err
			},
			Get: func(_ context.Context, max int) (int, error) {
				ids := make([]uint64, 0, max)
				for len(ids) < max {
					msg, ok, err := m.Poll(name, 0)
					if err != nil {
						return 0, err
					}
					if !ok {
						break
					}
					ids = append(ids, msg.ID)
				}
				if len(ids) == 0 {
					return 0, nil
				}
				return len(ids), m.Ack(name, ids...)
			},
		}, func() { m.Close(); os.RemoveAll(d) }, nil
	}
	srv := httptest.NewServer(queue.Handler(m))
	tr := &http.Transport{MaxIdleConnsPerHost: 1024}
	c := &queue.Client{Endpoints: []string{srv.URL}, HTTP: &http.Client{Transport: tr}}
	return QueueSystem{
			Name:   "cohort (HTTP, fsync per put)",
			client: c,
			Put: func(ctx context.Context, body []byte) error {
				_, err := c.Put(ctx, name, body)
				return err
			},
			Get: func(ctx context.Context, max int) (int, error) {
				msgs, err := c.Get(ctx, name, queue.GetOptions{Count: max, NoWait: true})
				if err != nil || len(msgs) == 0 {
					return 0, err
				}
				ids := make([]uint64, len(msgs))
				for i, msg := range msgs {
					ids[i] = msg.ID
				}
				return len(msgs), c.Ack(ctx, name, ids...)
			},
		}, func() {
			tr.CloseIdleConnections()
			srv.Close()
			m.Close()
			os.RemoveAll(d)
		}, nil
}

// CohortQueueBatches is CohortQueue over HTTP with each Put a batch of
// batch messages in one request (queue.Client.PutBatch: one record of
// the log, one sync).
func CohortQueueBatches(dir string, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortQueue(dir, true)
	if err != nil {
		return s, closeIt, err
	}
	c := s.client
	s.Name, s.Batch, s.client = fmt.Sprintf("cohort (HTTP, batches of %d)", batch), batch, nil
	s.Put = func(ctx context.Context, body []byte) error {
		bodies := make([][]byte, batch)
		for i := range bodies {
			bodies[i] = body
		}
		_, err := c.PutBatch(ctx, "bench", bodies)
		return err
	}
	return s, closeIt, nil
}

// CohortQueueStream is CohortQueue over HTTP with the publishers' puts
// on one stream (queue.Client.Publish: one long-lived request, each put
// acknowledged once synced), as JetStream's publishers share one
// connection. With batch 1 each publisher waits for each put's
// acknowledgement; with more, a Put sends batch puts asynchronously and
// waits for their acknowledgements together, as JetStream's async
// publish does.
func CohortQueueStream(dir string, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortQueue(dir, true)
	if err != nil {
		return s, closeIt, err
	}
	return overStream(s, closeIt, batch, "cohort", "fsync per put")
}

// CohortReplicatedQueueStream is CohortQueueStream on the replicated
// queues of nodes in-process nodes (CohortReplicatedQueue), through node
// 0: each put acknowledged once a majority has it on disk.
func CohortReplicatedQueueStream(dir string, nodes, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortReplicatedQueue(dir, nodes, true)
	if err != nil {
		return s, closeIt, err
	}
	return overStream(s, closeIt, batch, fmt.Sprintf("cohort R%d", nodes), "via node 0")
}

// overStream makes s, a Cohort system over HTTP, put on one stream.
func overStream(s QueueSystem, closeIt func(), batch int, label, what string) (QueueSystem, func(), error) {
	p, err := s.client.Publish(context.Background(), "bench")
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	s.client = nil
	s.Name = fmt.Sprintf("%s (HTTP stream, %s)", label, what)
	s.Put = func(ctx context.Context, body []byte) error {
		_, err := p.Put(ctx, body)
		return err
	}
	if batch > 1 {
		s.Name, s.Batch = fmt.Sprintf("%s (HTTP stream, async %d)", label, batch), batch
		s.Put = inBursts(p.PutAsync, batch)
	}
	return s, closeBoth(p.Close, closeIt), nil
}

// CohortQueueAsync is CohortQueue through the Go API with the
// publishers' puts on one queue.Pipeline: a Put sends batch puts
// asynchronously and waits for their acknowledgements together (each
// once synced), as JetStream's async publish of as many does.
func CohortQueueAsync(dir string, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortQueue(dir, false)
	if err != nil {
		return s, closeIt, err
	}
	return overPipeline(s, closeIt, batch, "cohort", "fsync per put")
}

// CohortReplicatedQueueAsync is CohortQueueAsync on the replicated
// queues of nodes in-process nodes, through node 0's Go API: each put
// acknowledged once a majority has it on disk.
func CohortReplicatedQueueAsync(dir string, nodes, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortReplicatedQueue(dir, nodes, false)
	if err != nil {
		return s, closeIt, err
	}
	return overPipeline(s, closeIt, batch, fmt.Sprintf("cohort R%d", nodes), "via node 0")
}

// CohortQueueWindow is CohortQueue through the Go API with the
// publishers' puts on one queue.Pipeline of window puts: a Put waits only
// while window puts are unacknowledged, as JetStream's async publish with
// PublishAsyncMaxPending(window).
func CohortQueueWindow(dir string, window int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortQueue(dir, false)
	if err != nil {
		return s, closeIt, err
	}
	return windowed(s, closeIt, window, "cohort", "")
}

// CohortReplicatedQueueWindow is CohortQueueWindow on the replicated
// queues of nodes in-process nodes, through node 0's Go API.
func CohortReplicatedQueueWindow(dir string, nodes, window int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortReplicatedQueue(dir, nodes, false)
	if err != nil {
		return s, closeIt, err
	}
	return windowed(s, closeIt, window, fmt.Sprintf("cohort R%d", nodes), ", node 0")
}

// CohortQueueStreamWindow is CohortQueueStream with the publishers'
// puts sent without waiting for each, up to window unacknowledged
// (queue.Publisher's MaxPending).
func CohortQueueStreamWindow(dir string, window int) (QueueSystem, func(), error) {
	s, closeIt, err := CohortQueue(dir, true)
	if err != nil {
		return s, closeIt, err
	}
	p, err := s.client.Publish(context.Background(), "bench")
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	p.MaxPending = window
	s.client = nil
	s.Name = fmt.Sprintf("cohort (HTTP stream, window %d)", window)
	return windowedBy(s, p.PutAsync), closeBoth(p.Close, closeIt), nil
}

// windowed makes s, a Cohort system through the Go API, put on one
// queue.Pipeline of window puts, without waiting for each.
func windowed(s QueueSystem, closeIt func(), window int, label, what string) (QueueSystem, func(), error) {
	p, err := queue.NewPipeline(s.backend, "bench", window)
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	s.backend = nil
	s.Name = fmt.Sprintf("%s (Go API, window %d%s)", label, window, what)
	return windowedBy(s, p.PutAsync), closeBoth(p.Close, closeIt), nil
}

// windowedBy makes s put with putAsync, without waiting for each put;
// each publisher's Flush waits for the puts not flushed yet.
func windowedBy(s QueueSystem, putAsync func([]byte) *queue.PutAck) QueueSystem {
	var mu sync.Mutex
	var acks []*queue.PutAck // not flushed yet
	s.Put = func(_ context.Context, body []byte) error {
		a := putAsync(body)
		if isDone(a) {
			if _, err := a.Result(); err != nil {
				return err // refused at once: not counted
			}
		}
		mu.Lock()
		acks = append(acks, a)
		mu.Unlock()
		return nil
	}
	s.Flush = func(ctx context.Context) (failed int, first error) {
		mu.Lock()
		mine := acks // the other publishers' too: each is flushed once
		acks = nil
		mu.Unlock()
		for _, a := range mine {
			if _, err := a.Wait(ctx); err != nil {
				failed++
				first = cmp.Or(first, err)
			}
		}
		return failed, first
	}
	return s
}

func isDone(a *queue.PutAck) bool {
	select {
	case <-a.Done():
		return true
	default:
		return false
	}
}

// overPipeline makes s, a Cohort system through the Go API, put on one
// queue.Pipeline, batch puts under way for each Put.
func overPipeline(s QueueSystem, closeIt func(), batch int, label, what string) (QueueSystem, func(), error) {
	p, err := queue.NewPipeline(s.backend, "bench", 1<<16) // as JetStream's async publish in the tests
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	s.backend = nil
	s.Name, s.Batch = fmt.Sprintf("%s (Go API, async %d, %s)", label, batch, what), batch
	s.Put = inBursts(p.PutAsync, batch)
	return s, closeBoth(p.Close, closeIt), nil
}

// CohortReplicatedQueue starts nodes in-process nodes (the in-process
// transport, each node's storage in its own directory under dir) with the
// replicated queues (queue.Replicated: R3 with three nodes), and returns
// the system that drives them through node 0 — through the Go API, or
// over HTTP on loopback — and a function that closes it. A put is
// acknowledged once a majority of the nodes has it on disk.
func CohortReplicatedQueue(dir string, nodes int, overHTTP bool) (QueueSystem, func(), error) {
	d, err := os.MkdirTemp(dir, "cohort-bench-rqueue-")
	if err != nil {
		return QueueSystem{}, nil, err
	}
	lns, stop, err := livetest.New(nodes, live.Config{DataDir: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(d)
		return QueueSystem{}, nil, err
	}
	var rs []*queue.Replicated
	for _, ln := range lns {
		r, err := queue.NewReplicated(ln, queue.ReplicatedConfig{})
		if err != nil {
			stop()
			os.RemoveAll(d)
			return QueueSystem{}, nil, err
		}
		rs = append(rs, r)
	}
	closeAll := func() { stop(); os.RemoveAll(d) }
	// Not the election: a put and its get once a leader is there.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rs[0].PutContext(ctx, "warm-up", nil); err != nil {
		closeAll()
		return QueueSystem{}, nil, err
	}
	if m, err := rs[0].Get(ctx, "warm-up", 0); err != nil || rs[0].Ack("warm-up", m.ID) != nil {
		closeAll()
		return QueueSystem{}, nil, fmt.Errorf("warm-up get: %v", err)
	}
	const name = "bench"
	label := fmt.Sprintf("cohort R%d", nodes)
	if !overHTTP {
		r := rs[0]
		return QueueSystem{
			Name:    label + " (Go API, via node 0)",
			backend: r,
			Put: func(ctx context.Context, body []byte) error {
				_, err := r.PutContext(ctx, name, body)
				return err
			},
			Get: func(_ context.Context, max int) (int, error) {
				msgs, err := r.PollN(name, 0, max)
				if err != nil || len(msgs) == 0 {
					return 0, err
				}
				ids := make([]uint64, len(msgs))
				for i, m := range msgs {
					ids[i] = m.ID
				}
				return len(ids), r.Ack(name, ids...)
			},
		}, closeAll, nil
	}
	srv := httptest.NewServer(queue.Handler(rs[0]))
	tr := &http.Transport{MaxIdleConnsPerHost: 1024}
	c := &queue.Client{Endpoints: []string{srv.URL}, HTTP: &http.Client{Transport: tr}}
	return QueueSystem{
			Name:   label + " (HTTP, via node 0)",
			client: c,
			Put: func(ctx context.Context, body []byte) error {
				_, err := c.Put(ctx, name, body)
				return err
			},
			Get: func(ctx context.Context, max int) (int, error) {
				msgs, err := c.Get(ctx, name, queue.GetOptions{Count: max, NoWait: true})
				if err != nil || len(msgs) == 0 {
					return 0, err
				}
				ids := make([]uint64, len(msgs))
				for i, msg := range msgs {
					ids[i] = msg.ID
				}
				return len(msgs), c.AckLease(ctx, name, msgs[0].Lease, ids...)
			},
		}, func() {
			tr.CloseIdleConnections()
			srv.Close()
			closeAll()
		}, nil
}

// closeBoth is a publisher's close, then its system's: the publisher
// given 10 s to have its puts acknowledged.
func closeBoth(closePub func(context.Context) error, closeIt func()) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closePub(ctx)
		closeIt()
	}
}

// inBursts is a Put that sends batch copies of its body with putAsync and
// waits for all their acknowledgements, as JetStream's async publish of as
// many does.
func inBursts(putAsync func([]byte) *queue.PutAck, batch int) func(context.Context, []byte) error {
	return func(ctx context.Context, body []byte) error {
		acks := make([]*queue.PutAck, batch)
		for i := range acks {
			acks[i] = putAsync(body)
		}
		for _, a := range acks {
			if _, err := a.Wait(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
