package liverpc

import (
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

var testSecret = []byte("liverpc test secret, 32 bytes..!")

// cluster is n nodes over TCP on loopback (ephemeral ports), each with
// an endpoint and a data directory; restart closes a node and starts it
// again on the same port and directory, in this process.
type cluster struct {
	t     testing.TB
	addrs []string
	dirs  []string
	cfg   Config
	nodes []*live.Node
	eps   []*Endpoint
	setup func(i int, ep *Endpoint) // registers the procedures
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newCluster(t testing.TB, n int, cfg Config, setup func(int, *Endpoint)) *cluster {
	t.Helper()
	c := &cluster{t: t, cfg: cfg, setup: setup, nodes: make([]*live.Node, n), eps: make([]*Endpoint, n)}
	lns := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.addrs = append(c.addrs, ln.Addr().String())
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), "node"))
	}
	for i := range n {
		c.start(i, lns[i])
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *cluster) transportConfig(i int, ln net.Listener) transport.Config {
	peers := map[proc.ID]string{}
	for j, a := range c.addrs {
		if j != i {
			peers[proc.ID(j)] = a
		}
	}
	return transport.Config{Self: proc.ID(i), Listener: ln, Peers: peers, Secret: testSecret,
		DialBackoffMin: 5 * time.Millisecond, DialBackoffMax: 50 * time.Millisecond, Logger: quiet()}
}

func (c *cluster) start(i int, ln net.Listener) {
	c.t.Helper()
	if ln == nil {
		var err error
		for range 100 { // the port was ours a moment ago
			if ln, err = net.Listen("tcp", c.addrs[i]); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			c.t.Fatal(err)
		}
	}
	tr, err := transport.NewTCP(c.transportConfig(i, ln))
	if err != nil {
		c.t.Fatal(err)
	}
	node, err := live.NewNode(live.Config{Self: proc.ID(i), N: len(c.addrs), Transport: tr, DataDir: c.dirs[i], Logger: quiet()})
	if err != nil {
		c.t.Fatal(err)
	}
	ep, err := New(node, c.cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.setup != nil {
		c.setup(i, ep)
	}
	if err := node.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[i], c.eps[i] = node, ep
}

func (c *cluster) stop(i int) {
	if c.nodes[i] == nil {
		return
	}
	c.nodes[i].Close() // first: a crash, not a shutdown that answers the calls in progress
	c.eps[i].Close()
	c.nodes[i], c.eps[i] = nil, nil
}

// restart stops node i and starts it again on its port and data
// directory.
func (c *cluster) restart(i int) {
	c.stop(i)
	c.start(i, nil)
}
