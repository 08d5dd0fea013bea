package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// bytesConn is a net.Conn that reads from a byte slice, for frame readers.
type bytesConn struct {
	net.Conn
	r io.Reader
}

func (c *bytesConn) Read(p []byte) (int, error)      { return c.r.Read(p) }
func (c *bytesConn) SetReadDeadline(time.Time) error { return nil }

func readerOver(b []byte, max int) *frameReader {
	return newFrameReader(&bytesConn{r: bytes.NewReader(b)}, dataReadBuf, time.Second, max)
}

func TestFrameRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 31, 32, 33, 127, 128, 1024, 1025, 4095, 16383, 16384, 100_000}
	var wire []byte
	for _, n := range sizes {
		before := len(wire)
		wire = appendFrame(wire, bytes.Repeat([]byte{byte(n)}, n))
		if got := len(wire) - before; got != frameLen(n) {
			t.Errorf("frameLen(%d) = %d, encoded %d bytes", n, frameLen(n), got)
		}
		wire = append(wire, pingFrame...)
	}
	r := readerOver(wire, 100_000)
	for _, n := range sizes {
		kind, p, err := r.next()
		if err != nil || kind != kindData || len(p) != n || n > 0 && p[n-1] != byte(n) {
			t.Fatalf("frame of %d bytes: kind %d, %d bytes, %v", n, kind, len(p), err)
		}
		if kind, _, err := r.next(); kind != kindPing || err != nil {
			t.Fatalf("after %d: kind %d, %v; want a ping", n, kind, err)
		}
	}
	if _, _, err := r.next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if frameLen(32) != 34 {
		t.Errorf("a 32-byte payload costs %d bytes on the wire, want 34", frameLen(32))
	}
	// splitFrame walks a batch.
	var batch []byte
	for _, n := range sizes {
		batch = appendFrame(batch, make([]byte, n))
	}
	for i := 0; len(batch) > 0; i++ {
		size, p := splitFrame(batch)
		if len(p) != sizes[i] {
			t.Fatalf("splitFrame: frame %d has %d bytes, want %d", i, len(p), sizes[i])
		}
		batch = batch[size:]
	}
}

func TestFrameReaderErrors(t *testing.T) {
	hdr := func(n, kind uint64) []byte { return binary.AppendUvarint(nil, n<<2|kind) }
	for _, tc := range []struct {
		name string
		wire []byte
		want string
	}{
		{"too-large", hdr(101, kindData), "frame of 101 bytes exceeds MaxFrame 100"},
		{"huge-length", hdr(1<<40, kindData), "exceeds MaxFrame"},
		{"varint-overflow", bytes.Repeat([]byte{0xff}, 11), "overflow"},
		{"truncated-body", append(hdr(10, kindData), "12345"...), "truncated frame"},
		{"truncated-header", []byte{0x80}, "truncated frame"},
		{"empty-ack", hdr(0, kindAck), "ack frame with 0 bytes of payload"},
		{"long-ack", append(hdr(11, kindAck), bytes.Repeat([]byte{0x80}, 11)...), "ack frame with 11 bytes of payload"},
		{"ping-with-payload", append(hdr(1, kindPing), 'x'), "ping frame with 1 bytes of payload"},
	} {
		_, _, err := readerOver(tc.wire, 100).next()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestFrameReaderTimeout: a frame trickled in over a connection must be
// complete within the idle timeout.
func TestFrameReaderTimeout(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	r := newFrameReader(server, dataReadBuf, 50*time.Millisecond, 1000)
	go client.Write(binary.AppendUvarint(nil, 10<<2)) // and nothing more
	_, _, err := r.next()
	if !errors.Is(err, errIdle) {
		t.Fatalf("got %v, want a read timeout", err)
	}
}

// FuzzFrameReader: whatever a peer sends, the reader neither panics nor
// returns a payload longer than the limit, and it stops at the first error.
func FuzzFrameReader(f *testing.F) {
	f.Add(appendFrame(append([]byte(nil), pingFrame...), []byte("hello")))
	f.Add(binary.AppendUvarint(nil, 1<<40))
	f.Add([]byte{0x80, 0x80, 0x80})
	f.Add(appendAck(appendAck(nil, 0), 1<<63))
	f.Add(append(binary.AppendUvarint(nil, 3<<2|kindAck), 0x80, 0x80, 0x00))
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := readerOver(wire, 64)
		for range len(wire) + 1 {
			kind, p, err := r.next()
			if err != nil {
				return
			}
			if len(p) > 64 || kind > kindAck || kind == kindAck && (len(p) == 0 || len(p) > binary.MaxVarintLen64) {
				t.Fatalf("kind %d, %d bytes", kind, len(p))
			}
			if kind == kindAck {
				parseAck(p) // must not panic
			}
		}
		t.Fatal("reader did not stop")
	})
}

func TestAckRoundTrip(t *testing.T) {
	for _, next := range []uint64{0, 1, 127, 128, 1 << 32, 1<<64 - 1} {
		r := readerOver(appendAck(nil, next), 64)
		kind, p, err := r.next()
		if err != nil || kind != kindAck {
			t.Fatalf("ack of %d: kind %d, %v", next, kind, err)
		}
		if got, err := parseAck(p); err != nil || got != next {
			t.Errorf("ack of %d: parsed %d, %v", next, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x01, 0x02}, bytes.Repeat([]byte{0xff}, 10)} {
		if _, err := parseAck(bad); err == nil {
			t.Errorf("parseAck(%x): no error", bad)
		}
	}
}

// FuzzParseAck: whatever an ack frame carries, parseAck neither panics nor
// accepts trailing bytes, and what it accepts encodes back to the same
// number.
func FuzzParseAck(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0x80, 0x01})
	f.Add([]byte{0x80, 0x00})
	f.Add(bytes.Repeat([]byte{0xff}, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		next, err := parseAck(b)
		if err != nil {
			return
		}
		if _, k := binary.Uvarint(b); k != len(b) {
			t.Fatalf("accepted %x with trailing bytes", b)
		}
		frame := appendAck(nil, next)
		if got, err := parseAck(frame[1:]); err != nil || got != next {
			t.Fatalf("%x: %d re-encodes as %x, parsed %d, %v", b, next, frame, got, err)
		}
	})
}
