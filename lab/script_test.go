package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/scenario"
	"github.com/cohort-go/cohort/trace"
)

// TestScripts replays the scripts of testdata/scripts: the textbook's
// figures and the known counterexamples, one file each. A script is a
// scenario (the scenario file format, family: and algo: naming the
// algorithm), then a line "----", then what the run must do: every input,
// output, crash, recovery, join and leave, with its time and process, and
// every checker's verdict. Any change in behaviour shows as a diff; after
// reviewing it, regenerate with: go test ./lab -run Scripts -rewrite
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "scripts", "*.txt"))
	if len(files) < 5 {
		t.Fatalf("%d scripts in testdata/scripts", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			setting, want, _ := strings.Cut(string(src), "----\n")
			got, err := replay(file, setting)
			if err != nil {
				t.Fatal(err)
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(setting+"----\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: the run differs from the script\n--- got\n%s--- want\n%s(review, then rerun with -rewrite)", file, got, want)
			}
		})
	}
}

// replay runs a script's setting and renders what the run did.
func replay(file, setting string) (string, error) {
	sc, err := scenario.Parse(file, []byte(setting))
	if err != nil {
		return "", err
	}
	f, err := Lookup(sc.Family)
	if err != nil {
		return "", err
	}
	a, err := f.Algorithm(sc.Algo)
	if err != nil {
		return "", err
	}
	o := f.Options(a)
	o.Scenario = sc
	r, tr, err := Sim(o)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, e := range tr.Events {
		switch e.Kind {
		case trace.Input, trace.Output, trace.Crash, trace.Recover, trace.Join, trace.Leave:
			if e.Kind == trace.Output && (e.Type == "stamp" || e.Type == "waiting" || e.Type == "lent") {
				continue // bookkeeping: the algorithm's clock and whom it waits for
			}
			what := e.Kind.String()
			switch {
			case e.Label != "":
				what += " " + e.Label // the value's own rendering: "enter", "tell p2", "deliver p0#1"
			case e.Type != "":
				what += " " + e.Type
			}
			fmt.Fprintf(&b, "%s p%d %s\n", trace.FormatNS(e.Time), e.Node, what)
		}
	}
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "check %s: %s\n", c.Name, c.Status)
	}
	return b.String(), nil
}
