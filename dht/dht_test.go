package dht_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/dht"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

var secret = []byte("dht test secret, 32 bytes long..")

// cluster is founders nodes on loopback, and the ones that join them
// later: each runs the membership service (which spreads the members'
// addresses) and the DHT.
type cluster struct {
	*livetest.Cluster
	t       testing.TB
	servers map[proc.ID]*dht.Server
}

func newCluster(t testing.TB, founders int) *cluster {
	return newTracedCluster(t, founders, "")
}

// newTracedCluster is newCluster with each node's traces in
// traces/node<i>, unless traces is "".
func newTracedCluster(t testing.TB, founders int, traces string) *cluster {
	c := &cluster{t: t, servers: map[proc.ID]*dht.Server{}}
	c.Cluster = livetest.NewCluster(t, livetest.Cluster{Founders: founders, Secret: secret,
		Config: func(id proc.ID, cfg *live.Config) {
			if traces != "" {
				cfg.TraceDir = filepath.Join(traces, fmt.Sprint("node", int(id)))
			}
		},
		Services: func(id proc.ID, node *live.Node, contact proc.ID) {
			if _, err := members.NewServer(members.Config{Node: node, Params: epidemic.Params{Period: 50 * time.Millisecond}, Contact: contact}); err != nil {
				t.Fatal(err)
			}
			s, err := dht.NewServer(dht.Config{Node: node, Contact: contact})
			if err != nil {
				t.Fatal(err)
			}
			c.servers[id] = s
		}})
	return c
}

// join starts a newcomer id through contact, and waits until it is in
// the overlay.
func (c *cluster) join(id, contact proc.ID) {
	c.t.Helper()
	c.Join(id, contact)
	select {
	case <-c.servers[id].Ready():
	case <-time.After(30 * time.Second):
		c.t.Fatalf("p%d did not join the overlay through p%d", id, contact)
	}
}

// kill stops node id at once, as a crash would.
func (c *cluster) kill(id proc.ID) {
	c.Kill(id)
	delete(c.servers, id)
}

func (c *cluster) ids() []proc.ID {
	var ids []proc.ID
	for id := range c.servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// inbox gathers what a member delivers.
type inbox struct {
	mu  sync.Mutex
	got map[string]int // body → deliveries
}

func (b *inbox) add(m dht.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got[m.Body]++
}

func (b *inbox) count(body string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[body]
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, within time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLiveDHTAndScribe starts four founders and four nodes that join one
// after another, stores keys through some nodes and reads them through
// others, multicasts to a group, then kills two nodes and checks that
// every key is still read and every multicast still reaches every
// surviving member.
func TestLiveDHTAndScribe(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster of 8 nodes over TCP, with failures")
	}
	c := newCluster(t, 4)
	for _, s := range c.servers {
		<-s.Ready()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const keys = 40
	value := func(k int) string { return fmt.Sprintf("value-%d", k) }
	put := func(k int, ids []proc.ID) {
		at := ids[k%len(ids)]
		r, err := c.servers[at].Put(ctx, fmt.Sprintf("key-%d", k), value(k))
		if err != nil {
			t.Fatalf("put key-%d at p%d: %v", k, at, err)
		}
		if !r.Found {
			t.Fatalf("put key-%d at p%d: not stored: %+v", k, at, r)
		}
	}
	// Half the keys among the founders; the joiners become the homes of
	// some, and read them from the leaf set when asked.
	for k := range keys / 2 {
		put(k, c.ids())
	}
	for id := proc.ID(4); id < 8; id++ {
		c.join(id, id-1-id%2) // through an earlier node, founder or joiner
	}
	// The rest through every node; gets through the next one.
	ids := c.ids()
	for k := keys / 2; k < keys; k++ {
		put(k, ids)
	}
	getAll := func(ids []proc.ID) error {
		for k := range keys {
			at := ids[(k+1)%len(ids)]
			r, err := c.servers[at].Get(ctx, fmt.Sprintf("key-%d", k))
			if err != nil {
				return fmt.Errorf("get key-%d at p%d: %v", k, at, err)
			}
			if !r.Found || r.Value != value(k) {
				return fmt.Errorf("get key-%d at p%d: %+v, want %q", k, at, r, value(k))
			}
		}
		return nil
	}
	if err := getAll(ids); err != nil {
		t.Fatal(err)
	}
	a, _ := dht.Algorithm(dht.Live, 4, proc.None)
	fetches := int64(0)
	for _, id := range ids {
		if svc, err := c.Nodes[id].Service(dht.ServiceName, a); err == nil {
			fetches += svc.Stats().ByKind["fetch"]
		}
	}
	retries := int64(0)
	for _, s := range c.servers {
		retries += s.Retries()
	}
	t.Logf("homes without a copy fetched one %d times; requests asked again: %d", fetches, retries)
	if retries > 0 {
		// Without failures every answer finds its way back, a fetched
		// copy's included: none waits for RequestTimeout.
		t.Errorf("%d requests went unanswered for %v before any failure", retries, dht.RequestTimeout)
	}

	// Every node agrees on each key's home.
	waitFor(t, "homes agree", 30*time.Second, func() error {
		for k := range keys {
			key := fmt.Sprintf("key-%d", k)
			home := -1
			for _, id := range ids {
				r, err := c.servers[id].Lookup(ctx, key)
				if err != nil {
					return err
				}
				if home >= 0 && r.Home != home {
					return fmt.Errorf("%s: p%d says p%d is its home, another says p%d", key, id, r.Home, home)
				}
				home = r.Home
			}
		}
		return nil
	})

	// Five members listen to a group; p1 publishes.
	group := "news"
	listeners := []proc.ID{0, 2, 3, 5, 7}
	boxes := map[proc.ID]*inbox{}
	for _, id := range listeners {
		b := &inbox{got: map[string]int{}}
		boxes[id] = b
		stop, err := c.servers[id].Listen(ctx, group, b.add)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	probe := 0
	treeUp := func(publisher proc.ID, members []proc.ID) func() error {
		return func() error {
			probe++
			body := fmt.Sprintf("probe-%d", probe)
			if _, err := c.servers[publisher].Publish(ctx, group, body); err != nil {
				return err
			}
			deadline := time.Now().Add(time.Second)
			for {
				missing := []proc.ID{}
				for _, id := range members {
					if boxes[id].count(body) == 0 {
						missing = append(missing, id)
					}
				}
				if len(missing) == 0 {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s missed by %v", body, missing)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	multicast := func(publisher proc.ID, members []proc.ID, round string) {
		t.Helper()
		waitFor(t, "the tree forms", 30*time.Second, treeUp(publisher, members))
		const n = 20
		for i := range n {
			if _, err := c.servers[publisher].Publish(ctx, group, fmt.Sprintf("%s-%d", round, i)); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "every member delivers every multicast once", 10*time.Second, func() error {
			for _, id := range members {
				for i := range n {
					body := fmt.Sprintf("%s-%d", round, i)
					if got := boxes[id].count(body); got != 1 {
						return fmt.Errorf("p%d delivered %s %d times", id, body, got)
					}
				}
			}
			return nil
		})
	}
	multicast(1, listeners, "before")

	// Kill two nodes: a listener and one that is not.
	c.kill(3)
	c.kill(6)
	survivors := c.ids()
	waitFor(t, "every key read after the failures", time.Minute, func() error { return getAll(survivors) })
	multicast(1, []proc.ID{0, 2, 5, 7}, "after")
}

// TestRestartedNodeComesBack: a founder crashes and restarts under the
// same ID and address, with nothing kept: it rejoins the overlay (the
// others learn it again from its keep-alives and row exchanges), and
// every key is read through it, the keys it is the home of among them.
func TestRestartedNodeComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster over TCP, with a crash and a restart")
	}
	c := newCluster(t, 5)
	for _, s := range c.servers {
		<-s.Ready()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const keys = 30
	for k := range keys {
		if _, err := c.servers[proc.ID(k%5)].Put(ctx, fmt.Sprintf("key-%d", k), fmt.Sprint(k)); err != nil {
			t.Fatal(err)
		}
	}
	// A key whose home is p1.
	homed := ""
	for k := 0; homed == ""; k++ {
		key := fmt.Sprintf("probe-%d", k)
		r, err := c.servers[0].Lookup(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Home == 1 {
			homed = key
		}
	}
	c.kill(1)
	waitFor(t, "p0 routes around the crashed p1", 30*time.Second, func() error {
		if r, err := c.servers[0].Lookup(ctx, homed); err != nil || r.Home == 1 {
			return fmt.Errorf("%s still routed to p%d (%v)", homed, r.Home, err)
		}
		return nil
	})
	var ln net.Listener
	deadline := time.Now().Add(10 * time.Second)
	for { // the kernel may hold the address a moment after the close
		var err error
		if ln, err = net.Listen("tcp", c.Addrs[1]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("taking p1's address again: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Start(1, ln, proc.None)
	<-c.servers[1].Ready()
	waitFor(t, "every key read through the restarted node, and its homes agreed on", time.Minute, func() error {
		if r, err := c.servers[0].Lookup(ctx, homed); err != nil || r.Home != 1 {
			return fmt.Errorf("p0 routes %s to p%d, not to the restarted p1 (%v)", homed, r.Home, err)
		}
		for k := range keys {
			key := fmt.Sprintf("key-%d", k)
			r, err := c.servers[1].Get(ctx, key)
			if err != nil || !r.Found || r.Value != fmt.Sprint(k) {
				return fmt.Errorf("get %s at p1: %+v %v", key, r, err)
			}
			want, err := c.servers[0].Lookup(ctx, key)
			if err != nil {
				return err
			}
			if r.Home != want.Home {
				return fmt.Errorf("%s: p1 reads it at p%d, p0 routes it to p%d", key, r.Home, want.Home)
			}
		}
		return nil
	})
}
