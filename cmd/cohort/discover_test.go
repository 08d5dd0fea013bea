package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/members"
)

// TestDiscoverCommands: on a three-node cluster of processes, two nodes
// advertise a resource with `cohort discover advertise`, `discover find`
// at the third lists both with their attributes, and after `discover
// withdraw` only the other. Bad input exits 2 naming the value.
func TestDiscoverCommands(t *testing.T) {
	eps := startCluster(t, "--nodes", "3", "--members", "--algo", "mutex/ricart-agrawala", "--dir", t.TempDir())
	if code, out, errs := cli(t, "discover", "advertise", "db", "--attr", "port=5432", "--attr", "zone=a", "--endpoints", eps[0]); code != 0 || !strings.Contains(out, "advertised db") {
		t.Fatalf("advertise: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, "discover", "advertise", "db", "--endpoints", eps[1]); code != 0 {
		t.Fatalf("advertise: %d %s %s", code, out, errs)
	}
	finds := func(want ...int) func() bool {
		return func() bool {
			code, out, _ := cli(t, "discover", "find", "db", "-k", "0", "--endpoints", eps[2], "--json")
			var hs []members.Holder
			if code != 0 || json.Unmarshal([]byte(out), &hs) != nil {
				return false
			}
			var got []int
			for _, h := range hs {
				got = append(got, h.ID)
				if h.ID == 0 && h.Attrs["port"] != "5432" {
					t.Fatalf("p0's attributes: %v", h.Attrs)
				}
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		}
	}
	waitUntil(t, "both holders found at p2", finds(0, 1))
	if code, out, errs := cli(t, "discover", "find", "db", "-k", "1", "--endpoints", eps[0]); code != 0 || !strings.HasPrefix(out, "p0\t") || !strings.Contains(out, "port=5432\tzone=a") {
		t.Errorf("find at a holder: %d %q %s; want itself first, with its attributes", code, out, errs)
	}
	if code, out, errs := cli(t, "discover", "withdraw", "db", "--endpoints", eps[0]); code != 0 || !strings.Contains(out, "withdrew db") {
		t.Fatalf("withdraw: %d %s %s", code, out, errs)
	}
	waitUntil(t, "the withdrawn holder gone at p2", finds(1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"discover", "fetch", "db"}, `"fetch"`},
		{[]string{"discover", "find", "a@b"}, `"a@b"`},
		{[]string{"discover", "find", "db", "-k", "-1"}, "-k -1"},
		{[]string{"discover", "advertise", "db", "--attr", "novalue"}, `"novalue"`},
		{[]string{"discover", "advertise", "db", "--attr", "a=1", "--attr", "a=2"}, `"a=2"`},
		{[]string{"discover", "find", "db", "--attr", "a=1"}, "--attr"},
		{[]string{"discover", "withdraw", "db", "-k", "2"}, "-k"},
	} {
		if code, _, errs := cli(t, append(c.args, "--endpoints", "127.0.0.1:1")...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", c.args, code, errs, c.want)
		}
	}
}

// cohort sim gossip --algo discovery, on the transit-stub network and on
// the plane: every node's answer scored, the checks held.
func TestSimDiscovery(t *testing.T) {
	for _, args := range [][]string{{}, {"--plane"}} {
		r := simJSON(t, "gossip", append([]string{"--algo", "discovery", "--nodes", "100"}, args...)...)
		if metricOf(r, "precision_at_k") <= metricOf(r, "random_precision") || metricOf(r, "rounds_to_findable") <= 0 {
			t.Errorf("%v: %v", args, r["metrics"])
		}
	}
	if code, _, errs := cli(t, "sim", "gossip", "--algo", "push", "--plane"); code != 2 || !strings.Contains(errs, "--plane") {
		t.Errorf("--plane with push: exit %d, %q", code, errs)
	}
}
