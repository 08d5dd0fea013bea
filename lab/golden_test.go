package lab

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/cohort-go/cohort/scenario"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden traces in testdata/golden")

// The demonstrations' traces are kept as golden files: any change to what
// the simulator records, or to the order in which it does things, shows up
// as a diff to review. Regenerate with: go test ./lab -run Golden -rewrite
func TestGoldenTraces(t *testing.T) {
	f, _ := Lookup("clocks")
	for _, a := range f.Algorithms {
		if a.Validate == nil { // the fixed-size figures only: small, stable files
			continue
		}
		var buf bytes.Buffer
		if _, _, err := Sim(Options{Algo: a, Trace: &buf}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", "clocks-"+a.Name+".jsonl")
		if *rewrite {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -rewrite to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s: the trace differs from %s; review the change, then rerun with -rewrite", a.Name, path)
		}
	}
}

// A seeded scenario with faults of every kind replays to the byte: two runs
// give the same trace hash, and a different seed gives another.
func TestScenarioReplaysExactly(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("testdata", "clocks-chaos.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := Lookup(sc.Family)
	a, err := f.Algorithm(sc.Algo)
	if err != nil {
		t.Fatal(err)
	}
	hash := func(seed *uint64) (string, *Report) {
		var buf bytes.Buffer
		o := f.Options(a)
		o.Scenario, o.Seed, o.Trace = sc, seed, &buf
		r, _, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		return r.TraceSHA, r
	}
	h1, r := hash(nil)
	h2, _ := hash(nil)
	if h1 != h2 {
		t.Fatalf("same scenario, different traces: %s vs %s", h1, h2)
	}
	if r.Failed() || r.Messages.Dropped == 0 || r.Messages.Duplicated == 0 {
		t.Errorf("the scenario should hold its checks and exercise drops and duplicates: %+v", r)
	}
	other := uint64(43)
	if h3, _ := hash(&other); h3 == h1 {
		t.Error("a different seed replayed the same trace")
	}
}
