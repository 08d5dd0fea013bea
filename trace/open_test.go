package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openTrace is a live node's file in a cluster of three founders that
// members join: node 1 hears of member 7, which joined, and of member 4
// through it.
const openTrace = `{"format":"cohort-trace/1","nodes":3,"ids":65536,"family":"overlay","algo":"scribe","seed":0}
{"i":0,"t":10,"node":1,"kind":"start","local":10,"lamport":1,"vc":{"1":1},"peer":-1}
{"i":1,"t":20,"node":1,"kind":"recv","local":20,"lamport":6,"vc":{"1":2,"4":1,"7":3},"msg":7696581394433,"peer":7,"type":"join"}
{"i":2,"t":30,"node":1,"kind":"send","local":30,"lamport":7,"vc":{"1":3,"4":1,"7":3},"msg":1099511627777,"peer":7,"type":"state"}
`

// A trace whose processes join keeps its vector timestamps as maps keyed
// by process ID: they read as arrays indexed by process ID without their
// trailing zeros, the header's processes cover every ID the trace names,
// and the trace writes back byte for byte (but for the raised count).
func TestOpenTraceReadsAndWritesSparseClocks(t *testing.T) {
	tr, err := Read(strings.NewReader(openTrace))
	if err != nil {
		t.Fatal(err)
	}
	if h := tr.Header; h.Nodes != 8 || h.IDs != 65536 || !h.Open() {
		t.Fatalf("header %+v: want 8 processes (0..7) in an ID space of 65536", h)
	}
	want := [][]uint64{{0, 1}, {0, 2, 0, 0, 1, 0, 0, 3}, {0, 3, 0, 0, 1, 0, 0, 3}}
	for i, e := range tr.Events {
		if !slices.Equal(e.VC.Dense(), want[i]) {
			t.Errorf("event %d: VC %v, want %v", i, e.VC, want[i])
		}
	}
	var out bytes.Buffer
	if err := Write(&out, tr); err != nil {
		t.Fatal(err)
	}
	if got := strings.Replace(openTrace, `"nodes":3`, `"nodes":8`, 1); out.String() != got {
		t.Errorf("written back:\n%s\nwant:\n%s", out.String(), got)
	}
	// The hash is of the same encoding.
	h := NewHasher(tr.Header)
	for i := range tr.Events {
		h.Record(&tr.Events[i])
	}
	if sum := hashOf(t, out.Bytes()); h.Sum() != sum {
		t.Errorf("hash %s of the events, %s of the file", h.Sum(), sum)
	}

	// An array in an open trace reads as the map does.
	arrays := strings.Replace(openTrace, `"vc":{"1":1}`, `"vc":[0,1,0,0]`, 1)
	back, err := Read(strings.NewReader(arrays))
	if err != nil || !slices.Equal(back.Events[0].VC.Dense(), []uint64{0, 1}) {
		t.Errorf("an array in an open trace: %v, %v", err, back)
	}

	// A checker that compares a recorded vector with the one the trace's
	// structure implies meets a shorter one: absent entries are 0.
	hb, err := NewHB(tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := hb.VC(0); len(got) != 8 || got[1] != 1 {
		t.Errorf("happened-before vector of event 0: %v", got)
	}
}

// hashOf is the hash Hasher gives the file b.
func hashOf(t *testing.T, b []byte) string {
	t.Helper()
	tr, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	h := NewHasher(tr.Header)
	for i := range tr.Events {
		h.Record(&tr.Events[i])
	}
	return h.Sum()
}

// What an open trace may not hold, and a closed one may not either.
func TestOpenTraceRejects(t *testing.T) {
	head := `{"format":"cohort-trace/1","nodes":3,"ids":16}` + "\n"
	event := func(vc string) string {
		return head + `{"i":0,"t":0,"node":1,"kind":"start","local":0,"lamport":1,"vc":` + vc + `,"peer":-1}` + "\n"
	}
	for in, want := range map[string]string{
		`{"format":"cohort-trace/1","nodes":3,"ids":2}`:     "ids = 2",
		`{"format":"cohort-trace/1","nodes":3,"ids":70000}`: "ids = 70000",
		`{"format":"cohort-trace/1","nodes":3,"ids":-1}`:    "ids = -1",
		event(`{"16":1}`): "process 16 beyond the ID space",
		event(`{"07":1}`): `key "07"`,
		event(`{"-1":1}`): `key "-1"`,
		event(`{"x":1}`):  `key "x"`,
		event(`{"1":-1}`): "vector timestamp",
		event(`[0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]`): "17 entries, in an ID space of 16",
		event(`"1"`):                       "want an array or an object",
		event(`{"1":1.5}`):                 "want a count",
		event(`{"1":1e3}`):                 "want a count",
		event(`[[1]]`):                     "want a count",
		event(`{"\u0031":1}`):              "is not a process ID",
		event(`[0, 18446744073709551616]`): "want a count",
		head + `{"i":0,"t":0,"node":16,"kind":"start","local":0,"lamport":1,"peer":-1}`: "node 16 out of range 0..15",
		// A closed trace takes no map, nor a member beyond its nodes.
		`{"format":"cohort-trace/1","nodes":3}` + "\n" + `{"i":0,"t":0,"node":1,"kind":"start","local":0,"lamport":1,"vc":[0,1.5,0],"peer":-1}`: "want a count",
		`{"format":"cohort-trace/1","nodes":3}` + "\n" + `{"i":0,"t":0,"node":1,"kind":"start","local":0,"lamport":1,"vc":{"1":1},"peer":-1}`:   "no ID space",
		`{"format":"cohort-trace/1","nodes":3}` + "\n" + `{"i":0,"t":0,"node":3,"kind":"start","local":0,"lamport":1,"peer":-1}`:                "node 3 out of range 0..2",
	} {
		_, err := Read(strings.NewReader(in))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%q) = %v, want ErrFormat containing %q", in, err, want)
		}
	}
}

// Traces written before vector timestamps could grow read as they did,
// and write back byte for byte: the golden runs of the vector clocks and
// the lattice's fixture.
func TestOldTracesStillRead(t *testing.T) {
	files, _ := filepath.Glob("../lab/testdata/golden/*.jsonl")
	files = append(files, "../globalstate/testdata/eager-reply.jsonl")
	vcs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, e := range tr.Events {
			if !e.VC.IsZero() {
				vcs++
				if e.VC.Len() != tr.Header.Nodes {
					t.Errorf("%s: event %d: VC %v of %d processes", f, e.Index, e.VC, tr.Header.Nodes)
				}
			}
		}
		var out bytes.Buffer
		if err := Write(&out, tr); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), b) {
			t.Errorf("%s is not written back as it was", f)
		}
	}
	if len(files) < 5 || vcs == 0 {
		t.Fatalf("%d files, %d vector timestamps: the fixtures moved", len(files), vcs)
	}
}
