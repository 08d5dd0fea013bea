// Package livetest starts live clusters inside one process, for the tests
// and examples of the services built on package live: n nodes joined by
// the in-process transport (same ordering and backpressure as TCP), with
// Cohort's wire codec.
//
//	nodes := livetest.Start(t, 3, live.Config{Resolve: lock.Resolver(ra)})
//	l, _ := lock.New(nodes[1], "jobs", ra)
package livetest

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// New starts n nodes, each with cfg but for Self, N and Transport, which it
// sets, and DataDir: if cfg has one, node i keeps its storage in
// DataDir/node<i>. It returns the nodes, started, and a function that
// closes them.
func New(n int, cfg live.Config) ([]*live.Node, func(), error) {
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		return nil, nil, err
	}
	return on(net, n, cfg)
}

// on starts n nodes on net's endpoints (see New).
func on(net *transport.Network, n int, cfg live.Config) ([]*live.Node, func(), error) {
	var nodes []*live.Node
	stop := func() {
		for _, node := range nodes {
			node.Close()
		}
	}
	for i := range n {
		ep, err := net.Endpoint(proc.ID(i))
		if err != nil {
			stop()
			return nil, nil, err
		}
		c := cfg
		c.Self, c.N, c.Transport = proc.ID(i), n, ep
		if cfg.DataDir != "" {
			c.DataDir = filepath.Join(cfg.DataDir, fmt.Sprintf("node%d", i))
		}
		node, err := live.NewNode(c)
		if err == nil {
			err = node.Start()
		}
		if err != nil {
			stop()
			return nil, nil, errors.Join(err, ep.Close())
		}
		nodes = append(nodes, node)
	}
	return nodes, stop, nil
}

// Start is New for a test: it fails the test on error and closes the
// nodes when the test ends.
func Start(t testing.TB, n int, cfg live.Config) []*live.Node {
	t.Helper()
	nodes, stop, err := New(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return nodes
}

// StartNetwork is Start that also returns the nodes' network, for a test
// that cuts nodes off (transport.Network.Isolate).
func StartNetwork(t testing.TB, n int, cfg live.Config) ([]*live.Node, *transport.Network) {
	t.Helper()
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, stop, err := on(net, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return nodes, net
}
