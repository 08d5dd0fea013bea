package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBankDemo(t *testing.T) {
	code, out, errs := cli(t, "sim", "multicast", "--demo", "bank")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"$1000.00 replicated on 2 nodes",
		"multicast/basic: the replicas disagree",
		"p0  $1111.00  deposit $100, then add 1% interest",
		"p1  $1110.00  add 1% interest, then deposit $100",
		"multicast/total-sequencer: the replicas agree",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBankDemoOtherOrderWritesDiagrams(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "bank.svg")
	code, out, errs := cli(t, "sim", "multicast", "--demo", "bank", "--order", "total-isis", "--nodes", "4", "--seed", "3", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "multicast/total-isis: the replicas agree") || strings.Count(out, "  p3  $") != 2 {
		t.Errorf("output:\n%s", out)
	}
	for _, algo := range []string{"basic", "total-isis"} {
		path := filepath.Join(dir, "bank-"+algo+".svg")
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(out, "wrote "+path) {
			t.Errorf("%s: %v (%d bytes)", path, err, len(b))
		}
	}
}

func TestBankDemoJSON(t *testing.T) {
	code, out, errs := cli(t, "sim", "multicast", "--demo", "bank", "--order", "total-lamport", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one JSON object per run, got:\n%s", out)
	}
	for i, want := range []struct {
		algo  string
		agree bool
	}{{"basic", false}, {"total-lamport", true}} {
		var r struct {
			Algo     string   `json:"algo"`
			Agree    bool     `json:"agree"`
			Balances []string `json:"balances"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatal(err)
		}
		if r.Algo != want.algo || r.Agree != want.agree || len(r.Balances) != 2 {
			t.Errorf("run %d: %+v, want %s agree=%v", i, r, want.algo, want.agree)
		}
	}
}

// --order is --algo by another name, for the multicast family only.
func TestOrderFlag(t *testing.T) {
	code, out, errs := cli(t, "sim", "multicast", "--order", "fifo", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Algo string `json:"algo"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Algo != "fifo" {
		t.Errorf("ran %q (%v), want fifo", r.Algo, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "clocks", "--order", "lamport"}, "--order is a flag of the multicast family, not of clocks"},
		{[]string{"sim", "multicast", "--order", "fifo", "--algo", "causal"}, "--order fifo and --algo causal"},
		{[]string{"sim", "multicast", "--order", "tidy"}, `unknown multicast algorithm "tidy"`},
		{[]string{"sim", "multicast", "--demo", "casino"}, `--demo "casino"`},
		{[]string{"sim", "multicast", "--demo", "bank", "--latency", "5ms"}, "drop --latency"},
		{[]string{"sim", "multicast", "--demo", "bank", "--nodes", "1"}, "at least 2 replicas, not 1"},
		{[]string{"sim", "multicast", "--demo", "bank", "--order", "tidy"}, `"tidy"`},
		{[]string{"sim", "multicast", "--algo", "basic", "--fault", "crash 9 at 1ms"}, "node 9"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestCompareMulticast(t *testing.T) {
	code, out, errs := cli(t, "compare", "multicast", "--nodes", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"total-lamport", "messages per multicast, sparse", "12 (12)", "latency (msgs), sparse", "largest hold-back queue, concurrent"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
