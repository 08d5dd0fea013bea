package members_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

var secret = []byte("members test secret, 32 bytes ok")

// fast is a short period, so that detections take a fraction of a second.
var fast = epidemic.Params{Period: 20 * time.Millisecond}

// cluster is founders nodes on loopback that take joins, and the ones
// that join them, each running the membership service.
type cluster struct {
	*livetest.Cluster
	t       *testing.T
	servers map[proc.ID]*members.Server
}

func newCluster(t *testing.T, founders int) *cluster { return newClusterOver(t, founders, false) }

// newClusterOver is newCluster, SWIM's probes sent as datagrams or not.
func newClusterOver(t *testing.T, founders int, datagrams bool) *cluster {
	c := &cluster{t: t, servers: map[proc.ID]*members.Server{}}
	c.Cluster = livetest.NewCluster(t, livetest.Cluster{Founders: founders, Secret: secret, Datagrams: datagrams,
		Services: func(id proc.ID, node *live.Node, contact proc.ID) {
			s, err := members.NewServer(members.Config{Node: node, Params: fast, Contact: contact})
			if err != nil {
				t.Fatal(err)
			}
			c.servers[id] = s
		}})
	return c
}

// kill stops member id at once, as a crash would: its state is gone.
func (c *cluster) kill(id proc.ID) {
	c.Kill(id)
	delete(c.servers, id)
}

// eventually waits, up to a deadline, until cond holds at every running
// member; it fails the test with the last reason otherwise.
func (c *cluster) eventually(what string, cond func(id proc.ID, s *members.Server) error) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		for id, s := range c.servers {
			if err = cond(id, s); err != nil {
				err = fmt.Errorf("p%d: %w", id, err)
				break
			}
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// states is what s holds about each member, by ID: "alive", "dead" ...
func states(s *members.Server) (map[int]string, error) {
	ms, err := s.Members()
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, m := range ms {
		out[m.ID] = m.State
	}
	return out, nil
}

func holds(want map[int]string) func(proc.ID, *members.Server) error {
	return func(_ proc.ID, s *members.Server) error {
		got, err := states(s)
		if err != nil {
			return err
		}
		for id, st := range want {
			if got[id] != st {
				return fmt.Errorf("holds p%d %q, want %q (list %v)", id, got[id], st, got)
			}
		}
		return nil
	}
}

// TestJoinSpreadDetect: three founders; two nodes join, through
// different members, without a restart of anyone; a write at a newcomer
// reaches every member; a member killed is declared dead everywhere, and
// its key stays; a member that restarts with a fresh state at the same
// address rejoins alive under a higher incarnation and gets the map back.
func TestJoinSpreadDetect(t *testing.T) {
	c := newCluster(t, 3)
	c.Join(10, 0)
	c.Join(11, 2)
	c.eventually("every member knows all five", holds(map[int]string{0: "alive", 1: "alive", 2: "alive", 10: "alive", 11: "alive"}))

	if _, err := c.servers[11].Put("color", "blue"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.servers[1].Put("size", "xl"); err != nil {
		t.Fatal(err)
	}
	c.eventually("size reaches every member", func(_ proc.ID, s *members.Server) error {
		if _, ok, _ := s.Get("size"); !ok {
			return fmt.Errorf("no size")
		}
		return nil
	})
	// A deletion at another node than the write's: its version is above
	// the write's once the node holds the write. (Before, the two would
	// race, and the larger writer ID win.)
	if _, err := c.servers[0].Delete("size"); err != nil {
		t.Fatal(err)
	}
	c.eventually("the map converges", func(_ proc.ID, s *members.Server) error {
		e, ok, err := s.Get("color")
		if err != nil || !ok || e.Value != "blue" {
			return fmt.Errorf("color = %+v, %v, %v", e, ok, err)
		}
		if _, ok, _ := s.Get("size"); ok {
			return fmt.Errorf("size is still there")
		}
		return nil
	})

	c.kill(10)
	c.eventually("the killed member is declared dead", holds(map[int]string{10: "dead", 11: "alive"}))

	// p1 restarts from nothing at its address: it refutes its obituary.
	addr := c.Addrs[1]
	c.kill(1)
	c.eventually("p1 is declared dead", holds(map[int]string{1: "dead"}))
	var ln net.Listener
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Start(1, ln, proc.None)
	c.eventually("p1 is alive again, at a higher incarnation", func(_ proc.ID, s *members.Server) error {
		ms, err := s.Members()
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.ID == 1 && (m.State != "alive" || m.Incarnation == 0) {
				return fmt.Errorf("holds p1 %s@%d", m.State, m.Incarnation)
			}
		}
		e, ok, _ := s.Get("color")
		if !ok || e.Value != "blue" {
			return fmt.Errorf("color = %+v, %v", e, ok)
		}
		return nil
	})
}

// TestLeaveIsNotDeath: a member that leaves is held left, not dead.
func TestLeaveIsNotDeath(t *testing.T) {
	c := newCluster(t, 3)
	c.Join(5, 1)
	c.eventually("every member knows p5", holds(map[int]string{5: "alive"}))
	if err := c.servers[5].Leave(); err != nil {
		t.Fatal(err)
	}
	delete(c.servers, 5) // it no longer answers for itself
	c.eventually("p5 is held left", holds(map[int]string{5: "left"}))
}

// startStranger starts member 9 under another secret than the cluster's,
// with the transport cfg (its listener, datagrams), joining through
// member 0 at addr.
func startStranger(t *testing.T, cfg transport.Config, addr string) (*members.Server, *live.Node) {
	t.Helper()
	cfg.Self, cfg.Peers, cfg.Joins = 9, map[proc.ID]string{0: addr}, true
	cfg.Secret = []byte("not the cluster secret, 32 bytes")
	tr, err := transport.NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	node, err := live.NewNode(live.Config{Self: 9, N: 1, IDs: 1 << 16, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	s, err := members.NewServer(members.Config{Node: node, Params: fast, Contact: 0})
	if err != nil {
		t.Fatal(err)
	}
	return s, node
}

// TestStrangerCannotJoin: a node without the cluster's secret is refused,
// and no member ever lists it.
func TestStrangerCannotJoin(t *testing.T) {
	c := newCluster(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := startStranger(t, transport.Config{Listener: ln}, c.Addrs[0])
	if _, err := stranger.Put("owned", "yes"); err != nil {
		t.Fatal(err)
	}
	// Long enough for many join attempts and exchanges (the stranger
	// tries every period), judged at the founders.
	c.neverListsTheStranger(50*fast.Period, func(id proc.ID, s *members.Server) {
		if _, ok, _ := s.Get("owned"); ok {
			t.Fatalf("p%d holds the stranger's key", id)
		}
	})
}

// neverListsTheStranger fails the test if, for d, any member lists member
// 9 (startStranger's), or fails also (if not nil).
func (c *cluster) neverListsTheStranger(d time.Duration, also func(id proc.ID, s *members.Server)) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		for id, s := range c.servers {
			st, err := states(s)
			if err != nil {
				c.t.Fatal(err)
			}
			if _, ok := st[9]; ok {
				c.t.Fatalf("p%d lists the stranger: %v", id, st)
			}
			if also != nil {
				also(id, s)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBadKeys: keys and values out of bounds are refused, naming them.
func TestBadKeys(t *testing.T) {
	c := newCluster(t, 1)
	s := c.servers[0]
	for _, k := range []string{"", "a/b", "has space", string(make([]byte, members.MaxKey+1))} {
		if _, err := s.Put(k, "v"); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
	}
	if _, err := s.Put("k", string(make([]byte, members.MaxValue+1))); err == nil {
		t.Error("a value beyond MaxValue accepted")
	}
	// The map's bound: fill it, then one more write is refused.
	v := string(make([]byte, members.MaxValue))
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		_, err = s.Put(fmt.Sprintf("k%d", i), v)
	}
	if err == nil {
		t.Fatal("the map took 1000 values of MaxValue bytes")
	}
}

// TestRestartedMemberAnnouncesAnew: a member killed and restarted from
// nothing at its address, with other kinds than before, is listed with
// its new kinds at every member. Its fresh map would give its own key
// the version its first incarnation's write had: the versions tie, the
// digests agree, and the others kept the old value for ever (p0 still
// listed the old kinds after 20 s before a member's writes of its own
// keys took the wall clock as their least version).
func TestRestartedMemberAnnouncesAnew(t *testing.T) {
	kinds := map[proc.ID]string{0: "lock=raft", 1: "lock=raft", 2: "lock=raft"}
	c := &cluster{t: t, servers: map[proc.ID]*members.Server{}}
	c.Cluster = livetest.NewCluster(t, livetest.Cluster{Founders: 3, Secret: secret,
		Services: func(id proc.ID, node *live.Node, contact proc.ID) {
			s, err := members.NewServer(members.Config{Node: node, Params: fast, Contact: contact, Kinds: kinds[id]})
			if err != nil {
				t.Fatal(err)
			}
			c.servers[id] = s
		}})
	lists := func(want string) func(proc.ID, *members.Server) error {
		return func(_ proc.ID, s *members.Server) error {
			ms, err := s.Members()
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.ID == 2 && (m.State != "alive" || m.Kinds != want) {
					return fmt.Errorf("holds p2 %s with kinds %q, want alive with %q", m.State, m.Kinds, want)
				}
			}
			return nil
		}
	}
	c.eventually("p2's kinds everywhere", lists("lock=raft"))
	addr := c.Addrs[2]
	c.kill(2)
	c.eventually("p2 is declared dead", holds(map[int]string{2: "dead"}))
	kinds[2] = "lock=central"
	var ln net.Listener
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	c.Start(2, ln, proc.None)
	c.eventually("p2's new kinds everywhere", lists("lock=central"))
}
