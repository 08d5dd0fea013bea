package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/trace"
)

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// binCLI is cli through the built binary (cohortBinary), as a reader runs
// it: for the long, single-threaded simulations (comparisons, runs of
// hundreds of nodes), which take minutes under the race detector and gain
// nothing from it — their code paths keep race coverage from the short
// in-process runs of cli.
func binCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(cohortBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("cohort %s: %v", strings.Join(args, " "), err)
		}
		code = exit.ExitCode()
	}
	return code, out.String(), errb.String()
}

func TestSimJSONFollowsTheContract(t *testing.T) {
	code, out, errs := cli(t, "sim", "clocks", "--algo", "lamport-figure", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"family", "algo", "nodes", "seed", "events", "virtual_ns", "messages", "metrics", "theory", "checks", "trace_sha256"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	msgs := r["messages"].(map[string]any)
	if msgs["total"].(float64) != 4 || msgs["by_type"].(map[string]any)["msg"].(float64) != 4 {
		t.Errorf("messages %v, want 4 of type msg", msgs)
	}
	for _, c := range r["checks"].([]any) {
		c := c.(map[string]any)
		if c["ok"] != true {
			t.Errorf("check %v failed", c)
		}
	}
}

func TestSimWholeFamilyTable(t *testing.T) {
	code, out, _ := cli(t, "sim", "clocks")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"lamport-figure", "vector-b", "violated (not guaranteed)", "m3: sent at C=60 by p2, received at C=56 by p1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadInputExitsTwoNamingTheValue(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("nodes: 3\nnetwork:\n  loss: 2\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "nope"}, `unknown family "nope"`},
		{[]string{"sim", "clocks", "--algo", "lamprot"}, `unknown clocks algorithm "lamprot"`},
		{[]string{"sim", "clocks", "--algo", "lamport", "--latency", "fast"}, `bad duration "fast"`},
		{[]string{"sim", "clocks", "--algo", "lamport", "--loss", "1.5"}, "--loss 1.5"},
		{[]string{"sim", "clocks", "--algo", "lamport-figure", "--nodes", "4"}, "exactly 3 processes, not 4"},
		{[]string{"sim", "clocks", "--algo", "lamport", "--nodes", "0"}, "--nodes 0"},
		{[]string{"sim", "clocks", "--algo", "lamport", "--vc", "maybe"}, `--vc "maybe"`},
		{[]string{"sim", "clocks", "--scenario", bad}, "bad.yaml:3"},
		{[]string{"sim", "clocks", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"trace", "check", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"bench", "sim", "--workload", "zoom"}, `--workload "zoom"`},
		{[]string{"bench", "sim", "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.prof")}, "cpu.prof"},
	}
	for _, c := range cases {
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestTraceRoundTripRenderAndCheck(t *testing.T) {
	dir := t.TempDir()
	jl, svg, sv := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "t.svg"), filepath.Join(dir, "t.log")
	code, _, errs := cli(t, "sim", "clocks", "--algo", "vector-a", "--trace", jl, "--svg", svg, "--shiviz", sv)
	if code != 0 {
		t.Fatalf("sim exit %d: %s", code, errs)
	}
	for _, f := range []string{jl, svg, sv} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
	if code, out, _ := cli(t, "trace", "check", jl); code != 0 || !strings.Contains(out, "clock-condition") {
		t.Fatalf("trace check of a good trace: exit %d\n%s", code, out)
	}
	if code, _, errs := cli(t, "trace", "render", jl, "--svg", svg); code != 0 {
		t.Fatalf("render exit %d: %s", code, errs)
	}

	// Break the clock condition: a receive stamped before its send.
	f, _ := os.Open(jl)
	tr, err := trace.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.Recv {
			tr.Events[i].Lamport = 0
			break
		}
	}
	broken := filepath.Join(dir, "broken.jsonl")
	var buf bytes.Buffer
	if err := trace.Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(broken, buf.Bytes(), 0o644)
	code, out, _ := cli(t, "trace", "check", broken)
	if code != 1 || !strings.Contains(out, "violated") || !strings.Contains(out, "recv") {
		t.Fatalf("trace check of a broken trace: exit %d, want 1 with a counterexample\n%s", code, out)
	}
}

func TestListAndVersion(t *testing.T) {
	code, out, _ := cli(t, "list")
	if code != 0 || !strings.Contains(out, "lamport-figure") || !strings.Contains(out, "failures=crash-stop") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "list", "--json")
	var l struct{ Algorithms []map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Algorithms) < 6 {
		t.Errorf("list --json: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "list", "--checkers")
	if code != 0 || !strings.Contains(out, "clock-condition") {
		t.Errorf("list --checkers: exit %d\n%s", code, out)
	}
	if code, out, _ = cli(t, "version"); code != 0 || !strings.HasPrefix(out, "cohort ") {
		t.Errorf("version: exit %d %q", code, out)
	}
}

func TestBenchSimSmall(t *testing.T) {
	code, out, errs := cli(t, "bench", "sim", "--nodes", "1000", "--messages", "5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodes", "deliveries", "wall_s", "deliveries_per_s", "peak_rss_bytes"} {
		if _, ok := r[k]; !ok {
			t.Errorf("bench JSON lacks %q: %s", k, out)
		}
	}
	if r["deliveries"].(float64) != 5000 {
		t.Errorf("deliveries %v, want 5000", r["deliveries"])
	}
}

// --cpuprofile writes a profile `go tool pprof` reads: gzipped protocol
// buffers, here checked as far as the gzip stream.
func TestBenchCPUProfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cpu.prof")
	code, _, errs := cli(t, "bench", "sim", "--nodes", "1000", "--messages", "5", "--json", "--cpuprofile", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the profile (%d bytes) is not gzipped: %v", len(b), err)
	}
	if n, err := io.Copy(io.Discard, z); err != nil || n == 0 {
		t.Fatalf("the profile's stream: %d bytes, %v", n, err)
	}
}

func TestCompareMutexJSON(t *testing.T) {
	code, out, errs := cli(t, "compare", "mutex", "--nodes", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Rows []struct {
			Algo     string
			Nodes    int
			Case     string
			Metric   string
			Measured *float64
			Theory   *float64
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range r.Rows {
		if row.Algo == "ricart-agrawala" && row.Case == "uncontended" && row.Metric == "messages_per_entry" {
			found = true
			if row.Measured == nil || row.Theory == nil || *row.Measured != 6 || *row.Theory != 6 {
				t.Errorf("ricart-agrawala with 4 nodes: %+v, want 6 messages per entry measured and in theory", row)
			}
		}
	}
	if !found {
		t.Errorf("no ricart-agrawala row in %s", out)
	}
	if code, _, errs := cli(t, "compare", "mutex", "--nodes", "4,x"); code != 2 || !strings.Contains(errs, `"x"`) {
		t.Errorf("bad --nodes: exit %d, %q", code, errs)
	}
	if code, _, errs := cli(t, "compare", "clocks"); code != 2 || !strings.Contains(errs, "no comparison") {
		t.Errorf("compare clocks: exit %d, %q", code, errs)
	}
}

func TestTheoryDecentralized(t *testing.T) {
	code, out, errs := cli(t, "theory", "mutex-decentralized", "--coordinators", "5", "--quorum", "4", "--p", "0.3", "--simulate", "400", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]float64
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// The exact condition (2m−N = 3 of the holder's 4 voters reset) gives
	// 0.0837; the textbook's formula (from m−N/2) gives far more.
	if e := r["exact"]; e < 0.083 || e > 0.084 {
		t.Errorf("exact = %v, want 0.0837", e)
	}
	if r["textbook_formula"] < 0.3 || r["runs"] != 400 {
		t.Errorf("textbook_formula = %v, runs = %v", r["textbook_formula"], r["runs"])
	}
	if mc := r["monte_carlo"]; mc < 0.04 || mc > 0.14 {
		t.Errorf("monte_carlo = %v, want near the exact 0.084", mc)
	}
	if code, _, errs := cli(t, "theory", "mutex-decentralized", "--coordinators", "8", "--quorum", "3"); code != 2 || !strings.Contains(errs, "--quorum 3") {
		t.Errorf("minority quorum: exit %d, %q", code, errs)
	}
}

func TestSimMutexWithScenario(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	os.WriteFile(sc, []byte("nodes: 4\nnetwork:\n  latency: 1ms\ninputs:\n  - at 1ms node 1 acquire\n  - at 1ms node 2 acquire\n  - at 2ms node 3 tell 0\n"), 0o644)
	code, out, errs := cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--scenario", sc, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Metrics  map[string]float64
		Messages struct {
			ByType map[string]int64 `json:"by_type"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Metrics["entries"] != 2 || r.Messages.ByType["app"] != 1 || r.Messages.ByType["request"] != 6 {
		t.Errorf("metrics %v, messages %v: want 2 entries, 1 app message, 6 requests", r.Metrics, r.Messages.ByType)
	}
}

func TestNodeConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"id: 0\nlisten: x:1\napi: x:2\n":                                                          "peers",
		"id: 5\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\n":               "id: 5 is not one of the peers' ids",
		"id: 0\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\n":                            "listen: missing",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: short\n":                          "too short",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\n":                                         "give exactly one of secret",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nbogus: 1\n":     `node.yaml:6: unknown field "bogus" (want one of id, listen, api, peers,`,
		"id: 0\nlisten: x:1\napi: x:2\npeerz: {0: a:1}\nsecret: 0123456789abcdef\n":               `node.yaml:4: unknown field "peerz" (did you mean "peers"?)`,
		"id: 0\nlisten: x:1\npeers: {0: a:1}\nsecret: 0123456789abcdef\nelection: {timout: 1s}\n": `node.yaml:5: unknown field "timout" (did you mean "timeout"?)`,
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1, 2: b:1}\nsecret: 0123456789abcdef\n":       "1 is missing",
		// An API other machines can reach needs a token.
		"id: 0\nlisten: x:1\napi: 0.0.0.0:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\n":                      "api: 0.0.0.0:7100 is reachable from other machines: set api_token",
		"id: 0\nlisten: x:1\napi: :7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\n":                             "api: :7100 is reachable",
		"id: 0\nlisten: x:1\napi: 10.1.2.3:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\n":                     "api: 10.1.2.3:7100 is reachable",
		"id: 0\nlisten: x:1\napi: 127.0.0.1:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\napi_max_conns: -1\n": "api_max_conns: -1",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nrelays: [{source: a/b, to: [x:1], queue: q}]\n":                                `relays: 0: source: bad queue name`,
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nrelays: [{source: a, queue: q}]\n":                                             "relays: 0: to: none given",
		"id: 0\nlisten: x:1\napi: 127.0.0.1:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\nlock_max_ttl: 1h\n":  "lock_max_ttl: 1h0m0s: want 100ms to 10m0s",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlink_idle: -1s\n":                                                              "link_idle: -1s: want at least 10ms",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlink_idle: 1ms\n":                                                              "link_idle: 1ms: want at least 10ms",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlink_idle: 1s\nmax_links: -3\n":                                                "max_links: -3: want a positive number",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nmax_links: 6\n":                                                                "max_links: 6 needs link_idle",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nmax_links: many\n":                                                             "max_links: cannot unmarshal !!str `many`",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nprobes: carrier-pigeon\n":                                                      `probes: "carrier-pigeon": want tcp`,
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\ntls_dir: certs\nprobes: udp\n":                                                                           "probes: udp needs the cluster's secret",
		"id: 0\nlisten: x:1\napi: x:2\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock_idle: soon\n":                                                             "line 6: lock_idle: cannot unmarshal !!str `soon` into time.Duration (want a duration such as",
	}
	for text, want := range cases {
		p := filepath.Join(dir, "node.yaml")
		os.WriteFile(p, []byte(text), 0o644)
		code, _, errs := cli(t, "node", "--config", p)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", text, code, errs, want)
		}
	}
	p := filepath.Join(dir, "node.yaml")
	os.WriteFile(p, []byte("id: 0\nlisten: x:1\napi: x:2\napi_token: t0123\npeers: {0: a:1}\nsecret: 0123456789abcdef\ndata_dir: "+filepath.Join(dir, "d")+"\ntrace: t.jsonl\n"), 0o644)
	c, err := loadNodeConfig(p, "")
	if err != nil || c.Trace != filepath.Join(dir, "d", "t.jsonl") {
		t.Errorf("data_dir: %v, trace %q", err, c.Trace)
	}
	os.WriteFile(p, []byte("id: 0\nlisten: x:1\napi: 127.0.0.1:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\nlink_idle: 2s\nmax_links: 6\n"), 0o644)
	if c, err := loadNodeConfig(p, ""); err != nil || c.LinkIdle != 2*time.Second || c.MaxLinks != 6 {
		t.Errorf("link_idle: 2s, max_links: 6: %v, got %v and %d", err, c.LinkIdle, c.MaxLinks)
	}
	os.WriteFile(p, []byte("id: 0\nlisten: x:1\napi: 127.0.0.1:7100\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\nprobes: udp\n"), 0o644)
	if c, err := loadNodeConfig(p, ""); err != nil || c.Probes != "udp" {
		t.Errorf("probes: udp: %v, got %q", err, c.Probes)
	}
	for _, api := range []string{"127.0.0.1:7100", "localhost:7100", `"[::1]:7100"`} {
		os.WriteFile(p, []byte("id: 0\nlisten: x:1\napi: "+api+"\npeers: {0: a:1}\nsecret: 0123456789abcdef\nlock: ricart-agrawala\ngroup: total-sequencer\n"), 0o644)
		if _, err := loadNodeConfig(p, ""); err != nil {
			t.Errorf("api %s, no token: %v", api, err)
		}
	}
}

// TestHugeBadValueIsNotEchoedWhole: a 10 MB bad value gets exit 2 and an
// error of bounded size that still says what was wrong.
func TestHugeBadValueIsNotEchoedWhole(t *testing.T) {
	code, _, errs := cli(t, "sim", "mutex", "--algo", strings.Repeat("x", 10<<20))
	if code != 2 || len(errs) > 2*httpapi.MaxEcho || !strings.Contains(errs, "bytes cut") {
		t.Fatalf("exit %d, %d bytes of error: %.300q", code, len(errs), errs)
	}
}

// TestRunsThatCannotFitAreRefused: sizes that would exhaust memory or run
// for days are refused at once with exit 2, naming the value.
func TestRunsThatCannotFitAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "sim", "--nodes", "2000000000"},
		{"theory", "mutex-decentralized", "--simulate", "2000000000"},
		{"sim", "mutex", "--nodes", "2000000000"}, // the whole family: it fits none
		{"sim", "mutex", "--algo", "ricart-agrawala", "--nodes", "2000000000"},
	} {
		code, _, errs := cli(t, args...)
		if code != 2 || !strings.Contains(errs, "2000000000") {
			t.Errorf("%v: exit %d, %q; want 2 naming the value", args, code, errs)
		}
	}
	p := filepath.Join(t.TempDir(), "big.jsonl")
	os.WriteFile(p, []byte(`{"format":"cohort-trace/1","nodes":2147483647,"family":"clocks","algo":"lamport","seed":1}`+"\n"), 0o644)
	if code, _, errs := cli(t, "trace", "check", p); code != 2 || !strings.Contains(errs, "nodes = 2147483647") {
		t.Errorf("a trace claiming 2^31 processes: exit %d, %q; want 2 naming the value", code, errs)
	}
}
