package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTheoryPool(t *testing.T) {
	code, out, errs := cli(t, "theory", "pool", "--c1", "10", "--c2", "4", "--hist", "5,20,30,20,10,5,4,3,2,1", "--simulate", "20000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		NStar     int     `json:"n_star"`
		Xi        float64 `json:"xi"`
		Simulated []struct {
			N              int
			Benefit, Model float64
		} `json:"simulated"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// P(r ≤ 2) = 0.55 < 1 − ξ = 0.6 ≤ P(r ≤ 3) = 0.75.
	if r.NStar != 3 || len(r.Simulated) != 3 {
		t.Fatalf("n* = %d, simulated %v; want 3 and three sizes", r.NStar, r.Simulated)
	}
	for _, s := range r.Simulated {
		if s.N != r.NStar && s.Benefit >= r.Simulated[1].Benefit {
			t.Errorf("simulated n=%d (%v) as good as n*=3 (%v)", s.N, s.Benefit, r.Simulated[1].Benefit)
		}
	}
	code, out, _ = cli(t, "theory", "pool", "--c1", "10", "--c2", "1", "--uniform", "100")
	if code != 0 || !strings.Contains(out, "n* = N(1−ξ) = 90") {
		t.Fatalf("uniform: exit %d\n%s", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--c1", "0", "--uniform", "5"}, "--c1 0"},
		{[]string{"--c1", "1", "--c2", "-1", "--uniform", "5"}, "--c2 -1"},
		{[]string{"--c1", "1", "--c2", "NaN", "--uniform", "5"}, "--c2 NaN"},
		{[]string{"--c1", "1"}, "exactly one of"},
		{[]string{"--c1", "1", "--uniform", "5", "--hist", "1"}, "exactly one of"},
		{[]string{"--c1", "1", "--uniform", "-5"}, "--uniform -5"},
		{[]string{"--c1", "1", "--uniform", "1e300"}, "--uniform 1e+300"},
		{[]string{"--c1", "1", "--uniform", "5", "--simulate", "10"}, "--simulate needs --hist"},
		{[]string{"--c1", "1", "--hist", "1,-2"}, `weight 2 (r=1) is "-2"`},
		{[]string{"--c1", "1", "--hist", "0,0"}, "no positive weight"},
		{[]string{"--c1", "1", "--hist", strings.Repeat("1,", 1<<16) + "1"}, "more than 65536"},
		{[]string{"--c1", "1", "--hist", "1", "--simulate", "2000000000"}, "--simulate 2000000000"},
	} {
		code, _, errs := cli(t, append([]string{"theory", "pool"}, bad.args...)...)
		if code != 2 || !strings.Contains(errs, bad.want) {
			t.Errorf("theory pool %s: exit %d, %q; want exit 2 and %q", strings.Join(bad.args, " "), code, errs, bad.want)
		}
	}
}
