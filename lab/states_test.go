package lab

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAlgorithmsDescribeTheirState: with States, each of these
// algorithms records its own state (proc.Describer) after its steps, as
// a JSON object naming the fields its pseudocode does; without, none, and
// the run is otherwise the same.
func TestAlgorithmsDescribeTheirState(t *testing.T) {
	for _, tc := range []struct{ family, algo, field string }{
		{"mutex", "ricart-agrawala", "deferred"},
		{"mutex", "lamport", "queue"},
		{"mutex", "maekawa", "voted_for"},
		{"mutex", "central", "state"},
		{"multicast", "total-sequencer", "next_to_deliver"},
		{"multicast", "total-isis", "collecting"},
		{"election", "bully", "coordinator"},
		{"election", "ring", "participant"},
		{"deadlock", "cmh", "computations"},
		{"deadlock", "cmh-or", "kept"},
	} {
		f, err := Lookup(tc.family)
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.Algorithm(tc.algo)
		if err != nil {
			t.Fatal(err)
		}
		run := func(states bool) ([]json.RawMessage, *Report) {
			o := f.Options(a)
			seed := uint64(2)
			o.Seed, o.States = &seed, states
			r, tr, err := Sim(o)
			if err != nil {
				t.Fatalf("%s: %v", tc.algo, err)
			}
			var out []json.RawMessage
			for _, e := range tr.Events {
				if e.State != nil {
					out = append(out, e.State)
				}
			}
			return out, r
		}
		with, rw := run(true)
		without, ro := run(false)
		if len(without) != 0 {
			t.Errorf("%s: %d states recorded without States", tc.algo, len(without))
		}
		if len(with) == 0 {
			t.Errorf("%s: no state recorded with States", tc.algo)
			continue
		}
		if rw.Events != ro.Events || rw.TraceSHA == ro.TraceSHA {
			t.Errorf("%s: with states %d events (hash %s), without %d (%s)", tc.algo, rw.Events, rw.TraceSHA, ro.Events, ro.TraceSHA)
		}
		if !bytes.Contains(with[len(with)-1], []byte(`"`+tc.field+`":`)) {
			t.Errorf("%s: the last state %s has no field %q", tc.algo, with[len(with)-1], tc.field)
		}
	}
}
