package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func positionJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := cli(t, append([]string{"sim", "position", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: not one JSON object: %v\n%s", args, err, out)
	}
	return r
}

func TestSimPositionGPS(t *testing.T) {
	r := positionJSON(t, "--algo", "gps")
	for _, k := range []string{"family", "algo", "nodes", "seed", "position_error_m", "clock_error_ns", "receiver_bias_ns", "estimated_bias_ns", "gdop", "pdop", "sweep"} {
		if _, ok := r[k]; !ok {
			t.Errorf("gps JSON lacks %q", k)
		}
	}
	if e := r["position_error_m"].(float64); e > 1e-3 {
		t.Errorf("noise-free fix off by %v m", e)
	}
	// The receiver's clock is 1 ms off: trusting it costs hundreds of
	// kilometres; solving for it, nothing.
	if e := r["position_error_ignoring_bias_m"].(float64); e < 1e5 {
		t.Errorf("clock trusted: off by %v m, want about c·1ms", e)
	}
	sweep := r["sweep"].([]any)
	if len(sweep) != 4 {
		t.Fatalf("sweep has %d rows, want 4", len(sweep))
	}
	for _, row := range sweep {
		row := row.(map[string]any)
		// About c·PDOP: 0.3 m per ns times a PDOP of 2 to 3.
		if k := row["m_per_ns"].(float64); k < 0.5 || k > 1.2 {
			t.Errorf("sweep row %v: %v m of error per ns of clock error", row, k)
		}
	}

	noisy := positionJSON(t, "--algo", "gps", "--clock-error", "100ns")
	if e := noisy["position_error_m"].(float64); e < 1 || e > 300 {
		t.Errorf("σ = 100 ns (30 m of range): fix off by %v m", e)
	}
	if noisy["clock_error_ns"].(float64) != 100 {
		t.Errorf("clock_error_ns = %v", noisy["clock_error_ns"])
	}

	code, out, _ := cli(t, "sim", "position", "--algo", "gps", "--nodes", "4")
	for _, want := range []string{"position/gps   4 satellites   seed 1", "clock bias 1ms found", "CLOCK ERROR σ", "1µs"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("gps report lacks %q (exit %d):\n%s", want, code, out)
		}
	}
}

func TestSimPositionCoordinates(t *testing.T) {
	for _, algo := range []string{"gnp", "vivaldi"} {
		r := positionJSON(t, "--algo", algo, "--nodes", "300", "--seed", "3")
		if r["nodes"].(float64) != 300 || r["pairs"].(float64) != 300*299/2 {
			t.Errorf("%s: %v nodes, %v pairs", algo, r["nodes"], r["pairs"])
		}
		if m := r["median_rel_error"].(float64); m > 0.1 {
			t.Errorf("%s: median relative error %v on 300 nodes", algo, m)
		}
		if p := r["p90_rel_error"].(float64); p < r["median_rel_error"].(float64) || p > 0.4 {
			t.Errorf("%s: p90 %v", algo, p)
		}
	}
	code, out, _ := cli(t, "sim", "position", "--algo", "vivaldi", "--nodes", "200")
	if code != 0 || !strings.Contains(out, "by round     1: ") || !strings.Contains(out, "over 19900 pairs") {
		t.Errorf("vivaldi report: exit %d\n%s", code, out)
	}
}

func TestSimPositionFamilyTable(t *testing.T) {
	code, out, errs := cli(t, "sim", "position", "--nodes", "60", "--seed", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ALGORITHM", "MEDIAN-REL-ERROR", "gps ", "gnp ", "vivaldi "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := cli(t, "list"); code != 0 || !strings.Contains(out, "vivaldi") {
		t.Errorf("list does not mention the position family:\n%s", out)
	}
}

func TestSimPositionIsDeterministic(t *testing.T) {
	for _, algo := range []string{"gps", "gnp", "vivaldi"} {
		args := []string{"sim", "position", "--json", "--algo", algo, "--nodes", "40", "--seed"}
		t.Run(algo, func(t *testing.T) {
			_, a, _ := cli(t, append(args, "4")...)
			_, b, _ := cli(t, append(args, "4")...)
			_, c, _ := cli(t, append(args, "5")...)
			if a != b || a == c {
				t.Errorf("seed 4 twice gave the same report: %v; seed 5 a different one: %v", a == b, a != c)
			}
		})
	}
}

func TestSimPositionBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "position", "--algo", "gpz"}, `unknown position algorithm "gpz"`},
		{[]string{"sim", "position", "--algo", "gps", "--clock-error", "-1ns"}, "--clock-error -1ns"},
		{[]string{"sim", "position", "--algo", "gnp", "--clock-error", "1ns"}, "--clock-error applies to --algo gps only"},
		{[]string{"sim", "clocks", "--clock-error", "1ns"}, "--clock-error applies to cohort sim position only"},
		{[]string{"sim", "position", "--latency", "1ms", "--fifo"}, "--fifo, --latency: not for position runs"},
		{[]string{"sim", "position", "--algo", "gps", "--nodes", "3"}, "3, need at least 4"},
		{[]string{"sim", "position", "--algo", "gnp", "--nodes", "10"}, "15 landmarks among 10 nodes"},
		{[]string{"sim", "position", "--algo", "vivaldi", "--nodes", "0"}, "--nodes 0"},
		{[]string{"sim", "position", "--algo", "vivaldi", "--nodes", "6000"}, "--nodes 6000"},
		{[]string{"sim", "position", "--algo", "vivaldi", "--nodes", "1"}, "nodes 1"},
	}
	for _, c := range cases {
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
