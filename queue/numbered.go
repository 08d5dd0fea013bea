package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
)

// Numbered puts: a Client's Put and PutBatch, sent again after a lost
// reply and stored once — at-most-once RPC's duplicate filtering
// (Birrell and Nelson, 1984; Tanenbaum and van Steen §4.2.2, "lost reply
// messages"), with the numbers of a Publisher's stream:
//
//   - each request carries an origin and a number (the headers
//     Cohort-Origin and Cohort-Origin-Seq of a put, "origin" and "seq" of
//     a transaction), and a node applies a number once; a copy of one
//     applied is answered as a duplicate (id 0), once the first is
//     durable;
//   - the numbers are kept where a stream's are: in the log's duplicate
//     table for replicated queues (any node filters alike), on the node's
//     disk for its own queues, with the same bounds (MaxOrigins);
//   - a node's own queues remember an origin's highest number, so an
//     origin's numbers must reach them in order. A Client's puts run at
//     once from many goroutines, so its origin is split in lanes, each a
//     number sequence of its own used by one request at a time: a request
//     takes a free lane (or a new one), the lane's next number, and gives
//     the lane back once it has its outcome. There are as many lanes as
//     requests at once, and each is an origin of the tables;
//   - a lost reply — the connection cut after the request went, a reply
//     cut short, a 503, no answer within Attempt from a node of
//     replicated queues — leaves the request in doubt on that node. On
//     replicated queues (KindHeader) it goes again, under its number,
//     through the other endpoints and back to that one; on a node's own
//     queues, to that node alone, since another node's queue of the same
//     name is another queue: after Retry without its answer the put fails
//     with ErrInDoubt. A node that could not be reached was sent nothing:
//     the next endpoint is tried, as before;
//   - a refusal (4xx, 507) applied nothing: it is the answer, and the
//     lane's number is used again by its next request, unless a copy was
//     in doubt (which might still arrive).
//
// A request that carries no number (another client; POST /v1/queues/NAME
// without the headers, a transaction without origin) is applied as it
// comes: each copy is a new put.

// numbering is a Client's state for its numbered requests.
type numbering struct {
	mu    sync.Mutex
	id    string               // the origins' common part, drawn at the first request
	free  []*lane              // lanes no request uses
	lanes int                  // made so far
	kinds map[string]string    // base URL → the KindHeader it last sent
	quiet map[string]time.Time // base URL → until when it goes last: it did not answer within Attempt
	// old: base URLs whose node answered the batch route 404, an
	// earlier version's: PutBatch sends them JSON to /v1/queues:tx.
	old map[string]bool
}

// quietFor is how long an endpoint that did not answer within Attempt
// is tried after the others (as lock.Client skips a failed endpoint).
const quietFor = 10 * time.Second

// bases returns the base URLs of the Client's endpoints, those gone
// quiet lately last.
func (c *Client) bases() ([]string, error) {
	bases, err := httpapi.BaseURLs(c.Endpoints)
	if err != nil {
		return nil, err
	}
	return c.order(bases), nil
}

// order returns bases with those gone quiet lately moved last.
func (n *numbering) order(bases []string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	var first, last []string
	for _, b := range bases {
		if now.Before(n.quiet[b]) {
			last = append(last, b)
		} else {
			first = append(first, b)
		}
	}
	return append(first, last...)
}

// setQuiet records that base did not answer within Attempt (or, with
// quiet false, that it answered).
func (n *numbering) setQuiet(base string, quiet bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case quiet && n.quiet == nil:
		n.quiet = map[string]time.Time{base: time.Now().Add(quietFor)}
	case quiet:
		n.quiet[base] = time.Now().Add(quietFor)
	default:
		delete(n.quiet, base)
	}
}

// lane is a sequence of numbers used by one request at a time.
type lane struct {
	origin string
	next   uint64 // the number of its next request
}

func (n *numbering) takeLane() *lane {
	n.mu.Lock()
	defer n.mu.Unlock()
	if k := len(n.free); k > 0 {
		l := n.free[k-1]
		n.free = n.free[:k-1]
		return l
	}
	if n.id == "" {
		n.id = fmt.Sprintf("client-%016x", rand.Uint64())
	}
	n.lanes++
	return &lane{origin: fmt.Sprintf("%s.%d", n.id, n.lanes), next: 1}
}

func (n *numbering) giveLane(l *lane) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.free = append(n.free, l)
}

func (n *numbering) setKind(base, kind string) {
	if kind == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kinds == nil {
		n.kinds = map[string]string{}
	}
	n.kinds[base] = kind
}

// kind is the KindHeader of the node at base, asked once (GET
// /v1/queues) and then taken from its replies; err: it did not answer.
func (c *Client) kind(ctx context.Context, base string) (string, error) {
	c.numbering.mu.Lock()
	k, ok := c.kinds[base]
	c.numbering.mu.Unlock()
	if ok {
		return k, nil
	}
	api := c.api()
	resp, code, msg, err := api.Open(ctx, http.MethodGet, base+"/v1/queues", nil)
	if err != nil {
		return "", err
	}
	if resp == nil {
		return "", fmt.Errorf("HTTP %d: %s", code, msg)
	}
	resp.Body.Close()
	k = resp.Header.Get(KindHeader)
	if k == "" {
		k = "own" // a node that does not say: as if its own (resend to it alone)
	}
	c.setKind(base, k)
	return k, nil
}

// DefaultAttempt is a Client's Attempt when it sets none: well above a
// commit's time (milliseconds) and a leader election's (about a second),
// well below a put's usual deadline.
const DefaultAttempt = 3 * time.Second

// unsent reports whether err means the request never reached the node:
// it could not be connected to.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// sendNumbered sends a request under a lane's next number with send
// (given an endpoint's base URL, the origin and the number), to the
// first endpoint that answers; after a lost reply it sends it again,
// under the same number, as the comment above says, until it has an
// answer, Retry passes, or ctx ends.
func (c *Client) sendNumbered(ctx context.Context, send func(ctx context.Context, base, origin string, seq uint64) (int, string, http.Header, error)) error {
	bases, err := c.bases()
	if err != nil {
		return err
	}
	retry, attempt := c.Retry, c.Attempt
	if retry <= 0 {
		retry = DefaultRetry
	}
	if attempt <= 0 {
		attempt = DefaultAttempt
	}
	l := c.takeLane()
	defer c.giveLane(l)
	seq := l.next
	var (
		reached int       // copies that may have reached a node
		lost    time.Time // when the first reply was lost (zero: none was)
		doubt   string    // a node of its own queues that may hold a copy: sent to it alone
		last    error
		pause   = 10 * time.Millisecond
	)
	// The number is spent unless the one copy that reached a node was
	// refused: a copy may still be on its way, and must not be taken
	// for the lane's next request.
	answer := func(err error, refused bool) error {
		if !refused || reached > 1 {
			l.next = seq + 1
		}
		return err
	}
	for {
		order := bases
		if doubt != "" {
			order = []string{doubt}
		}
		for i, base := range order {
			kctx, cancel := context.WithTimeout(ctx, attempt) // nothing is sent yet: a quiet node is passed
			k, err := c.kind(kctx, base)
			cancel()
			if err != nil && ctx.Err() == nil && kctx.Err() != nil {
				c.setQuiet(base, true)
			}
			if err == nil {
				var code int
				var msg string
				var h http.Header
				actx, cancel := ctx, context.CancelFunc(func() {})
				if k == "replicated" {
					actx, cancel = context.WithTimeout(ctx, attempt)
				}
				code, msg, h, err = send(actx, base, l.origin, seq)
				cancel()
				if err != nil && ctx.Err() == nil && actx.Err() != nil {
					err = fmt.Errorf("no answer within %v: %w", attempt, err)
					c.setQuiet(base, true)
				}
				if !unsent(err) {
					reached++
				}
				switch {
				case err == nil && code == http.StatusOK:
					c.setKind(base, h.Get(KindHeader))
					c.setQuiet(base, false)
					return answer(nil, false)
				case err == nil && code != http.StatusServiceUnavailable:
					return answer(fmt.Errorf("%s: HTTP %d: %s", base, code, msg), true)
				case err == nil:
					err = fmt.Errorf("HTTP %d: %s", code, msg)
				}
				if !unsent(err) { // sent, and the reply lost: in doubt at base
					if lost.IsZero() {
						lost = time.Now()
					}
					if k != "replicated" {
						doubt = base
					} else if doubt == "" { // try it last next time
						bases = append(slices.Clone(order[i+1:]), order[:i+1]...)
					}
				}
				if err != nil && h != nil && h.Get(NotVoterHeader) != "" {
					// It serves nothing until it is added: not asked
					// again in this call (a copy it took before it was
					// removed leaves the put in doubt, as above).
					bases = slices.DeleteFunc(slices.Clone(bases), func(b string) bool { return b == base })
				}
			}
			last = fmt.Errorf("%s: %w", base, err)
			if ctx.Err() != nil || doubt != "" {
				break
			}
		}
		switch {
		case len(bases) == 0 && lost.IsZero():
			return answer(fmt.Errorf("no endpoint votes in the queues' log: %w", last), false)
		case len(bases) == 0:
			return answer(fmt.Errorf("no endpoint votes in the queues' log: the put may or may not be stored: %w", last), false)
		case ctx.Err() != nil && doubt != "":
			return answer(fmt.Errorf("%w: no answer from %s, a node of its own queues, which may hold the put: %w", ErrInDoubt, doubt, ctx.Err()), false)
		case ctx.Err() != nil:
			return answer(ctx.Err(), false)
		case lost.IsZero():
			return answer(fmt.Errorf("no endpoint answered: %w", last), false) // none was reached
		case time.Since(lost) > retry && doubt != "":
			return answer(fmt.Errorf("%w: no answer for %v from %s, a node of its own queues, which may hold the put: not sent to another node, where it would be stored twice: %w",
				ErrInDoubt, retry, doubt, last), false)
		case time.Since(lost) > retry:
			return answer(fmt.Errorf("no answer for %v: the put may or may not be stored: %w", retry, last), false)
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
