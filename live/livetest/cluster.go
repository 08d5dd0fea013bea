package livetest

import (
	"net"
	"testing"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// Cluster is a cluster over TCP on loopback that processes join while it
// runs: Founders nodes that know one another from the start, and the
// nodes that join later through a contact, knowing only it (and N = 1:
// a newcomer does not know the founders' number); the services a node
// runs (Services) spread the rest, as the membership service spreads the
// members' addresses. Every node closes when the test ends.
//
//	c := livetest.NewCluster(t, livetest.Cluster{Founders: 3, Secret: secret,
//		Services: func(id proc.ID, n *live.Node, contact proc.ID) { … members.NewServer(…) … }})
//	c.Join(7, 1)
type Cluster struct {
	Founders int
	Secret   []byte // the cluster's secret (at least 16 bytes)
	// Datagrams: every node's transport sends what may be lost (SWIM's
	// probes) as datagrams, on a UDP socket at its listener's port
	// (transport.Config.Datagrams).
	Datagrams bool
	// Config, if set, adjusts a node's configuration before it is made
	// (a trace directory, say).
	Config func(id proc.ID, cfg *live.Config)
	// Services starts the services of node id, started; contact is
	// proc.None for a founder.
	Services func(id proc.ID, node *live.Node, contact proc.ID)

	Addrs map[proc.ID]string     // every node's address, running or not
	Nodes map[proc.ID]*live.Node // the running nodes

	udp map[net.Listener]net.PacketConn // with Datagrams: each listener's UDP socket

	t testing.TB
}

// NewCluster starts the founders of c.
func NewCluster(t testing.TB, c Cluster) *Cluster {
	t.Helper()
	c.t, c.Addrs, c.Nodes, c.udp = t, map[proc.ID]string{}, map[proc.ID]*live.Node{}, map[net.Listener]net.PacketConn{}
	lns := map[proc.ID]net.Listener{}
	for i := range proc.ID(c.Founders) {
		lns[i] = c.Listen(i, "127.0.0.1:0")
	}
	for i := range proc.ID(c.Founders) {
		c.Start(i, lns[i], proc.None)
	}
	return &c
}

// Listen listens for node id on addr and records its address.
func (c *Cluster) Listen(id proc.ID, addr string) net.Listener {
	c.t.Helper()
	var ln net.Listener
	var err error
	if c.Datagrams {
		var pc net.PacketConn
		ln, pc, err = transport.ListenBoth(addr)
		c.udp[ln] = pc
	} else {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.Addrs[id] = ln.Addr().String()
	return ln
}

// Start starts node id on ln: a founder (contact proc.None) knows every
// founder; a newcomer knows its contact only.
func (c *Cluster) Start(id proc.ID, ln net.Listener, contact proc.ID) *live.Node {
	c.t.Helper()
	peers := map[proc.ID]string{}
	n := c.Founders
	if contact == proc.None {
		for j, a := range c.Addrs {
			if j != id && j < proc.ID(c.Founders) {
				peers[j] = a
			}
		}
	} else {
		peers[contact] = c.Addrs[contact]
		n = 1
	}
	pc := c.udp[ln]
	delete(c.udp, ln)
	tr, err := transport.NewTCP(transport.Config{Self: id, Listener: ln, Peers: peers, Secret: c.Secret, Joins: true,
		Datagrams: c.Datagrams, DatagramConn: pc})
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := live.Config{Self: id, N: n, IDs: 1 << 16, Transport: tr}
	if c.Config != nil {
		c.Config(id, &cfg)
	}
	node, err := live.NewNode(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { node.Close() })
	c.Nodes[id] = node
	if c.Services != nil {
		c.Services(id, node, contact)
	}
	return node
}

// Join starts a newcomer id, on a fresh port, through contact.
func (c *Cluster) Join(id, contact proc.ID) *live.Node {
	c.t.Helper()
	return c.Start(id, c.Listen(id, "127.0.0.1:0"), contact)
}

// Kill stops node id at once, as a crash would: its state is gone.
func (c *Cluster) Kill(id proc.ID) {
	c.Nodes[id].Close()
	delete(c.Nodes, id)
}
