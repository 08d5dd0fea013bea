package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Regressions found by fuzzing the decoder.
func TestReadRegressions(t *testing.T) {
	bad := map[string]string{
		" \n":                                    "empty input",
		"\n\n  \n":                               "empty input",
		`{"format":"cohort-trace/1","nodes":2}}`: "trailing data",
		`{"format":"cohort-trace/1","nodes":4294967297}`: "nodes = 4294967297",
		"{\"format\":\"cohort-trace/1\",\"nodes\":2}\n" +
			`{"i":0,"t":0,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1}]`: "line 2: trailing data",
	}
	for in, want := range bad {
		_, err := Read(strings.NewReader(in))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%q) = %v, want ErrFormat containing %q", in, err, want)
		}
	}
	// A blank line before the header is fine; the header's line is named.
	_, err := Read(strings.NewReader("\n{\"format\":\"nope\",\"nodes\":1}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("header on line 2: error %v, want one naming line 2", err)
	}
}

// The hash of a run equals the hash of its trace written and read back,
// whatever its labels hold.
func TestHashSurvivesWriteRead(t *testing.T) {
	tr := &Trace{Header: Header{Nodes: 1}, Events: []Event{
		{Index: 0, Kind: Output, Peer: -1, Label: "bad \xff utf8, real \uFFFD, \"quoted\"\n", Data: []byte(`{ "x" : 1 }`)},
	}}
	h1 := NewHasher(tr.Header)
	var buf bytes.Buffer
	if err := Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	back.Events[0].Data = []byte(`{"x":1}`) // a host records compact JSON
	h1.Record(&back.Events[0])
	h2 := NewHasher(back.Header)
	var again bytes.Buffer
	if err := Write(&again, back); err != nil {
		t.Fatal(err)
	}
	back2, _ := Read(&again)
	h2.Record(&back2.Events[0])
	if h1.Sum() != h2.Sum() {
		t.Error("hash changed across a write/read round trip")
	}
}
