package live

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	checker "github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/logical"
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
	tr.recv("fan", 0, 0, 0, trace.VC{}, note{3}) // untraced
	tr.recv("fan", 0, 6, 6<<40|1, trace.DenseVC([]uint64{0, 0, 0, 0, 0, 0, 4}), note{1})
	id, vc := tr.send("fan", 0, 6, note{2})
	if want := []uint64{0, 4, 0, 0, 0, 0, 4}; !slices.Equal(vc.Dense(), want) || id != 1<<40|2 {
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
	if id, vc := more.send("fan", 0, 6, note{4}); id&(1<<40-1) <= 2 || vc.At(6) != 4 {
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

// A member that joined with a high ID keeps its clock by process: one
// entry per process it has heard of, not an array up to its ID — in the
// tracer, in each event, on the wire and as read from the wire (before,
// each event at ID 60000 copied an array of 60,001 entries, 480 KB).
func TestHighIDTracerStaysSmall(t *testing.T) {
	var file bytes.Buffer
	tr, err := newTracer(&file, 60000, 3, 1<<16, "test", "fan", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	tr.record(0, trace.Start, nil)
	tr.recv("fan", 0, 2, 2<<40|1, trace.DenseVC([]uint64{0, 0, 5}), note{1})
	id, vc := tr.send("fan", 0, 2, note{2})
	if len(tr.vc) != 2 || !vc.Sparse() || vc.At(60000) != 3 || vc.At(2) != 5 {
		t.Fatalf("the tracer holds %d slots, the send's clock %v; want 2 slots, {2:5, 60000:3} by process", len(tr.vc), vc)
	}
	b := appendTrailer(nil, id, vc, true)
	if len(b) > 16 {
		t.Errorf("a trailer of %d bytes for two entries", len(b))
	}
	_, back, _, err := readTrailer(b, 1<<16)
	if err != nil || !back.Sparse() || back.Compare(vc) != logical.Equal {
		t.Fatalf("read back %v, %v; want %v, by process", back, err, vc)
	}
	// A founder hears of it: its clock takes one more slot.
	founder, _ := newTracer(&bytes.Buffer{}, 0, 3, 1<<16, "test", "fan", nil, false)
	founder.recv("fan", 0, 60000, id, back, note{2})
	if len(founder.vc) != 3 || founder.clock().At(60000) != 3 || founder.clock().At(0) != 1 {
		t.Errorf("the founder's clock: %d slots, %v", len(founder.vc), founder.clock())
	}
	if err := tr.flush(); err != nil {
		t.Fatal(err)
	}
	got, err := trace.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if last := got.Events[len(got.Events)-1].VC; !last.Sparse() || last.At(60000) != 3 {
		t.Errorf("the file's last clock: %v; want {2:5, 60000:3} by process", last)
	}
}

// BenchmarkHighIDSend records sends of a member that joined as 60000:
// the bytes each event costs its tracer.
//
//	go test -run '^$' -bench HighIDSend -benchmem ./live
func BenchmarkHighIDSend(b *testing.B) {
	tr, err := newTracer(io.Discard, 60000, 3, 1<<16, "test", "fan", nil, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.send("fan", 0, 2, note{2})
	}
}
