package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
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
	// MaxRetry. 0: 50ms and 5s.
	Retry, MaxRetry time.Duration
	Logger          *slog.Logger
}

// Relay moves the source queue's messages to the destination until ctx
// ends. It returns ctx's error, or the manager's if it closes.
func (m *Manager) Relay(ctx context.Context, c RelayConfig) error {
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
		maxRetry = max(5*time.Second, retry)
	}
	log := c.Logger
	if log == nil {
		log = m.log
	}
	for {
		msg, err := m.Get(ctx, c.Source, MaxVisibility)
		if err != nil {
			return err
		}
		wait := retry
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
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				m.Release(c.Source, msg.ID)
				return ctx.Err()
			case <-t.C:
			}
			wait = min(2*wait, maxRetry)
		}
		if err := m.Ack(c.Source, msg.ID); err != nil && !errors.Is(err, ErrNoMessage) {
			return err
		}
	}
}
