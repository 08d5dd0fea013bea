package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
)

// joinCluster is founders nodes on loopback (TCP, taking joins) with the
// replicated locks and groups, each with its data directory, and the
// nodes that join them; a node restarts from its directory at its address.
type joinCluster struct {
	t        *testing.T
	founders int
	token    string
	addrs    map[proc.ID]string // transport
	dirs     map[proc.ID]string
	volatile map[proc.ID]bool // started without a data directory
	nodes    map[proc.ID]*Node
	apis     map[proc.ID]*httptest.Server
	traces   string // if set, each node's traces are in traces/node<i> (Config.TraceDir)
	// tweak, if set for a node, changes its Config before it starts;
	// contact, if set for a newcomer, is the member it joins through
	// (else node 0).
	tweak   map[proc.ID]func(*Config)
	contact map[proc.ID]proc.ID
}

var joinSecret = []byte("join test secret, 32 bytes long.")

func newJoinCluster(t *testing.T, founders int) *joinCluster {
	return newTracedJoinCluster(t, founders, "")
}

// newTracedJoinCluster is newJoinCluster with each node's traces in
// traces/node<i>, unless traces is "".
func newTracedJoinCluster(t *testing.T, founders int, traces string) *joinCluster {
	c := &joinCluster{t: t, founders: founders, token: "tok", addrs: map[proc.ID]string{}, dirs: map[proc.ID]string{}, volatile: map[proc.ID]bool{},
		nodes: map[proc.ID]*Node{}, apis: map[proc.ID]*httptest.Server{}, traces: traces,
		tweak: map[proc.ID]func(*Config){}, contact: map[proc.ID]proc.ID{}}
	lns := map[proc.ID]net.Listener{}
	for i := range proc.ID(founders) {
		lns[i] = c.listen(i)
	}
	for i := range proc.ID(founders) {
		c.start(i, lns[i])
	}
	return c
}

// listen listens at id's address (a fresh one the first time).
func (c *joinCluster) listen(id proc.ID) net.Listener {
	c.t.Helper()
	addr := c.addrs[id]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the port of a node just closed
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.addrs[id] = ln.Addr().String()
	if c.dirs[id] == "" {
		c.dirs[id] = c.t.TempDir()
	}
	return ln
}

// start starts node id on ln: a founder knows every founder, a newcomer
// its contact (node 0) only.
func (c *joinCluster) start(id proc.ID, ln net.Listener) {
	c.t.Helper()
	if err := c.tryStart(id, ln); err != nil {
		c.t.Fatal(err)
	}
}

// tryStart is start that returns New's error.
func (c *joinCluster) tryStart(id proc.ID, ln net.Listener) error {
	tr, contact := c.transport(id, ln)
	cfg := Config{ID: id, N: c.founders, Transport: tr,
		Lock: lock.ReplicatedAlgorithm(consensus.DefaultConfig), Group: group.ReplicatedAlgorithm(consensus.DefaultConfig),
		Token: c.token, DataDir: c.dataDir(id), Members: true, Contact: contact,
		MembersParams: epidemic.Params{Period: 20 * time.Millisecond},
		TraceDir:      c.traceDir(id),
		Logger:        c.logger(id)}
	if f := c.tweak[id]; f != nil {
		f(&cfg)
	}
	nd, err := New(cfg)
	if err != nil {
		return err
	}
	c.nodes[id] = nd
	c.apis[id] = httptest.NewServer(nd.Handler())
	c.t.Cleanup(func() { c.stop(id) })
	return nil
}

// logger is node id's logger: none, unless COHORT_NODE_LOGS names a
// directory, where each node of each test appends to
// <test>-node<id>.log, to read after a failure.
func (c *joinCluster) logger(id proc.ID) *slog.Logger {
	dir := os.Getenv("COHORT_NODE_LOGS")
	if dir == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	name := strings.ReplaceAll(c.t.Name(), "/", "_") + fmt.Sprintf("-node%d.log", int(id))
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { f.Close() })
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// transport is node id's transport on ln: a founder knows every founder,
// a newcomer its contact only (returned).
func (c *joinCluster) transport(id proc.ID, ln net.Listener) (*transport.TCP, proc.ID) {
	c.t.Helper()
	peers, contact := map[proc.ID]string{}, proc.None
	if int(id) < c.founders {
		for j := range proc.ID(c.founders) {
			if j != id {
				peers[j] = c.addrs[j]
			}
		}
	} else {
		contact = c.contact[id] // node 0 unless set
		peers[contact] = c.addrs[contact]
	}
	tr, err := transport.NewTCP(transport.Config{Self: id, Listener: ln, Peers: peers, Secret: joinSecret, Joins: true})
	if err != nil {
		c.t.Fatal(err)
	}
	return tr, contact
}

// stop closes node id and its API, as a crash would (its storage is
// synced before anything depends on it).
func (c *joinCluster) stop(id proc.ID) {
	if nd, ok := c.nodes[id]; ok {
		c.apis[id].Close()
		nd.Close()
		delete(c.nodes, id)
		delete(c.apis, id)
	}
}

// dataDir is node id's data directory, or none for a volatile one.
func (c *joinCluster) dataDir(id proc.ID) string {
	if c.volatile[id] {
		return ""
	}
	return c.dirs[id]
}

// traceDir is node id's trace directory, "" if the cluster is not traced.
func (c *joinCluster) traceDir(id proc.ID) string {
	if c.traces == "" {
		return ""
	}
	return filepath.Join(c.traces, fmt.Sprint("node", int(id)))
}

func (c *joinCluster) restart(id proc.ID) {
	c.t.Helper()
	c.stop(id)
	c.start(id, c.listen(id))
}

func (c *joinCluster) ep(ids ...proc.ID) []string {
	var eps []string
	for _, id := range ids {
		eps = append(eps, c.apis[id].URL)
	}
	return eps
}

func (c *joinCluster) client(ids ...proc.ID) *Client {
	return &Client{Endpoints: c.ep(ids...), Token: c.token}
}

// eventually waits, up to a deadline, for cond.
func (c *joinCluster) eventually(what string, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// votersAre waits until every running node holds the committed
// configuration want in every log (but newcomers never added).
func (c *joinCluster) votersAre(want ...int) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("voters %v everywhere", want), func() error {
		for id, nd := range c.nodes {
			vs, err := nd.Voters()
			if err != nil {
				return err
			}
			for _, l := range vs.Logs {
				if l.Voters == nil && !slices.Contains(want, int(id)) {
					continue // a newcomer not added knows no configuration
				}
				if !l.Committed || !slices.Equal(l.Voters, want) {
					return fmt.Errorf("node %d: %s: %v (committed %v)", id, l.Service, l.Voters, l.Committed)
				}
			}
		}
		return nil
	})
}

// lockAt takes and releases lock name through node id, and returns its
// fencing token.
func (c *joinCluster) lockAt(id proc.ID, name string) uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	h, err := (&lock.Client{Endpoints: c.ep(id), Token: c.token}).Acquire(ctx, name, 5*time.Second)
	if err != nil {
		c.t.Fatalf("lock %s through node %d: %v", name, id, err)
	}
	if err := h.Release(ctx); err != nil {
		c.t.Fatalf("release %s through node %d: %v", name, id, err)
	}
	return h.Token
}

// status is the HTTP status and message of a request to node id's API.
func (c *joinCluster) status(id proc.ID, method, path, token string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.apis[id].URL+path, strings.NewReader("{}"))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Three founders; a fourth joins and is added to the voters through a
// founder (any node: a follower forwards the change to the leader). It
// then serves locks — a fencing token above every earlier one — and
// groups; the leader is removed and the three voters left go on granting;
// the added node and a founder restart from their logs and still hold
// the configuration, which no config file lists.
func TestJoinedNodeIsAddedToTheVoters(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.votersAre(0, 1, 2)
	last := c.lockAt(0, "jobs")
	last = max(last, c.lockAt(1, "other"))

	c.start(3, c.listen(3))
	c.eventually("node 3 alive at node 1", func() error {
		if err := c.nodes[1].mayVote(context.Background(), 3); err != nil {
			return err
		}
		return nil
	})
	// Before it is added: no 501, but why it does not serve, and what to do.
	code, msg := c.status(3, "GET", "/v1/locks/jobs", c.token)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "cohort cluster add 3") {
		t.Fatalf("a lock at the newcomer before it is added: %d %s", code, msg)
	}

	// Bad input changes nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, b := range []struct {
		method, path, token string
		want                int
		says                string
	}{
		{"PUT", "/v1/cluster/voters/3", "", http.StatusUnauthorized, ""},
		{"PUT", "/v1/cluster/voters/3", "wrong", http.StatusUnauthorized, ""},
		{"PUT", "/v1/cluster/voters/seven", c.token, http.StatusBadRequest, "want a number"},
		{"PUT", "/v1/cluster/voters/9", c.token, http.StatusNotFound, "has not joined"},
		{"DELETE", "/v1/cluster/voters/9", c.token, http.StatusNotFound, "not a voter"},
		{"PUT", "/v1/cluster/voters/1", c.token, http.StatusConflict, "a voter already"},
	} {
		if code, msg := c.status(1, b.method, b.path, b.token); code != b.want || !strings.Contains(msg, b.says) {
			t.Errorf("%s %s (token %q): %d %s; want %d naming %q", b.method, b.path, b.token, code, msg, b.want, b.says)
		}
	}
	// A node that joined and went down is not added.
	c.start(4, c.listen(4))
	c.eventually("node 4 alive at node 1", func() error { return c.nodes[1].mayVote(context.Background(), 4) })
	c.stop(4)
	c.eventually("node 4 not alive at node 1", func() error {
		if err := c.nodes[1].mayVote(context.Background(), 4); !errors.Is(err, ErrNotAlive) {
			return fmt.Errorf("still: %v", err)
		}
		return nil
	})
	if code, msg := c.status(1, "PUT", "/v1/cluster/voters/4", c.token); code != http.StatusConflict || !strings.Contains(msg, "node 4 is") {
		t.Errorf("adding a node that is down: %d %s; want 409 naming its state", code, msg)
	}
	c.votersAre(0, 1, 2)

	// A node that keeps no data_dir is not added: a voter that forgets
	// its log at a restart could vote twice in a term.
	c.volatile[5] = true
	c.start(5, c.listen(5))
	c.eventually("node 5 alive, and known to keep no data_dir, at node 1", func() error {
		if err := c.nodes[1].mayVote(context.Background(), 5); !errors.Is(err, ErrRefused) {
			return fmt.Errorf("still: %v", err)
		}
		return nil
	})
	c.eventually("adding a node without data_dir refused, naming data_dir", func() error {
		// (Under load the newcomer may be suspected for a moment: 409
		// naming that.)
		if code, msg := c.status(1, "PUT", "/v1/cluster/voters/5", c.token); code != http.StatusConflict || !strings.Contains(msg, "data_dir") {
			return fmt.Errorf("%d %s; want 409 naming data_dir", code, msg)
		}
		return nil
	})
	c.stop(5)
	c.votersAre(0, 1, 2)

	// Added through a founder; of two changes asked at once, through two
	// nodes, the second to reach the leader is refused (unless the first
	// is over by then).
	var wg sync.WaitGroup
	var addErr, removeErr error
	wg.Add(2)
	go func() { defer wg.Done(); _, addErr = c.client(1).Add(ctx, 3) }()
	go func() { defer wg.Done(); _, removeErr = c.client(2).Remove(ctx, 2) }()
	wg.Wait()
	if addErr != nil && removeErr != nil {
		t.Fatalf("both changes failed: %v; %v", addErr, removeErr)
	}
	for _, err := range []error{addErr, removeErr} {
		if err != nil && !strings.Contains(err.Error(), "HTTP 409") {
			t.Errorf("a second change while one is under way: %v; want 409", err)
		}
	}
	// Each log (the locks', the groups', ...) takes the two changes in its
	// own order, so a change refused by one log may have been applied by
	// another: bring both 2 and 3 back as voters of every log, a log that
	// has one already answering so.
	for _, id := range []proc.ID{2, 3} {
		c.eventually(fmt.Sprintf("node %d a voter of every log", id), func() error {
			if _, err := c.client(0).Add(ctx, id); err != nil && !strings.Contains(err.Error(), "a voter already") {
				return err
			}
			return nil
		})
	}
	c.votersAre(0, 1, 2, 3)

	// The newcomer grants, with a fencing token above every earlier one.
	tok := c.lockAt(3, "jobs")
	if tok <= last {
		t.Fatalf("token %d through the newcomer after %d", tok, last)
	}
	last = tok
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	if _, err := (&group.Client{Endpoints: c.ep(3), Token: c.token}).Multicast(gctx, "news", []byte("hello")); err != nil {
		t.Errorf("a multicast through the newcomer: %v", err)
	}
	gcancel()

	// The locks' leader is removed: it hands over, and the three voters
	// left go on granting; it says why it serves no more.
	vs, err := c.nodes[3].Voters()
	if err != nil {
		t.Fatal(err)
	}
	c.eventually("a leader", func() error {
		if vs, err = c.nodes[3].Voters(); err == nil && vs.Logs[0].Leader < 0 {
			err = errors.New("none yet")
		}
		return err
	})
	gone := proc.ID(vs.Logs[0].Leader)
	began := time.Now()
	if _, err := c.client(3).Remove(ctx, gone); err != nil {
		t.Fatalf("remove the leader, node %d: %v", gone, err)
	}
	removed := time.Since(began)
	left := slices.DeleteFunc([]int{0, 1, 2, 3}, func(p int) bool { return p == int(gone) })
	for i, id := range left {
		if tok := c.lockAt(proc.ID(id), "jobs"); tok <= last {
			t.Fatalf("token %d through node %d after %d", tok, id, last)
		} else {
			last = tok
		}
		if i == 0 {
			t.Logf("the leader, node %d, removed in %v; the next lock granted %v after the request", gone, removed, time.Since(began))
		}
	}
	c.votersAre(left...)
	c.eventually("the removed node to say so", func() error {
		if code, msg := c.status(gone, "GET", "/v1/locks/jobs", c.token); code != http.StatusServiceUnavailable || !strings.Contains(msg, "removed") {
			return fmt.Errorf("%d %s", code, msg)
		}
		return nil
	})

	// The added node restarts from its log; then a founder that votes.
	// The leader removed may have been the newcomer itself (leadership
	// moves under load): it is added back first, so that it votes.
	if gone == 3 {
		if _, err := c.client(proc.ID(left[0])).Add(ctx, 3); err != nil {
			t.Fatalf("add 3 back: %v", err)
		}
		left = append(left, 3)
		c.votersAre(left...)
	}
	c.restart(3)
	c.votersAre(left...)
	if tok := c.lockAt(3, "jobs"); tok <= last {
		t.Fatalf("token %d through the restarted newcomer after %d", tok, last)
	} else {
		last = tok
	}
	founder := proc.ID(left[0])
	c.restart(founder)
	c.votersAre(left...)
	if tok := c.lockAt(founder, "jobs"); tok <= last {
		t.Fatalf("token %d through the restarted founder %d after %d", tok, founder, last)
	}
}
