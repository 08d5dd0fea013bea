package members_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

// metric reads one counter of node's /metrics text, by its name and
// labels as written ("cohort_datagrams_total{dir=\"received\"}").
func metric(node *live.Node, series string) float64 {
	var b bytes.Buffer
	node.WriteMetrics(&b)
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// TestProbesAsDatagrams: with datagrams, a cluster of founders and
// newcomers forms with SWIM's probes over UDP (every member receives
// them), detects a killed member, and a stranger without the secret,
// whose probes reach a founder as datagrams, is never listed: its
// datagrams are dropped as forged, and counted.
func TestProbesAsDatagrams(t *testing.T) {
	c := newClusterOver(t, 3, true)
	c.Join(10, 0)
	c.Join(11, 2)
	c.eventually("every member knows all five", holds(map[int]string{0: "alive", 1: "alive", 2: "alive", 10: "alive", 11: "alive"}))
	c.eventually("probes come as datagrams", func(id proc.ID, _ *members.Server) error {
		if n := metric(c.Nodes[id], `cohort_datagrams_total{dir="received"}`); n < 5 {
			return fmt.Errorf("%v datagrams received", n)
		}
		return nil
	})

	// A stranger probes p0 with datagrams under another secret.
	ln, pc, err := transport.ListenBoth("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, node := startStranger(t, transport.Config{Listener: ln, DatagramConn: pc, Datagrams: true}, c.Addrs[0])
	forged := `cohort_datagrams_dropped_total{reason="forged"}`
	c.eventually("p0 drops the stranger's datagrams", func(id proc.ID, _ *members.Server) error {
		if n := metric(c.Nodes[0], forged); n < 3 {
			return fmt.Errorf("p0 counts %v forged datagrams", n)
		}
		return nil
	})
	if n := metric(node, `cohort_datagrams_total{dir="received"}`); n != 0 {
		t.Fatalf("the stranger received %v datagrams", n)
	}

	c.kill(10)
	c.eventually("the killed member is declared dead", holds(map[int]string{10: "dead", 11: "alive", 0: "alive", 1: "alive", 2: "alive"}))
	c.neverListsTheStranger(10*fast.Period, nil)
}
