package consensus

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The operations as entries: each decodes to what was encoded, the
// entries written as JSON before (puts included) still decode, and
// damaged data is refused, never a panic.
func TestQueueOpRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 128)
	for _, op := range []QueueOp{
		{Op: "put", Queue: "jobs", Origin: 7, Seq: 1, Body: body},
		{Op: "put", Queue: "jobs", Origin: ClientOrigin | 3, Seq: 1 << 62}, // an empty body: nil
		{Op: "puts", Puts: []QueuePut{{Queue: "a", Origin: 1, Seq: 2, Body: body}, {Queue: "b", Origin: 1, Seq: 3, Body: []byte{}}}},
		{Op: "run", Queue: "jobs", Origin: 9, Seq: 100, After: 99, Bodies: [][]byte{body, {}, []byte("z")}},
		{Op: "get", Queue: "jobs", Origin: 1, Seq: 5, Count: 3, Vis: time.Second},
		{Op: "ack", Queue: "jobs", Origin: 1, Seq: 6, IDs: []uint64{1, 2}, Token: 4},
		{Op: "tx", Origin: 1, Seq: 7, Acks: []QueueRef{{Queue: "a", ID: 1}}, Puts: []QueuePut{{Queue: "b", Body: body}}},
		{Op: "expire", Queue: "jobs", IDs: []uint64{3}, Token: 2},
	} {
		data := op.encode()
		got, err := decodeQueueOp(data)
		if err != nil {
			t.Fatalf("%s: %v", op.Op, err)
		}
		if !reflect.DeepEqual(got, op) {
			t.Errorf("%s: encoded and decoded\n got  %+v\n want %+v", op.Op, got, op)
		}
		// What an earlier version wrote, all JSON, reads the same.
		old, _ := json.Marshal(op)
		was, err := decodeQueueOp(old)
		if err != nil || !reflect.DeepEqual(was, got) {
			t.Errorf("%s: from JSON %+v (%v), from this version's entry %+v", op.Op, was, err, got)
		}
		for cut := 1; cut < len(data); cut++ {
			if _, err := decodeQueueOp(data[:cut]); err == nil && data[0] != '{' {
				t.Errorf("%s: the first %d of %d bytes decoded", op.Op, cut, len(data))
			}
		}
	}
	for _, bad := range [][]byte{nil, {}, {'x'}, {tagRun, 0xff}, append(QueueOp{Op: "put", Queue: "q", Seq: 1}.encode(), 0)} {
		if op, err := decodeQueueOp(bad); err == nil {
			t.Errorf("%q decoded: %+v", bad, op)
		}
	}
}

// A stream's run of puts is about the size of its bodies in the log (in
// JSON it was a third more, in base64), and what it decodes to does not
// share the entry's memory.
func TestQueueRunEntryIsItsBodies(t *testing.T) {
	bodies := make([][]byte, 100)
	for i := range bodies {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 128)
	}
	data := QueueOp{Op: "run", Queue: "bench", Origin: 1 << 40, Seq: 1 << 20, After: 1<<20 - 1, Bodies: bodies}.encode()
	if most := 100*(128+2) + 64; len(data) > most {
		t.Errorf("a run of 100 bodies of 128 bytes is an entry of %d bytes, want at most %d", len(data), most)
	}
	op, err := decodeQueueOp(data)
	if err != nil {
		t.Fatal(err)
	}
	clear(data)
	for i, b := range op.Bodies {
		if !bytes.Equal(b, bodies[i]) {
			t.Fatalf("body %d changed with its entry's data: %q", i, b)
		}
	}
}

func FuzzDecodeQueueOp(f *testing.F) {
	f.Add(QueueOp{Op: "run", Queue: "q", Origin: 1, Seq: 1, Bodies: [][]byte{[]byte("a"), {}}}.encode())
	f.Add(QueueOp{Op: "puts", Puts: []QueuePut{{Queue: "q", Seq: 1, Body: []byte("b")}}}.encode())
	f.Add(QueueOp{Op: "put", Queue: "q", Seq: 1, Body: []byte("c")}.encode())
	f.Add(QueueOp{Op: "get", Queue: "q", Seq: 1, Vis: 1}.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := decodeQueueOp(data)
		if err != nil || data[0] == '{' {
			return
		}
		again, err := decodeQueueOp(op.encode())
		if err != nil || !reflect.DeepEqual(again, op) {
			t.Fatalf("%q decoded to %+v, which encodes to %+v (%v)", data, op, again, err)
		}
	})
}
