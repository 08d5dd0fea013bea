package queue

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// FuzzReadFrame: no input panics the stream's frame decoder; every frame
// it accepts is within the bound, and the frames accepted, encoded
// again, decode to themselves.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(appendFrame(nil, []byte("one")), nil))
	f.Add([]byte{0x80})
	f.Add(bytes.Repeat([]byte{0xff}, 11))
	f.Add([]byte{0x80, 0x80, 0x40, 'x'})
	f.Add(append([]byte{10}, "abc"...))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 64
		var frames [][]byte
		br := bufio.NewReader(bytes.NewReader(in))
		for {
			b, err := readFrame(br, max)
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooBig) {
					t.Fatalf("%x: error %v is neither the end nor a bad value", in, err)
				}
				break
			}
			if len(b) > max {
				t.Fatalf("%x: a frame of %d bytes, the most is %d", in, len(b), max)
			}
			frames = append(frames, b)
		}
		var again []byte
		for _, b := range frames {
			again = appendFrame(again, b)
		}
		br = bufio.NewReader(bytes.NewReader(again))
		for i, want := range frames {
			b, err := readFrame(br, max)
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("frame %d: %q became %q (%v)", i, want, b, err)
			}
		}
		if _, err := readFrame(br, max); err != io.EOF {
			t.Fatalf("after the frames encoded again: %v, want the end", err)
		}
	})
}

// FuzzDecodeStreamAck: no line panics the decoder of a stream's reply;
// what it accepts has ids or an error status, and encodes back to itself.
func FuzzDecodeStreamAck(f *testing.F) {
	f.Add([]byte(`{"ids":[1,2,3]}`))
	f.Add([]byte(`{"error":"put 3: length 5: the body ends after 1 bytes","code":400}`))
	f.Add([]byte(`{"ids":[],"error":""}`))
	f.Add([]byte(`{"error":"x","code":200}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := decodeStreamAck(line)
		if err != nil {
			return
		}
		if (len(a.IDs) == 0) == (a.Error == "") || (a.Error != "" && (a.Code < 400 || a.Code > 599)) {
			t.Fatalf("%q accepted as %+v", line, a)
		}
		b, _ := json.Marshal(a)
		a2, err := decodeStreamAck(b)
		if err != nil || a2.Error != a.Error || a2.Code != a.Code || fmt.Sprint(a2.IDs) != fmt.Sprint(a.IDs) {
			t.Fatalf("%q: %+v encoded as %s decodes as %+v (%v)", line, a, b, a2, err)
		}
	})
}

// FuzzDecodeBatch: no body panics a batch's decoder; what it accepts is
// at most MaxTxOps puts of at most MaxMessage bytes, and encodes back to
// a body that decodes to the same puts.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendFrame(appendFrame(nil, []byte("one")), nil))
	f.Add([]byte{0x80})
	f.Add([]byte{3, 'a'})
	f.Fuzz(func(t *testing.T, in []byte) {
		bodies, err := decodeBatch(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooBig) {
				t.Fatalf("%x: error %v is not a bad value", in, err)
			}
			return
		}
		if len(bodies) > MaxTxOps {
			t.Fatalf("%x: %d puts", in, len(bodies))
		}
		var again []byte
		for _, b := range bodies {
			again = appendFrame(again, b)
		}
		back, err := decodeBatch(again)
		if err != nil || len(back) != len(bodies) {
			t.Fatalf("%x encoded again: %d puts, %v; want %d", in, len(back), err, len(bodies))
		}
		for i := range back {
			if !bytes.Equal(back[i], bodies[i]) {
				t.Fatalf("put %d: %q became %q", i, bodies[i], back[i])
			}
		}
	})
}

// FuzzOpen: a directory whose segments are any bytes — the fuzzed one
// last, or before a valid one — opens, or is refused as ErrCorrupt;
// never a panic. Seeds: records followed by preallocated zeros, a header
// torn over zeros.
func FuzzOpen(f *testing.F) {
	b := wal.AppendRecord([]byte(segMagic), encodeStart(start{nextID: 1}))
	b = wal.AppendRecord(b, encodeBatch(nil, []op{{kind: opPut, queue: "q", id: 1, body: []byte("x")}}))
	f.Add(b, true)
	f.Add(append(b, make([]byte, 600)...), false)
	f.Add(append([]byte(segMagic[:3]), make([]byte, 600)...), true)
	f.Add(append(b[:len(b)-2], make([]byte, 600)...), true)
	valid := wal.AppendRecord([]byte(segMagic), encodeStart(start{nextID: 2}))
	f.Fuzz(func(t *testing.T, data []byte, last bool) {
		fs := newMemFS()
		write := func(name string, data []byte) {
			f, _ := fs.Open(name)
			f.WriteAt(data, 0)
			f.Sync()
		}
		write("/q/"+segName(1), data)
		if !last {
			write("/q/"+segName(2), valid)
		}
		fs.SyncDir("/q")
		m, err := Open(Config{Dir: "/q", FS: fs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%x: %v, want ErrCorrupt", data, err)
			}
			return
		}
		m.Close()
	})
}
