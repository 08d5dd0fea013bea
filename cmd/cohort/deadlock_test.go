package main

import (
	"strings"
	"testing"
)

// TestSimDeadlock: `cohort sim deadlock` runs CMH, which declares the
// deadlocks of seed 1 and no phantom, and the timeout detector at a short
// T, which declares phantoms (not guaranteed: the run passes); the
// family's flags are checked.
func TestSimDeadlock(t *testing.T) {
	r := simJSON(t, "deadlock", "--algo", "cmh", "--nodes", "5", "--seed", "1")
	for _, ch := range r["checks"].([]any) {
		if ch := ch.(map[string]any); ch["ok"] != true {
			t.Errorf("cmh: %s %v: %v", ch["name"], ch["status"], ch["detail"])
		}
	}
	if f, d := metricOf(r, "deadlocks_formed"), metricOf(r, "deadlocks_detected"); f < 1 || d != f {
		t.Errorf("cmh seed 1: %v deadlocks formed, %v detected: want some, all", f, d)
	}
	r = simJSON(t, "deadlock", "--algo", "timeout", "--wait", "3ms", "--txns", "4", "--contention", "0.9")
	if p := metricOf(r, "phantom_detections"); p < 1 {
		t.Errorf("timeout at 3ms: %v phantom detections, want some", p)
	}
	// The OR model: knots form at high contention, each declared by one
	// process, none a phantom; every wait is answered in the end.
	r = simJSON(t, "deadlock", "--algo", "cmh-or", "--nodes", "5", "--seed", "3", "--contention", "0.9")
	for _, ch := range r["checks"].([]any) {
		if ch := ch.(map[string]any); ch["ok"] != true {
			t.Errorf("cmh-or: %s %v: %v", ch["name"], ch["status"], ch["detail"])
		}
	}
	if f, d, a := metricOf(r, "deadlocks_formed"), metricOf(r, "deadlocks_detected"), metricOf(r, "answered_waits"); f < 1 || d != f || a != 50 {
		t.Errorf("cmh-or seed 3: %v knots formed, %v detected, %v waits answered: want some, all, 50", f, d, a)
	}
	for _, bad := range [][]string{
		{"deadlock", "--contention", "1.5"},
		{"deadlock", "--want", "0"},
		{"deadlock", "--txns", "1001"},
		{"deadlock", "--wait", "-1ms"},
		{"deadlock", "--nodes", "65"},
		{"mutex", "--want", "2"},
	} {
		code, _, errs := cli(t, append([]string{"sim"}, bad...)...)
		if code != 2 || !strings.Contains(errs, bad[len(bad)-1]) && !strings.Contains(errs, bad[1]) {
			t.Errorf("%v: exit %d (%s), want 2 naming the value", bad, code, errs)
		}
	}
}
