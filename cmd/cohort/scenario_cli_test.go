package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A scenario names its family: running it under another is bad usage,
// not a confusing failure; its algo: picks the algorithm unless --algo
// overrides it.
func TestScenarioFamilyAndAlgo(t *testing.T) {
	code, _, errs := cli(t, "sim", "clocks", "--scenario", "../../scenario/testdata/partition-heal.yaml")
	if code != 2 || !strings.Contains(errs, "written for the mutex family (family: mutex), not clocks") {
		t.Errorf("mutex scenario under clocks: exit %d, %q", code, errs)
	}
	code, out, errs := cli(t, "sim", "election", "--scenario", "../../scenario/testdata/churn.yaml", "--json")
	var r struct {
		Algo  string `json:"algo"`
		Nodes int    `json:"nodes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Algo != "bully-fd" || r.Nodes != 12 {
		t.Errorf("churn scenario: exit %d, %+v, %s", code, r, errs)
	}
	code, out, _ = cli(t, "sim", "election", "--algo", "bully", "--scenario", "../../scenario/testdata/churn.yaml", "--json")
	if json.Unmarshal([]byte(out), &r) != nil || r.Algo != "bully" {
		t.Errorf("--algo bully over the scenario's bully-fd: exit %d, %+v", code, r)
	}
}

// --nodes on a whole-family run applies where it fits; the runs it does
// not fit keep their own size and say why. Nothing panics.
func TestNodesOnWholeFamilyRuns(t *testing.T) {
	for _, c := range []struct {
		family string
		nodes  string
		notes  []string
	}{
		{"multicast", "2", []string{"--nodes 2 does not fit reliable", "names process 2, which 2 nodes leave out"}},
		{"election", "2", []string{"--nodes 2 does not fit bully-fd"}},
		{"clocks", "4", []string{"--nodes 4 does not fit lamport-figure (lamport-figure with 4 nodes: this demonstration has exactly 3 processes, not 4)"}},
	} {
		code, out, errs := cli(t, "sim", c.family, "--nodes", c.nodes)
		if code != 0 {
			t.Errorf("sim %s --nodes %s: exit %d\n%s", c.family, c.nodes, code, errs)
		}
		for _, n := range c.notes {
			if !strings.Contains(errs, n) {
				t.Errorf("sim %s --nodes %s: stderr lacks %q:\n%s", c.family, c.nodes, n, errs)
			}
		}
		// The table shows the requested size where it fits.
		if !strings.Contains(out, "  "+c.nodes+"  ") {
			t.Errorf("sim %s --nodes %s: no run with %s nodes:\n%s", c.family, c.nodes, c.nodes, out)
		}
	}
	// One algorithm: a size that does not fit is an error, exit 2.
	if code, _, errs := cli(t, "sim", "clocks", "--algo", "lamport-figure", "--nodes", "4"); code != 2 || !strings.Contains(errs, "exactly 3 processes") {
		t.Errorf("lamport-figure --nodes 4: exit %d %q", code, errs)
	}
}

// A run outside the algorithm's assumptions says so before the verdict,
// and its violations do not fail the run.
func TestOutsideAssumptionsIsSaidPlainly(t *testing.T) {
	code, out, _ := cli(t, "sim", "mutex", "--algo", "lamport", "--scenario", "../../scenario/testdata/partition-heal.yaml")
	if code != 0 {
		t.Errorf("exit %d, want 0: the violation is outside the assumptions\n%s", code, out)
	}
	outside := strings.Index(out, "so this run is outside lamport's assumptions")
	check := strings.Index(out, "CHECK")
	if outside < 0 || check < outside || !strings.Contains(out, "it assumes no process fails; this run crashes processes") ||
		!strings.Contains(out, "ME2            violated (outside assumptions)") {
		t.Errorf("no plain warning before the verdict:\n%s", out)
	}
	code, out, _ = cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--loss", "0.3", "--json")
	var r struct {
		Outside []string `json:"outside_assumptions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Outside) != 1 || !strings.Contains(r.Outside[0], "loses messages (loss 0.3)") {
		t.Errorf("--loss 0.3: exit %d, outside %q", code, r.Outside)
	}
	// Inside its assumptions, a run has no such note and a violation fails.
	code, out, _ = cli(t, "sim", "mutex", "--algo", "ricart-agrawala", "--json")
	if code != 0 || strings.Contains(out, "outside_assumptions") {
		t.Errorf("default run: exit %d\n%s", code, out)
	}
}
