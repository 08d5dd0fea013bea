package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/internal/backoff"
)

// Remote queues. A Relay is the queue manager's relay of the
// message-queuing model (Tanenbaum and van Steen, §4.3.2, "relays"): it
// takes the messages of a local source queue and puts them on a
// destination queue, on another node, with store and forward — while the
// destination is away the messages wait in the source queue, on the
// source node's disk, and they go when it is back.
//
// Each message is got from the source, put at the destination with its
// origin (the source's name) and its source id, and acknowledged at the
// source only once the destination has it on disk. A crash between the
// two leaves it in the source, to be sent again; the destination takes a
// message only if its source id is higher than the last it took from that
// origin (PutFrom), so nothing arrives twice. This needs the relay to be
// the source queue's only consumer (it then sends in id order) and each
// origin name to be one relay's.

// Destination is where a relay puts: a Client (a queue on other nodes)
// or Local (a queue of this manager).
type Destination interface {
	PutFrom(ctx context.Context, queue string, body []byte, origin string, seq uint64) error
}

// PutFrom puts a relayed message: a duplicate (a seq no higher than the
// last from origin) is taken as done.
func (c *Client) PutFrom(ctx context.Context, name string, body []byte, origin string, seq uint64) error {
	h := http.Header{}
	h.Set("Cohort-Origin", origin)
	h.Set("Cohort-Origin-Seq", strconv.FormatUint(seq, 10))
	_, err := c.put(ctx, name, body, h)
	return err
}

// Local is a Destination in the same manager.
type Local struct{ M *Manager }

// PutFrom implements Destination.
func (l Local) PutFrom(_ context.Context, name string, body []byte, origin string, seq uint64) error {
	_, err := l.M.PutFrom(name, body, origin, seq)
	return err
}

// RelayConfig configures a relay.
type RelayConfig struct {
	Source      string      // the local queue
	Destination Destination // where to
	Queue       string      // the destination queue
	// Origin names the source at the destination, unique to this relay
	// (e.g. "node0/outbox").
	Origin string
	// Retry is the first wait after a failed put; it doubles up to
	// MaxRetry, each wait shortened by up to a quarter at random
	// (package backoff). 0: 50ms and 5s.
	Retry, MaxRetry time.Duration
	// Visibility is the lease of the message under way: from a
	// replicated queue, how long a relay that crashed holds the next
	// message back from its successor (0: DefaultRelayVisibility); from
	// a node's own queue, 0 is MaxVisibility — the relay dies with the
	// queue.
	Visibility time.Duration
	Logger     *slog.Logger
	// Turn, for a replicated queue, is how the relays of the queue on
	// several nodes take turns: it waits for this relay's turn and
	// returns a context that ends when the turn does, and a function to
	// call when the relay is done with it (a lock held under a session,
	// say). nil: the leader of the queues' log relays.
	Turn func(ctx context.Context) (context.Context, context.CancelFunc, error)
	// sleep waits d, or until ctx ends (its error then): between failed
	// puts. nil: a timer; a test's sees the waits without waiting them.
	sleep func(ctx context.Context, d time.Duration) error
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DefaultRelayVisibility is the lease of a relay's message from a
// replicated queue.
const DefaultRelayVisibility = 30 * time.Second

// relaySource is the queue a relay takes from: a node's own (Manager) or
// a replicated one (Replicated).
type relaySource interface {
	Get(ctx context.Context, name string, visibility time.Duration) (Message, error)
	Release(name string, id uint64) error
	// ack acknowledges a message taken under lease; lost: the lease ran
	// out first, and the message is ready again.
	ack(name string, m Message) (lost bool, err error)
}

func (m *Manager) ack(name string, msg Message) (bool, error) {
	if err := m.Ack(name, msg.ID); err != nil && !errors.Is(err, ErrNoMessage) {
		return false, err
	}
	return false, nil
}

func (r *Replicated) ack(name string, msg Message) (bool, error) {
	err := r.AckLease(name, msg.Lease, msg.ID)
	if errors.Is(err, ErrLeaseLost) {
		return true, nil
	}
	return false, err
}

// Relay moves the source queue's messages to the destination until ctx
// ends. It returns ctx's error, or the manager's if it closes.
func (m *Manager) Relay(ctx context.Context, c RelayConfig) error {
	if c.Visibility <= 0 {
		c.Visibility = MaxVisibility
	}
	return relay(ctx, m, m.log, c)
}

// Relay moves the messages of a replicated queue to the destination
// until ctx ends, as Manager.Relay does, in id order. Several nodes may
// run the same relay (the same configuration and Origin): they take
// turns (c.Turn; by default the leader of the queues' log relays), so
// each message is forwarded by one node at a time, and when the turn
// moves the next carries on. A relay's messages must go one at a time,
// in id order, or the destination would take a later id for the
// origin's last and drop an earlier message as a duplicate: so a turn
// begins only once the queue holds no leased message — a relay cut off
// with a message under way (its turn over, or its node crashed) holds it
// until its lease (c.Visibility) runs out — and a relay stops as soon
// as its turn ends. A late put of the previous relay's is then a
// duplicate (the same origin and id), which the destination drops.
func (r *Replicated) Relay(ctx context.Context, c RelayConfig) error {
	if c.Visibility <= 0 {
		c.Visibility = DefaultRelayVisibility
	}
	if err := ValidName(c.Source); err != nil {
		return fmt.Errorf("relay: source: %w", err)
	}
	check := min(c.Visibility/10+time.Millisecond, 100*time.Millisecond)
	wait := func(ctx context.Context) error {
		t := time.NewTimer(check)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.svc.Done():
			return ErrClosed
		case <-t.C:
			return nil
		}
	}
	turn := c.Turn
	if turn == nil {
		turn = func(ctx context.Context) (context.Context, context.CancelFunc, error) {
			for !r.Leading() {
				if err := wait(ctx); err != nil {
					return nil, nil, err
				}
			}
			tctx, stop := context.WithCancel(ctx)
			go func() { // the turn ends once this node no longer leads
				for wait(tctx) == nil && r.Leading() {
				}
				stop()
			}()
			return tctx, stop, nil
		}
	}
	for {
		tctx, done, err := turn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		// A barrier (once an entry of ours is applied here, this node's
		// view of the queue is as recent as it), then no leased message.
		if r.Ack(c.Source) == nil && !hasLeased(r, c.Source) {
			err = relay(tctx, r, slog.Default(), c)
		} else {
			err = wait(tctx)
		}
		done()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrClosed):
			return err
		}
	}
}

// hasLeased reports whether queue name holds a leased message.
func hasLeased(r *Replicated, name string) bool {
	for _, s := range r.Queues() {
		if s.Name == name {
			return s.Leased > 0
		}
	}
	return false
}

func relay(ctx context.Context, src relaySource, log *slog.Logger, c RelayConfig) error {
	switch {
	case c.Destination == nil:
		return errors.New("relay: no destination")
	case c.Origin == "" || len(c.Origin) > maxOrigin:
		return fmt.Errorf("relay: origin %q: want 1 to %d bytes", c.Origin, maxOrigin)
	}
	if err := ValidName(c.Source); err != nil {
		return fmt.Errorf("relay: source: %w", err)
	}
	if err := ValidName(c.Queue); err != nil {
		return fmt.Errorf("relay: destination: %w", err)
	}
	retry, maxRetry := c.Retry, c.MaxRetry
	if retry <= 0 {
		retry = 50 * time.Millisecond
	}
	if maxRetry < retry {
		maxRetry = max(backoff.Max, retry)
	}
	seed := rand.Uint64()
	if c.sleep == nil {
		c.sleep = sleep
	}
	if c.Logger != nil {
		log = c.Logger
	}
	for {
		msg, err := src.Get(ctx, c.Source, c.Visibility)
		if err != nil {
			return err
		}
		b := backoff.NewUpTo(retry, maxRetry, seed, msg.ID)
		for failures := 0; ; failures++ {
			err := c.Destination.PutFrom(ctx, c.Queue, msg.Body, c.Origin, msg.ID)
			if err == nil {
				if failures > 0 {
					log.Info("relay: the destination is back", "source", c.Source, "queue", c.Queue, "failures", failures)
				}
				break
			}
			if failures == 0 {
				log.Warn("relay: the destination is away; the messages wait in the source queue", "source", c.Source, "queue", c.Queue, "err", err)
			}
			if err := c.sleep(ctx, b.Next()); err != nil {
				src.Release(c.Source, msg.ID)
				return err
			}
		}
		// A lease that ran out meanwhile: the message is ready again, the
		// head of the queue, and goes again (the destination drops the copy).
		if _, err := src.ack(c.Source, msg); err != nil {
			return err
		}
	}
}
