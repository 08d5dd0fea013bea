package members

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/proc"
)

// Aggregates over the members (epidemic/aggregate.go): each node keeps
// readings of its own, not replicated, and a query at any node computes
// the average, sum or count of one reading over every member by
// push-sum, in AggregateRounds(n) rounds of a quarter of the asking
// node's protocol period each (2.4 s for 32 members at the default
// period), with no node ever holding all the readings. Readings live in memory: a node that
// restarts has none until they are set again.

// Estimate is a query's answer.
type Estimate struct {
	Name  string  `json:"name"`
	Agg   string  `json:"agg"`
	Value float64 `json:"value"`
	// None says there is no estimate (an average of a reading no member
	// has).
	None   bool `json:"none,omitempty"`
	Rounds int  `json:"rounds"`
}

// ErrBadReading: a reading's name or value is out of bounds.
var ErrBadReading = errors.New("bad reading")

// ErrTooManyReadings: the node holds epidemic.MaxReadings readings, and a
// new one would not be kept.
var ErrTooManyReadings = fmt.Errorf("this node holds %d readings already: delete one (set it to NaN) first", epidemic.MaxReadings)

// ErrBusy: the node takes part in epidemic.MaxQueries queries already.
var ErrBusy = fmt.Errorf("this node takes part in %d aggregate queries already: try again when one ends", epidemic.MaxQueries)

var queryIDs atomic.Uint32

// SetReading sets this node's own reading of name to x (not replicated;
// NaN deletes it).
func (s *Server) SetReading(name string, x float64) error {
	if err := validReading(name); err != nil {
		return err
	}
	if math.IsInf(x, 0) {
		return fmt.Errorf("%w: reading %q: %v is not a finite number", ErrBadReading, name, x)
	}
	s.readingMu.Lock()
	defer s.readingMu.Unlock()
	if !math.IsNaN(x) {
		room := false
		if err := s.svc.Read(func(p proc.Process) { room = p.(viewer).HasRoomFor(name) }); err != nil {
			return err
		}
		if !room {
			return fmt.Errorf("reading %q: %w", name, ErrTooManyReadings)
		}
	}
	return s.svc.Input(epidemic.Reading{Name: name, X: x})
}

func validReading(name string) error {
	if err := ValidKey(name); err != nil {
		return fmt.Errorf("%w: reading name: %v", ErrBadReading, err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Aggregate asks every member for agg ("average", "sum" or "count") of
// their readings of name, and waits for the answer or ctx.
func (s *Server) Aggregate(ctx context.Context, name, agg string) (Estimate, error) {
	if err := validReading(name); err != nil {
		return Estimate{}, err
	}
	if !epidemic.ValidAgg(agg) {
		return Estimate{}, fmt.Errorf("%w: aggregate %q: want average, sum or count", ErrBadReading, truncate(agg))
	}
	id := queryIDs.Add(1)
	got := make(chan epidemic.Estimate, 1)
	cancel := s.svc.OnOutput(func(o proc.Output) {
		if e, ok := o.(epidemic.Estimate); ok && e.ID == id {
			select {
			case got <- e:
			default:
			}
		}
	})
	defer cancel()
	if err := s.svc.Input(epidemic.Query{ID: id, Name: name, Agg: agg}); err != nil {
		return Estimate{}, err
	}
	select {
	case e := <-got:
		if e.Busy {
			return Estimate{}, ErrBusy
		}
		return Estimate{Name: e.Name, Agg: e.Agg, Value: e.Value, None: e.None, Rounds: e.Rounds}, nil
	case <-ctx.Done():
		return Estimate{}, ctx.Err()
	case <-s.svc.Done():
		return Estimate{}, errors.New("the service stopped")
	}
}

// aggregateRoutes adds to the API:
//
//	PUT /v1/readings/NAME         this node's reading (the body: a number)
//	GET /v1/aggregate/NAME?agg=A  A (average, sum, count) over every member
func (s *Server) aggregateRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/readings/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		x, err := strconv.ParseFloat(string(body), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("reading %q: want a finite number", truncate(string(body))))
			return
		}
		if err := s.SetReading(r.PathValue("name"), x); err != nil {
			httpapi.Fail(w, aggStatus(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "x": x})
	})
	mux.HandleFunc("GET /v1/aggregate/{name}", func(w http.ResponseWriter, r *http.Request) {
		agg := r.URL.Query().Get("agg")
		if agg == "" {
			agg = "average"
		}
		e, err := s.Aggregate(r.Context(), r.PathValue("name"), agg)
		if err != nil {
			httpapi.Fail(w, aggStatus(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, e)
	})
}

func aggStatus(err error) int {
	switch {
	case errors.Is(err, ErrBadReading):
		return http.StatusBadRequest
	case errors.Is(err, ErrTooManyReadings):
		return http.StatusInsufficientStorage
	case errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// SetReading sets the reading at the first node that answers: each node
// keeps its own, so name the node's endpoint first.
func (c *Client) SetReading(ctx context.Context, name string, x float64) error {
	if err := validReading(name); err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPut, base+"/v1/readings/"+url.PathEscape(name), []byte(strconv.FormatFloat(x, 'g', -1, 64)), nil)
	})
}

// Aggregate asks the first node that answers for agg of the members'
// readings of name.
func (c *Client) Aggregate(ctx context.Context, name, agg string) (Estimate, error) {
	if err := validReading(name); err != nil {
		return Estimate{}, err
	}
	var e Estimate
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/aggregate/"+url.PathEscape(name)+"?agg="+url.QueryEscape(agg), nil, &e)
	})
	return e, err
}
