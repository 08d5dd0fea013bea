package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"
)

// After the handshake a connection carries frames. A frame is a header, the
// unsigned varint len<<2 | kind, followed by len bytes of payload:
//
//	kind 0  data: the payload goes to the handler
//	kind 1  ping: len is 0; asks the other side for an acknowledgement
//	kind 2  members: (id, address) entries (members.go)
//	kind 3  ack: a uvarint, the number of the other side's data frames of
//	        the link this side has delivered (ack.go); either way, and
//	        the keepalive (keepalive.go)
//
// A 32-byte payload costs 34 bytes on the wire; a ping, one byte; an ack,
// two to twelve.
const (
	kindData    = 0
	kindPing    = 1
	kindMembers = 2
	kindAck     = 3

	maxHeaderLen = 5 // the varint of (MaxMaxFrame<<2 | 3) < 1<<32
)

// pingFrame is the whole encoding of a ping.
var pingFrame = []byte{kindPing}

// appendFrame appends a data frame carrying payload to dst.
func appendFrame(dst []byte, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(payload))<<2|kindData)
	return append(dst, payload...)
}

// frameLen is the encoded length of a data frame carrying n bytes.
func frameLen(n int) int {
	h := 1
	for x := uint64(n) << 2; x >= 0x80; x >>= 7 {
		h++
	}
	return h + n
}

// splitFrame returns the length of the first frame encoded in b and its
// payload. b must hold whole frames written by appendFrame.
func splitFrame(b []byte) (n int, payload []byte) {
	x, h := binary.Uvarint(b)
	end := h + int(x>>2)
	return end, b[h:end]
}

// Reasons a frame reader gives up on a connection.
var (
	errTruncated = errors.New("truncated frame")
	errIdle      = errors.New("read timeout")
)

// frameReader reads frames from a connection. Every frame must arrive
// completely within idle of the moment the reader starts waiting for it, so
// a peer that goes silent, or trickles a frame in a byte at a time, is
// disconnected; except that with a watch, while this side awaits nothing
// of the member, the first byte of a frame may take up to the quiet
// timeout, and the rest must follow within idle (keepalive.go). The
// deadline is renewed only when the reader may block (the buffer does not
// hold the whole frame), which keeps it off the fast path.
type frameReader struct {
	conn  net.Conn
	br    *bufio.Reader
	idle  time.Duration
	max   int
	slab  []byte
	watch *readWatch // nil: every wait is bounded by idle (the handshake, the resumption)
}

// Payloads up to slabMax bytes are carved from shared slabs of slabSize
// bytes: one allocation per several hundred small frames instead of one per
// frame. A slab is freed once the handler has dropped every payload in it.
const (
	slabSize = 32 << 10
	slabMax  = 1 << 10
)

// Read buffer sizes: large where data arrives, small where only pings do.
const (
	dataReadBuf = 64 << 10
	pingReadBuf = 256
)

func newFrameReader(conn net.Conn, bufSize int, idle time.Duration, max int) *frameReader {
	return &frameReader{conn: conn, br: bufio.NewReaderSize(conn, bufSize), idle: idle, max: max}
}

// next returns the next frame. At a frame boundary a closed connection gives
// io.EOF; anything else wrong gives an error whose text is the reason the
// connection is closed.
func (r *frameReader) next() (kind byte, payload []byte, err error) {
	armed := false
	if r.br.Buffered() < maxHeaderLen {
		// About to read the socket, which will likely find it empty
		// and park: first let a goroutine the handler woke (the host
		// taking the payload from its inbox) run on this thread; it
		// would otherwise wait out that system call, or be taken over
		// by another thread.
		runtime.Gosched()
		long, err := r.armWait()
		if err != nil {
			return 0, nil, err
		}
		armed = true
		if long {
			// Nothing awaited: the first byte may be long in coming;
			// the rest of the frame must follow within idle.
			if _, err := r.br.Peek(1); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && r.watch.expired() {
					return 0, nil, fmt.Errorf("%w: nothing from the member for %v, with nothing outstanding", errIdle, r.watch.quiet)
				}
				return 0, nil, r.readErr(err, false)
			}
			armed = false
			if b, _ := r.br.Peek(r.br.Buffered()); !wholeHeader(b) {
				if err := r.arm(); err != nil {
					return 0, nil, err
				}
				armed = true
			}
		}
	}
	x, err := binary.ReadUvarint(r.br)
	if err != nil {
		return 0, nil, r.readErr(err, false)
	}
	kind, n := byte(x&3), x>>2
	if n > uint64(r.max) {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds MaxFrame %d", n, r.max)
	}
	switch kind {
	case kindData, kindMembers:
	case kindPing:
		if n != 0 {
			return 0, nil, fmt.Errorf("ping frame with %d bytes of payload", n)
		}
		return kindPing, nil, nil
	case kindAck:
		if n == 0 || n > binary.MaxVarintLen64 {
			return 0, nil, fmt.Errorf("ack frame with %d bytes of payload", n)
		}
	}
	if !armed && r.br.Buffered() < int(n) {
		if err := r.arm(); err != nil {
			return 0, nil, err
		}
	}
	payload = r.alloc(int(n))
	if _, err := io.ReadFull(r.br, payload); err != nil {
		return 0, nil, r.readErr(err, true)
	}
	return kind, payload, nil
}

func (r *frameReader) arm() error {
	return r.conn.SetReadDeadline(time.Now().Add(r.idle))
}

// armWait sets the deadline of a wait for the next frame, and reports
// whether it is the quiet one (keepalive.go).
func (r *frameReader) armWait() (long bool, err error) {
	if r.watch == nil {
		return false, r.arm()
	}
	return r.watch.arm()
}

// wholeHeader reports whether b starts with a whole frame header.
func wholeHeader(b []byte) bool {
	_, k := binary.Uvarint(b)
	return k != 0
}

// readErr names a read error. inFrame reports whether part of a frame had
// been read.
func (r *frameReader) readErr(err error, inFrame bool) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: no complete frame within %v", errIdle, r.idle)
	case err == io.EOF && !inFrame:
		return io.EOF
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return errTruncated
	}
	return err
}

func (r *frameReader) alloc(n int) []byte {
	if n > slabMax {
		return make([]byte, n)
	}
	if len(r.slab) < n {
		r.slab = make([]byte, slabSize)
	}
	p := r.slab[:n:n]
	r.slab = r.slab[n:]
	return p
}
