package live

import (
	"bytes"
	"sync"
	"testing"

	"github.com/cohort-go/cohort/trace"
)

// A receipt's merge and its event are one step: while other services of
// the node record events at the same time, no event of the file carries
// a peer's clock entry that no earlier receipt in the file brought. (When
// the merge came first and the event later, another service's event could
// slip between them, ahead of the receipt that explains it: the clock
// condition then failed in a container test's whole-cluster restart.)
func TestReceiptMergesAndRecordsAtOnce(t *testing.T) {
	const peers, each = 4, 2000
	var file bytes.Buffer
	tr, err := newTracer(&file, 0, peers+1, 0, "test", "fan", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := 1; p <= peers; p++ {
		wg.Go(func() { // peer p's messages, each carrying its next clock entry
			for k := 1; k <= each; k++ {
				vc := make([]uint64, peers+1)
				vc[p] = uint64(k)
				tr.recv("fan", 0, 0, uint64(p)<<40|uint64(k), trace.DenseVC(vc), note{k})
			}
		})
	}
	wg.Go(func() { // another service's events meanwhile
		for range peers * each {
			tr.record(0, trace.Output, func(e *trace.Event) { e.Type, e.Service = "tick", "other" })
		}
	})
	wg.Wait()
	if err := tr.flush(); err != nil {
		t.Fatal(err)
	}
	got, err := trace.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	known := make([]uint64, peers+1) // the most each peer's receipts so far brought
	for _, e := range got.Events {
		vc := e.VC.Dense()
		if e.Kind == trace.Recv {
			p := int(e.Msg >> 40)
			known[p] = max(known[p], e.Msg&(1<<40-1))
		}
		for p := 1; p <= peers && p < len(vc); p++ {
			if vc[p] > known[p] {
				t.Fatalf("event #%d (%s %s) carries p%d's entry %d, but the receipts before it brought only %d", e.Index, e.Kind, e.Type, p, vc[p], known[p])
			}
		}
	}
}
