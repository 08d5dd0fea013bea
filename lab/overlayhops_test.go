package lab

import (
	"math"
	"testing"
)

// TestOverlayHopHistogram: the series "hops" counts every delivered
// lookup once, by its hops, and its mean is hops_mean.
func TestOverlayHopHistogram(t *testing.T) {
	for _, name := range []string{"pastry", "circular"} {
		r := overlayRun(t, name, 300)
		h := r.Series["hops"]
		if len(h) == 0 {
			t.Fatalf("%s: no series \"hops\" in %v", name, r.Series)
		}
		var n, sum float64
		for hops, c := range h {
			n += c
			sum += float64(hops) * c
		}
		if delivered := float64(r.Outputs["delivered"]); n != delivered || n == 0 {
			t.Errorf("%s: the histogram counts %v lookups, %v delivered", name, n, delivered)
		}
		if mean := sum / n; math.Abs(mean-r.Metrics["hops_mean"]) > 1e-9 {
			t.Errorf("%s: the histogram's mean %v, hops_mean %v", name, mean, r.Metrics["hops_mean"])
		}
		if h[len(h)-1] == 0 || float64(len(h)-1) < r.Metrics["hops_p99"] {
			t.Errorf("%s: histogram %v ends before its longest route (p99 %v)", name, h, r.Metrics["hops_p99"])
		}
	}
}

func TestHopHistogram(t *testing.T) {
	got := HopHistogram([]int{2, 0, 2, 3})
	want := []float64{1, 0, 2, 1}
	if len(got) != len(want) {
		t.Fatalf("HopHistogram: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("HopHistogram: %v, want %v", got, want)
		}
	}
}
