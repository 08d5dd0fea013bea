package queue

import (
	"bytes"
	"testing"

	"github.com/cohort-go/cohort/live/wal"
)

// FuzzDecodeRecord: no input panics the record decoder or makes it
// allocate beyond its input, and what it accepts encodes back to itself.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeStart(start{nextID: 7, origins: map[string]uint64{"n1/src": 3}}))
	f.Add(encodeBatch(nil, []op{{kind: opPut, queue: "q", id: 1, body: []byte("hi")}, {kind: opAck, queue: "q", id: 1}}))
	f.Add(encodeBatch(nil, []op{{kind: opPut, queue: "d", id: 9, body: nil, origin: "n0/s", seq: 4}}))
	f.Add([]byte{recBatch, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, rec []byte) {
		st, ops, isStart, err := decodeRecord(rec)
		if err != nil {
			return
		}
		var again []byte
		if isStart {
			again = encodeStart(st)
		} else {
			again = encodeBatch(nil, ops)
		}
		// Uvarints have more than one encoding, and a start's origins
		// are a map: compare by decoding again.
		st2, ops2, _, err := decodeRecord(again)
		if err != nil || len(ops2) != len(ops) || st2.nextID != st.nextID || len(st2.origins) != len(st.origins) {
			t.Fatalf("%x decoded, encoded as %x, which does not decode the same (%v)", rec, again, err)
		}
		for i := range ops {
			a, b := ops[i], ops2[i]
			if a.kind != b.kind || a.queue != b.queue || a.id != b.id || !bytes.Equal(a.body, b.body) || a.origin != b.origin || a.seq != b.seq {
				t.Fatalf("op %d: %v became %v", i, a, b)
			}
		}
	})
}

// FuzzSegment: a segment's body, framed records or any bytes, either
// decodes into records the record decoder judges, or is refused; never a
// panic.
func FuzzSegment(f *testing.F) {
	b := wal.AppendRecord(nil, encodeStart(start{nextID: 1}))
	b = wal.AppendRecord(b, encodeBatch(nil, []op{{kind: opPut, queue: "q", id: 1, body: []byte("x")}}))
	f.Add(b)
	f.Add(b[:len(b)-2])
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, good, err := wal.Decode(body)
		if err != nil {
			return
		}
		if good > len(body) {
			t.Fatalf("valid prefix %d of %d bytes", good, len(body))
		}
		for _, r := range recs {
			decodeRecord(r)
		}
	})
}
