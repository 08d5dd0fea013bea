package main

import (
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
	if code, out, _ := cli(t, "compare", "overlay", "--nodes", "200"); code != 0 || !strings.Contains(out, "hops (mean)") || !strings.Contains(out, "circular") {
		t.Errorf("compare overlay: exit %d\n%s", code, out)
	}
}
