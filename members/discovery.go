package members

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/proc"
)

// Resource discovery over the members (epidemic/discovery.go): a node
// advertises a resource — a name and attributes — in the replicated map,
// and any node finds the holders of a name nearest it first, ranked by
// the round-trip times their Vivaldi coordinates predict (each member
// measures its own from SWIM's pings: every ack carries the answering
// member's coordinate, and the pinger times the round trip; a
// holder's coordinate travels with its advertisement, rewritten every
// ten periods). Nothing is probed at find time: the answer is this node's
// replica's. A holder SWIM holds dead is skipped at once; an
// advertisement its holder stopped rewriting (a crash SWIM has not
// declared yet, a partition) expires after a minute at the default
// period. Advertisements live as long as their holder's process: a node
// that restarts withdraws what it advertised before and must advertise
// again.

// Holder is one holder of a resource, as a find answers it.
type Holder struct {
	ID    int               `json:"id"`
	Addr  string            `json:"addr,omitempty"`
	RTT   float64           `json:"rtt_ms"` // estimated round-trip time from the answering node, ms
	Attrs map[string]string `json:"attrs,omitempty"`
	Self  bool              `json:"self,omitempty"`
}

// ErrBadResource: a resource's name, attributes or k is out of bounds.
var ErrBadResource = errors.New("bad resource")

// MaxFind bounds a find's k.
const MaxFind = 1000

var findIDs atomic.Uint32

func validResource(name string, attrs map[string]string) ([]epidemic.Attr, error) {
	as := make([]epidemic.Attr, 0, len(attrs))
	for k, v := range attrs {
		as = append(as, epidemic.Attr{Key: k, Value: v})
	}
	slices.SortFunc(as, func(a, b epidemic.Attr) int { return cmpString(a.Key, b.Key) })
	if msg := epidemic.ValidResource(name, as); msg != "" {
		return nil, fmt.Errorf("%w: %s", ErrBadResource, msg)
	}
	return as, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Advertise makes this node a holder of resource name with attrs
// (replacing what it advertised under name); the advertisement spreads to
// every member.
//
// A node advertises at most epidemic.MaxAdverts resources at once, and an
// advertisement that would take the map beyond MaxMapBytes is refused
// with ErrTooBig.
func (s *Server) Advertise(name string, attrs map[string]string) error {
	as, err := validResource(name, attrs)
	if err != nil {
		return err
	}
	self := strconv.Itoa(int(s.node.Self()))
	cost := len(epidemic.ResourcePrefix) + len(name) + len(self) + 64 + entryCost // the key, the coordinate
	for _, a := range as {
		cost += len(a.Key) + len(a.Value) + 2
	}
	var size, old, mine int
	if err := s.svc.Read(func(p proc.Process) {
		for _, x := range p.(viewer).Entries() {
			size += len(x.Key) + len(x.Value) + entryCost
			if x.Key == epidemic.ResourcePrefix+name+"@"+self {
				old = len(x.Key) + len(x.Value) + entryCost
			}
			if !x.Deleted && strings.HasPrefix(x.Key, epidemic.ResourcePrefix) && strings.HasSuffix(x.Key, "@"+self) && x.Key != epidemic.ResourcePrefix+name+"@"+self {
				mine++
			}
		}
	}); err != nil {
		return err
	}
	if mine >= epidemic.MaxAdverts {
		return fmt.Errorf("%w: this node advertises %d resources, at most %d", ErrBadResource, mine, epidemic.MaxAdverts)
	}
	if grown := size - old + cost; grown > MaxMapBytes {
		return fmt.Errorf("%w: it would hold %d bytes, at most %d", ErrTooBig, grown, MaxMapBytes)
	}
	return s.svc.Input(epidemic.Advertise{Name: name, Attrs: as})
}

// Withdraw ends this node's advertisement of name.
func (s *Server) Withdraw(name string) error {
	if _, err := validResource(name, nil); err != nil {
		return err
	}
	return s.svc.Input(epidemic.Withdraw{Name: name})
}

// Find is the k holders of name nearest this node (k ≤ 0: all), nearest
// first, from this node's replica of the map.
func (s *Server) Find(ctx context.Context, name string, k int) ([]Holder, error) {
	if _, err := validResource(name, nil); err != nil {
		return nil, err
	}
	if k > MaxFind {
		return nil, fmt.Errorf("%w: k %d: at most %d", ErrBadResource, k, MaxFind)
	}
	id := findIDs.Add(1)
	got := make(chan epidemic.Found, 1)
	cancel := s.svc.OnOutput(func(o proc.Output) {
		if f, ok := o.(epidemic.Found); ok && f.ID == id {
			select {
			case got <- f:
			default:
			}
		}
	})
	defer cancel()
	if err := s.svc.Input(epidemic.Find{ID: id, Name: name, K: k}); err != nil {
		return nil, err
	}
	select {
	case f := <-got:
		addrs := s.node.Members()
		out := make([]Holder, 0, len(f.Holders))
		for _, h := range f.Holders {
			x := Holder{ID: int(h.Node), Addr: addrs[h.Node], RTT: h.RTT, Self: h.Node == s.node.Self()}
			for _, a := range h.Attrs {
				if x.Attrs == nil {
					x.Attrs = map[string]string{}
				}
				x.Attrs[a.Key] = a.Value
			}
			out = append(out, x)
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.svc.Done():
		return nil, errors.New("the service stopped")
	}
}

// maxAdvertBody bounds the body of an advertisement over HTTP.
const maxAdvertBody = 16 << 10

// advert is the body of PUT /v1/resources/NAME.
type advert struct {
	Attrs map[string]string `json:"attrs"`
}

// resourceRoutes adds to the API:
//
//	PUT    /v1/resources/NAME       advertise (body: {"attrs": {...}}, or empty)
//	DELETE /v1/resources/NAME       withdraw
//	GET    /v1/resources/NAME?k=K   the K nearest holders (default 3; 0: all)
func (s *Server) resourceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/resources/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxAdvertBody+1))
		if err != nil {
			httpapi.Fail(w, http.StatusBadRequest, err.Error())
			return
		}
		if len(body) > maxAdvertBody {
			httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("advertisement of more than %d bytes", maxAdvertBody))
			return
		}
		var a advert
		if len(body) > 0 {
			if err := json.Unmarshal(body, &a); err != nil {
				httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("advertisement %q: want {\"attrs\": {\"key\": \"value\", ...}}", truncate(string(body))))
				return
			}
		}
		if err := s.Advertise(r.PathValue("name"), a.Attrs); err != nil {
			httpapi.Fail(w, discStatus(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "attrs": a.Attrs})
	})
	mux.HandleFunc("DELETE /v1/resources/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Withdraw(r.PathValue("name")); err != nil {
			httpapi.Fail(w, discStatus(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "withdrawn": true})
	})
	mux.HandleFunc("GET /v1/resources/{name}", func(w http.ResponseWriter, r *http.Request) {
		k := 3
		if q := r.URL.Query().Get("k"); q != "" {
			var err error
			if k, err = strconv.Atoi(q); err != nil || k < 0 {
				httpapi.Fail(w, http.StatusBadRequest, fmt.Sprintf("k %q: want a whole number ≥ 0", truncate(q)))
				return
			}
		}
		hs, err := s.Find(r.Context(), r.PathValue("name"), k)
		if err != nil {
			httpapi.Fail(w, discStatus(err), err.Error())
			return
		}
		httpapi.Reply(w, http.StatusOK, hs)
	})
}

func discStatus(err error) int {
	switch {
	case errors.Is(err, ErrBadResource):
		return http.StatusBadRequest
	case errors.Is(err, ErrTooBig):
		return http.StatusInsufficientStorage
	}
	return http.StatusServiceUnavailable
}

// Advertise advertises name, with attrs, at the first node that answers
// (the node that holds the resource: name it first).
func (c *Client) Advertise(ctx context.Context, name string, attrs map[string]string) error {
	if _, err := validResource(name, attrs); err != nil {
		return err
	}
	body, err := json.Marshal(advert{Attrs: attrs})
	if err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodPut, base+"/v1/resources/"+url.PathEscape(name), body, nil)
	})
}

// Withdraw withdraws the first answering node's advertisement of name.
func (c *Client) Withdraw(ctx context.Context, name string) error {
	if _, err := validResource(name, nil); err != nil {
		return err
	}
	return c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodDelete, base+"/v1/resources/"+url.PathEscape(name), []byte{}, nil)
	})
}

// Find asks the first node that answers for the k holders of name
// nearest it.
func (c *Client) Find(ctx context.Context, name string, k int) ([]Holder, error) {
	if _, err := validResource(name, nil); err != nil {
		return nil, err
	}
	var hs []Holder
	err := c.api().First(ctx, func(base string) (int, string, error) {
		return c.api().Call(ctx, http.MethodGet, base+"/v1/resources/"+url.PathEscape(name)+"?k="+strconv.Itoa(k), nil, &hs)
	})
	return hs, err
}
