package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimSnapshot: `cohort sim snapshot` runs both algorithms, checked,
// with one marker per channel per snapshot; on a ring of 8 with a
// constant delay (and Lai–Yang's default reordering off) a snapshot
// takes (diameter 4) + 1 delays, on the complete graph 2; --svg draws the cuts; the family's flags are checked.
func TestSimSnapshot(t *testing.T) {
	for _, algo := range []string{"chandy-lamport", "lai-yang"} {
		for _, c := range []struct {
			topology string
			delays   float64
		}{{"ring", 5}, {"full", 2}} {
			r := simJSON(t, "snapshot", "--algo", algo, "--nodes", "8", "--topology", c.topology, "--latency", "1ms",
				"--snapshots", "2", "--initiators", "2", "--reorder", "0")
			for _, ch := range r["checks"].([]any) {
				if ch := ch.(map[string]any); ch["ok"] != true {
					t.Errorf("%s on a %s: %s %v: %v", algo, c.topology, ch["name"], ch["status"], ch["detail"])
				}
			}
			if m := metricOf(r, "markers_per_channel"); m != 1 {
				t.Errorf("%s on a %s: %v markers per channel per snapshot, want 1", algo, c.topology, m)
			}
			if s := metricOf(r, "snapshots"); s != 4 {
				t.Errorf("%s on a %s: %v snapshots, want 4 (2 rounds of 2)", algo, c.topology, s)
			}
			if d := metricOf(r, "complete_delays"); d != c.delays {
				t.Errorf("%s on a %s: complete in %v delays, want %v", algo, c.topology, d, c.delays)
			}
		}
	}
	svg := filepath.Join(t.TempDir(), "cuts.svg")
	if code, _, errs := cli(t, "sim", "snapshot", "--algo", "lai-yang", "--nodes", "3", "--svg", svg); code != 0 {
		t.Fatalf("--svg: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `class="cut"`); n != 2 {
		t.Errorf("the diagram draws %d cuts, want 2", n)
	}
	for _, bad := range [][]string{
		{"snapshot", "--topology", "star"},
		{"snapshot", "--snapshots", "0"},
		{"snapshot", "--initiators", "1001"},
		{"mutex", "--initiators", "2"},
	} {
		code, _, errs := cli(t, append([]string{"sim"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[len(bad)-1]) && !strings.Contains(errs, bad[1]) {
			t.Errorf("%v: exit %d (%s), want 2 naming the value", bad, code, errs)
		}
	}
}
