package live

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	checker "github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/trace"
)

// In a cluster of 2 founders that members join, node 1's clock grows as
// it hears of member 6, and its file is an open trace: the clocks keyed
// by process ID. A message that came untraced (its sender does not
// trace) is recorded with an id of the receiver's own, so that the file
// stays readable and the integrity checker names the receipt whose send
// no file holds. Continued after a restart, the file keeps its clocks;
// a file begun without joins is not continued in a cluster with them.
func TestOpenTracerGrowsAndContinues(t *testing.T) {
	var file bytes.Buffer
	tr, err := newTracer(&file, 1, 2, 1<<16, "test", "fan", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	tr.record(0, trace.Start, nil)
	tr.recv("fan", 0, 0, 0, nil, note{3}) // untraced
	tr.recv("fan", 0, 6, 6<<40|1, []uint64{0, 0, 0, 0, 0, 0, 4}, note{1})
	id, vc := tr.send("fan", 0, 6, note{2})
	if want := []uint64{0, 4, 0, 0, 0, 0, 4}; !slices.Equal(vc, want) || id != 1<<40|2 {
		t.Fatalf("send: id %#x, clock %v; want %#x, %v", id, vc, 1<<40|2, want)
	}
	if err := tr.flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(file.String(), `"vc":{"1":4,"6":4}`) {
		t.Errorf("the file does not key the clocks by process:\n%s", file.String())
	}
	got, err := trace.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Nodes != 7 {
		t.Errorf("%d processes read, want 7 (0..6)", got.Header.Nodes)
	}
	untraced := got.Events[1]
	if untraced.Msg&unlinked == 0 || untraced.Msg>>40&0xffff != 1 {
		t.Errorf("the untraced receipt has id %#x, want one of node 1's, marked unlinked", untraced.Msg)
	}
	rs, err := checker.Run(got, "integrity")
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Status != checker.Violated || !slices.Contains(rs[0].Events, 1) {
		t.Errorf("integrity: %v, want it broken at the untraced receipt (#1)", rs[0])
	}

	resume, _, err := ResumeFrom(file.Bytes(), 1)
	if err != nil {
		t.Fatal(err)
	}
	more, err := newTracer(&file, 1, 2, 1<<16, "test", "fan", resume, false)
	if err != nil {
		t.Fatal(err)
	}
	if id, vc := more.send("fan", 0, 6, note{4}); id&(1<<40-1) <= 2 || vc[6] != 4 {
		t.Errorf("after the restart: id %#x, clock %v; want a fresh id, the clock kept", id, vc)
	}
	more.flush()
	if _, err := trace.Read(bytes.NewReader(file.Bytes())); err != nil {
		t.Errorf("the continued file: %v", err)
	}
	if _, err := newTracer(&file, 1, 2, 0, "test", "fan", resume, false); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("an open trace continued in a cluster without joins: %v", err)
	}
}
