package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/lab"
)

func TestSimGossipFlags(t *testing.T) {
	run := func(args ...string) map[string]any { t.Helper(); return simJSON(t, "gossip", args...) }
	metric := metricOf
	// A larger fanout reaches every node in fewer rounds.
	one := run("--algo", "push", "--nodes", "500")
	four := run("--algo", "push", "--nodes", "500", "--fanout", "4")
	if !(metric(four, "rounds_to_all") < metric(one, "rounds_to_all")) {
		t.Errorf("rounds to all: fanout 4 %v, fanout 1 %v", metric(four, "rounds_to_all"), metric(one, "rounds_to_all"))
	}
	if s, ok := one["series"].(map[string]any)["susceptible"].([]any); !ok || len(s) < 5 {
		t.Errorf("no susceptible series: %v", one["series"])
	}
	// A larger k leaves a smaller residue; backup anti-entropy none.
	k1 := run("--algo", "rumor", "--nodes", "2000", "--k", "1")
	k4 := run("--algo", "rumor", "--nodes", "2000", "--k", "4")
	if !(metric(k4, "residue") < metric(k1, "residue")) {
		t.Errorf("residue: k=4 %v, k=1 %v", metric(k4, "residue"), metric(k1, "residue"))
	}
	if b := run("--algo", "rumor", "--nodes", "200", "--variant", "backup,counter"); metric(b, "residue") != 0 {
		t.Errorf("rumor with backup: residue %v", metric(b, "residue"))
	}
	if c := run("--algo", "push-sum", "--nodes", "50", "--variant", "count"); metric(c, "max_error") > 1e-3 {
		t.Errorf("push-sum count: error %v", metric(c, "max_error"))
	}
	// All the mass on one node: no estimate is near the average before
	// every node has a share, so each error takes more rounds than with
	// the values 1 .. n.
	uniform := run("--algo", "push-sum", "--nodes", "300")
	single := run("--algo", "push-sum", "--nodes", "300", "--input", "one")
	for _, m := range []string{"rounds_to_1e-2", "rounds_to_1e-4", "rounds_to_1e-6"} {
		if !(metric(single, m) > metric(uniform, m) && metric(uniform, m) > 0) {
			t.Errorf("%s: --input one %v, uniform %v", m, metric(single, m), metric(uniform, m))
		}
	}
	if s, ok := single["series"].(map[string]any)["mean_error"].([]any); !ok || len(s) < int(metric(single, "rounds_to_1e-6")) {
		t.Errorf("--input one: mean_error series %v", single["series"])
	}
	for _, bad := range []struct {
		args []string
		says string // the message names the bad value
	}{
		{[]string{"sim", "mutex", "--fanout", "2"}, "--fanout"},
		{[]string{"sim", "gossip", "--variant", "loud"}, `"loud"`},
		{[]string{"sim", "gossip", "--k", "0"}, "--k 0"},
		{[]string{"sim", "gossip", "--algo", "push-sum", "--input", "two"}, `--input "two"`},
		{[]string{"sim", "gossip", "--algo", "push", "--input", "one"}, "--input is a flag of the push-sum algorithm"},
		{[]string{"sim", "mutex", "--input", "one"}, "--input"},
	} {
		if code, _, errs := cli(t, bad.args...); code != 2 || !strings.Contains(errs, bad.says) {
			t.Errorf("%v: exit %d (%s), want 2 and a message with %s", bad.args, code, errs, bad.says)
		}
	}
	if code, out, _ := cli(t, "sim", "gossip", "--help"); code != 0 || !strings.Contains(out, "--fanout") || !strings.Contains(out, "push-sum") {
		t.Errorf("sim gossip --help: exit %d\n%s", code, out)
	}
	if _, out, _ := cli(t, "sim", "mutex", "--help"); strings.Contains(out, "--fanout") {
		t.Errorf("sim mutex --help shows --fanout")
	}
}

func TestCompareGossip(t *testing.T) {
	code, out, errs := binCLI(t, "compare", "gossip", "--nodes", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"rounds to all, one update", "residue, k=3 feedback counter", "Table 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare gossip lacks %q", want)
		}
	}
	if !strings.Contains(out, "first detection (periods), crashes and a pause") {
		t.Errorf("compare gossip lacks SWIM's case")
	}
	// Push-sum's rounds to each error, for both inputs, largest and mean.
	for _, c := range []string{"average of 1..n", "average, all mass on one node"} {
		for _, m := range []string{"largest error 10⁻²", "largest error 10⁻⁶", "mean error 10⁻⁴"} {
			if row := "rounds to " + m + ", " + c; !strings.Contains(out, row) {
				t.Errorf("compare gossip lacks %q", row)
			}
		}
	}
	if code, _, _ := cli(t, "compare", "mutex", "--nodes", "10000"); code != 2 {
		t.Errorf("compare mutex --nodes 10000: exit %d, want 2", code)
	}
}

// Past streamedTraceLimit nodes a gossip run keeps no trace and computes
// no hash unless told to, and says so; its metrics are there all the same,
// and --hash gives the hash of the trace it would have kept.
func TestSimGossipLargeRunsKeepNoTrace(t *testing.T) {
	defer func(old int) { streamedTraceLimit = old }(streamedTraceLimit)
	streamedTraceLimit = 100
	code, out, errs := cli(t, "sim", "gossip", "--algo", "push-pull", "--nodes", "200", "--json")
	var r struct {
		Checks  []any              `json:"checks"`
		Metrics map[string]float64 `json:"metrics"`
		SHA     string             `json:"trace_sha256"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Checks) != 0 || r.Metrics["rounds_to_all"] == 0 || r.SHA != "" || !strings.Contains(errs, "keeps no trace") {
		t.Errorf("exit %d, checks %v, metrics %v, hash %q, stderr %q", code, r.Checks, r.Metrics, r.SHA, errs)
	}
	code, out, _ = cli(t, "sim", "gossip", "--algo", "push-pull", "--nodes", "200", "--json", "--hash")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Checks) != 0 || r.SHA == "" {
		t.Errorf("--hash: exit %d, checks %v, hash %q", code, r.Checks, r.SHA)
	}
	hashed := r.SHA
	code, out, _ = cli(t, "sim", "gossip", "--algo", "push-pull", "--nodes", "200", "--json", "--no-check=false")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Checks) == 0 || r.SHA != hashed {
		t.Errorf("--no-check=false: exit %d, checks %v, hash %q, with --hash alone %q", code, r.Checks, r.SHA, hashed)
	}
}

// cohort sim gossip --algo swim runs the SWIM workload and reports its
// metrics; --variant nolifeguard is accepted.
func TestSimSwim(t *testing.T) {
	for _, args := range [][]string{{}, {"--variant", "nolifeguard"}, {"--variant", "nolhm,nobuddy"}} {
		code, out, errs := cli(t, append([]string{"sim", "gossip", "--algo", "swim", "--nodes", "100"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		for _, want := range []string{"first_detection_periods", "messages_per_member_per_period", "false_positives", "swim-completeness  ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
	}
}

// simJSON runs `cohort sim FAMILY --json ARGS...` through the built binary
// (binCLI), which must exit 0, and decodes its report.
func simJSON(t *testing.T, family string, args ...string) map[string]any {
	t.Helper()
	code, out, errs := binCLI(t, append([]string{"sim", family, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return r
}

// metricOf reads a metric of a report simJSON decoded (0 if absent).
func metricOf(r map[string]any, name string) float64 {
	v, _ := r["metrics"].(map[string]any)[name].(float64)
	return v
}

// A case skipped at some size says why, once, even where it is the
// algorithm's only case at that size (SWIM's at 10⁶).
func TestCompareSaysWhyARunWasSkipped(t *testing.T) {
	one := 1.0
	rows := []lab.CompareRow{{Algo: "push", Nodes: 10, Case: "one update", Metric: "rounds_to_all", Measured: &one}}
	runs := []lab.CompareRun{
		{Algo: "push", Nodes: 10, Case: "one update"},
		{Algo: "swim", Nodes: 10, Case: "a", Skip: "too large"},
		{Algo: "swim", Nodes: 10, Case: "b", Skip: "too large"},
	}
	var out strings.Builder
	printCompare(&out, rows, runs, []int{10})
	if got := strings.Count(out.String(), "skipped N=10: too large"); got != 1 || !strings.Contains(out.String(), "\nswim\n") {
		t.Errorf("the skip printed %d times:\n%s", got, out.String())
	}
}
