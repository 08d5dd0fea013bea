package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestSimOverlay: `cohort sim overlay` runs both algorithms with
// --lookups; Pastry's routes are shorter than the circular baseline's;
// --lookups belongs to the overlay family.
func TestSimOverlay(t *testing.T) {
	run := func(args ...string) map[string]any { t.Helper(); return simJSON(t, "overlay", args...) }
	metric := metricOf
	p := run("--algo", "pastry", "--nodes", "300", "--lookups", "40")
	c := run("--algo", "circular", "--nodes", "300", "--lookups", "40")
	if d := p["outputs"].(map[string]any)["delivered"]; d != float64(40) {
		t.Errorf("pastry: %v deliveries, want 40", d)
	}
	if !(metric(p, "hops_mean") < metric(c, "hops_mean")) || metric(p, "delivered_fraction") != 1 || metric(c, "delivered_fraction") != 1 {
		t.Errorf("pastry %v, circular %v", p["metrics"], c["metrics"])
	}
	if code, _, errs := cli(t, "sim", "gossip", "--lookups", "3"); code != 2 || errs == "" {
		t.Errorf("--lookups on gossip: exit %d (%s), want 2 and a message", code, errs)
	}
	if code, _, errs := cli(t, "sim", "overlay", "--lookups", "0"); code != 2 || errs == "" {
		t.Errorf("--lookups 0: exit %d (%s), want 2 and a message", code, errs)
	}
	if code, out, _ := binCLI(t, "compare", "overlay", "--nodes", "200"); code != 0 || !strings.Contains(out, "hops (mean)") || !strings.Contains(out, "circular") ||
		!strings.Contains(out, "delay penalty (mean), lookups on a transit-stub network, proximity-aware tables") ||
		!strings.Contains(out, "delay penalty from the root (mean), multicast trees on a transit-stub network, proximity-aware tables") {
		t.Errorf("compare overlay: exit %d\n%s", code, out)
	}
}

// TestSimOverlayFail: `cohort sim overlay --fail` fails a tenth of the
// nodes at once and reports each phase; every lookup after repair is
// delivered at its live home, and the run's checkers (overlay-tables
// among them) pass; a bad --fail is a usage error naming the value.
func TestSimOverlayFail(t *testing.T) {
	r := simJSON(t, "overlay", "--algo", "pastry", "--nodes", "100", "--fail", "0.1", "--lookups", "40")
	for _, m := range []string{"delivered_fraction_before", "delivered_fraction_failed", "delivered_fraction_repaired", "correct_fraction_repaired"} {
		if v := metricOf(r, m); v != 1 {
			t.Errorf("%s = %v, want 1 (%v)", m, v, r["metrics"])
		}
	}
	if metricOf(r, "failed_nodes") != 10 || metricOf(r, "hops_mean_repaired") <= 0 {
		t.Errorf("metrics %v", r["metrics"])
	}
	for _, c := range r["checks"].([]any) {
		if c := c.(map[string]any); c["ok"] != true {
			t.Errorf("check %v", c)
		}
	}
	for _, bad := range []string{"0", "1", "-0.5", "NaN"} {
		if code, _, errs := cli(t, "sim", "overlay", "--fail", bad); code != 2 || !strings.Contains(errs, bad) {
			t.Errorf("--fail %s: exit %d (%s), want 2 and a message naming it", bad, code, errs)
		}
	}
	if code, _, errs := cli(t, "sim", "gossip", "--fail", "0.1"); code != 2 || errs == "" {
		t.Errorf("--fail on gossip: exit %d (%s), want 2 and a message", code, errs)
	}
}

// TestSimOverlayTrees: `cohort sim overlay --algo scribe|esm --json`
// reports the trees' depth, delay penalty and link stress beside naive
// unicast on the transit-stub network, with every multicast received and
// the checkers green; with a crash given, Scribe repairs and stays green.
func TestSimOverlayTrees(t *testing.T) {
	for _, args := range [][]string{
		{"--algo", "scribe", "--nodes", "40"},
		{"--algo", "esm", "--nodes", "40"},
		{"--algo", "scribe", "--nodes", "24", "--fault", "crash 5 at 2.2s"},
	} {
		r := simJSON(t, "overlay", args...)
		for _, m := range []string{"depth_mean", "rdp_mean", "stress_max", "unicast_stress_max"} {
			if v := metricOf(r, m); !(v > 0) {
				t.Errorf("%v: %s = %v (%v)", args, m, v, r["metrics"])
			}
		}
		if len(args) == 4 && metricOf(r, "received_fraction") != 1 {
			t.Errorf("%v: metrics %v", args, r["metrics"])
		}
		for _, c := range r["checks"].([]any) {
			if c := c.(map[string]any); c["ok"] != true {
				t.Errorf("%v: check %v", args, c)
			}
		}
		if !strings.Contains(fmt.Sprint(r["network"]), "transit-stub") {
			t.Errorf("%v: network %v", args, r["network"])
		}
	}
	// The lookup overlays' flags are refused for the multicast trees.
	for _, args := range [][]string{{"--algo", "scribe", "--lookups", "5"}, {"--algo", "esm", "--fail", "0.1"}} {
		if code, _, errs := cli(t, append([]string{"sim", "overlay"}, args...)...); code != 2 || !strings.Contains(errs, args[2]) {
			t.Errorf("sim overlay %v: exit %d, %q; want 2 naming %s", args, code, errs, args[2])
		}
	}
}

// TestSimOverlayProximity: `cohort sim overlay --proximity on|off` runs
// Pastry's lookups on a transit-stub network with tables chosen by
// measured round trips or not: both deliver every lookup, pass their
// checks and report their delay penalty, and the proximity-aware tables'
// is the smaller; Scribe takes the flag too. `compare overlay
// --proximity on` keeps only the proximity-aware cases. A value other
// than on or off, the flag on an algorithm without Pastry's tables or on
// another family, are usage errors naming what is wrong.
func TestSimOverlayProximity(t *testing.T) {
	args := []string{"--algo", "pastry", "--nodes", "200", "--lookups", "200", "--proximity"}
	on, off := simJSON(t, "overlay", append(args, "on")...), simJSON(t, "overlay", append(args, "off")...)
	for name, r := range map[string]map[string]any{"on": on, "off": off} {
		if metricOf(r, "delivered_fraction") != 1 || !(metricOf(r, "rdp_mean") >= 1) {
			t.Errorf("--proximity %s: metrics %v", name, r["metrics"])
		}
		for _, c := range r["checks"].([]any) {
			if c := c.(map[string]any); c["ok"] != true {
				t.Errorf("--proximity %s: check %v", name, c)
			}
		}
	}
	if !(metricOf(on, "rdp_mean") < metricOf(off, "rdp_mean")) {
		t.Errorf("rdp_mean with proximity %v, without %v: want it smaller with", metricOf(on, "rdp_mean"), metricOf(off, "rdp_mean"))
	}
	t.Logf("rdp_mean: proximity on %.2f, off %.2f", metricOf(on, "rdp_mean"), metricOf(off, "rdp_mean"))
	s := simJSON(t, "overlay", "--algo", "scribe", "--nodes", "64", "--proximity", "on")
	if metricOf(s, "received_fraction") != 1 {
		t.Errorf("scribe --proximity on: metrics %v", s["metrics"])
	}
	code, out, errs := binCLI(t, "compare", "overlay", "--nodes", "64", "--proximity", "on")
	if code != 0 || !strings.Contains(out, "proximity-aware tables") || strings.Contains(out, "joins then lookups") || strings.Contains(out, "esm") {
		t.Errorf("compare overlay --proximity on: exit %d (%s)\n%s", code, errs, out)
	}
	for _, bad := range [][]string{
		{"sim", "overlay", "--algo", "pastry", "--proximity", "maybe"},
		{"sim", "overlay", "--algo", "esm", "--proximity", "on"},
		{"sim", "overlay", "--algo", "circular", "--proximity", "off"},
		{"sim", "gossip", "--proximity", "on"},
		{"compare", "overlay", "--nodes", "8", "--proximity", "maybe"},
		{"compare", "mutex", "--nodes", "4", "--proximity", "on"},
	} {
		code, _, errs := cli(t, bad...)
		want := bad[len(bad)-1]
		if want == "on" || want == "off" {
			want = bad[1]
			if bad[1] == "overlay" {
				want = bad[3]
			}
		}
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d (%s), want 2 and a message naming %q", bad, code, errs, want)
		}
	}
}

// TestSimOverlayESMParent: `cohort sim overlay --algo esm --parent
// bandwidth|latency` chooses ESM's parents by bandwidth then delay, or by
// delay alone; the stream's rate the members receive is in the metrics,
// the whole of it by bandwidth. Another value, or the flag on another
// algorithm, is a usage error naming it.
func TestSimOverlayESMParent(t *testing.T) {
	bw := simJSON(t, "overlay", "--algo", "esm", "--nodes", "64", "--parent", "bandwidth")
	lat := simJSON(t, "overlay", "--algo", "esm", "--nodes", "64", "--parent", "latency")
	if metricOf(bw, "full_rate_fraction") != 1 || !(metricOf(lat, "stream_rate_mean") < metricOf(bw, "stream_rate_mean")) {
		t.Errorf("--parent bandwidth: %v; latency: %v", bw["metrics"], lat["metrics"])
	}
	for _, bad := range [][]string{
		{"sim", "overlay", "--algo", "esm", "--parent", "fastest"},
		{"sim", "overlay", "--algo", "pastry", "--parent", "latency"},
	} {
		code, _, errs := cli(t, bad...)
		want := map[string]string{"esm": "fastest", "pastry": "pastry"}[bad[3]]
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d (%s), want 2 and a message naming %q", bad, code, errs, want)
		}
	}
}

// TestSimOverlayESMImprove: `cohort sim overlay --algo esm --settle 3`
// runs three improvement periods after the joins and reports the tree
// before them (the metrics named _before) and after; `--improve 0` turns
// the search for better parents off, so the tree does not change. A
// negative period, or the flags on another algorithm, are usage errors.
func TestSimOverlayESMImprove(t *testing.T) {
	on := simJSON(t, "overlay", "--algo", "esm", "--nodes", "64", "--settle", "3")
	off := simJSON(t, "overlay", "--algo", "esm", "--nodes", "64", "--settle", "3", "--improve", "0")
	if !(metricOf(on, "rdp_mean") < metricOf(on, "rdp_mean_before")) {
		t.Errorf("--settle 3: %v, want the delay penalty lower after", on["metrics"])
	}
	if metricOf(off, "rdp_mean") != metricOf(off, "rdp_mean_before") {
		t.Errorf("--improve 0: %v, want the tree unchanged", off["metrics"])
	}
	for _, bad := range [][]string{
		{"sim", "overlay", "--algo", "esm", "--improve", "-1s"},
		{"sim", "overlay", "--algo", "scribe", "--settle", "2"},
	} {
		code, _, errs := cli(t, bad...)
		want := map[string]string{"esm": "-1s", "scribe": "scribe"}[bad[3]]
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d (%s), want 2 and a message naming %q", bad, code, errs, want)
		}
	}
}
