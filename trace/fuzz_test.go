package trace

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzRead checks that Read never panics, that it rejects input only with
// ErrFormat, and that whatever it accepts is a well-formed trace that Write
// encodes and Read reads back identically. The seed corpus is in
// testdata/fuzz/FuzzRead; run the fuzzer with
//
//	go test -run='^$' -fuzz=FuzzRead ./trace
func FuzzRead(f *testing.F) {
	for seed := range uint64(3) {
		f.Add(txWrite(f, txRandomTrace(seed, 3, 12, seed == 1)))
	}
	// A trace with described states (proc.Describer), one spaced out.
	f.Add([]byte(`{"format":"cohort-trace/1","nodes":2}
{"i":0,"t":0,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1,"state":{"state":"RELEASED","queue":[]}}
{"i":1,"t":5,"node":1,"kind":"start","local":5,"lamport":1,"peer":-1,"state": { "a" : [1, 2] }}
`))
	// A live node's trace in a cluster that members join: vector
	// timestamps keyed by process ID, one as an array.
	f.Add([]byte(openTrace))
	f.Add([]byte(`{"format":"cohort-trace/1","nodes":2,"ids":9}
{"i":0,"t":0,"node":4,"kind":"start","local":0,"lamport":1,"vc":[0,0,0,0,1,0],"peer":-1}
{"i":1,"t":1,"node":4,"kind":"send","local":1,"lamport":2,"vc":{"4":2},"msg":5,"peer":8}
{"i":2,"t":2,"node":8,"kind":"recv","local":2,"lamport":4,"vc":{"4":2,"8":1},"msg":5,"peer":4}
`))
	// A member that joined with a high ID (below the SVG's row limit):
	// clocks held by process ID.
	f.Add([]byte(`{"format":"cohort-trace/1","nodes":3,"ids":65536}
{"i":0,"t":0,"node":4000,"kind":"start","local":0,"lamport":1,"vc":{"4000":1},"peer":-1}
{"i":1,"t":1,"node":4000,"kind":"send","local":1,"lamport":2,"vc":{"4000":2},"msg":5,"peer":1}
{"i":2,"t":2,"node":1,"kind":"recv","local":2,"lamport":4,"vc":{"1":1,"4000":2},"msg":5,"peer":4000}
`))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := Read(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			if tr != nil {
				t.Fatalf("Read returned a trace with error %v", err)
			}
			return
		}
		if tr.Header.Format != FormatName || tr.Header.Nodes < 1 {
			t.Fatalf("Read accepted a trace with header %+v", tr.Header)
		}
		for i := range tr.Events {
			e := &tr.Events[i]
			if e.Index != i || e.Node < 0 || int(e.Node) >= tr.Header.Nodes {
				t.Fatalf("Read accepted event %d: %v", i, e)
			}
			if i > 0 && e.Time < tr.Events[i-1].Time {
				t.Fatalf("Read accepted time going back at event %d", i)
			}
			// A vector has an entry per process at most; in a trace whose
			// processes join, none of its trailing zeros.
			if n := e.VC.Len(); n > tr.Header.Nodes || tr.Header.Open() && n > 0 && e.VC.At(n-1) == 0 {
				t.Fatalf("Read accepted event %d with VC %v of %d processes", i, e.VC, tr.Header.Nodes)
			}
		}
		if h := tr.Header; h.Open() && (h.Nodes > h.IDs || h.Nodes < tr.Processes()) {
			t.Fatalf("Read accepted an open trace of %d processes, naming %d, in an ID space of %d", h.Nodes, tr.Processes(), h.IDs)
		}

		var first bytes.Buffer
		if err := Write(&first, tr); err != nil {
			t.Fatalf("Write: %v", err)
		}
		back, err := Read(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("Read rejects what Write wrote: %v\n%s", err, first.Bytes())
		}
		if !reflect.DeepEqual(txNormalize(back), txNormalize(tr)) {
			t.Fatalf("round trip changed the trace:\n%+v\n%+v", tr, back)
		}
		var second bytes.Buffer
		if err := Write(&second, back); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("encoding is not stable:\n%s\n%s", first.Bytes(), second.Bytes())
		}

		// The renderers take any trace Read accepts.
		var log bytes.Buffer
		if err := WriteShiViz(&log, tr); err != nil {
			t.Fatalf("WriteShiViz: %v", err)
		}
		svCheckRules(t, tr, log.String(), !txHasVC(tr))
		var svg bytes.Buffer
		if err := WriteSVG(&svg, tr, SVGOptions{MaxEvents: 300, Mark: []int{0, 1}}); err != nil {
			t.Fatalf("WriteSVG: %v", err)
		}
		dec := xml.NewDecoder(&svg)
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("WriteSVG wrote invalid XML: %v", err)
			}
		}
	})
}

// txHasVC reports whether any event of tr carries a vector timestamp.
func txHasVC(tr *Trace) bool {
	for i := range tr.Events {
		if !tr.Events[i].VC.IsZero() {
			return true
		}
	}
	return false
}
