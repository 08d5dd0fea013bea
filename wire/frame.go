package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/cohort-go/cohort/proc"
)

// Version is the frame format's version, the first byte of every frame
// after its length.
const Version = 1

// DefaultMaxFrame is the frame size limit NewReader uses when given none.
const DefaultMaxFrame = 1 << 20

var (
	// ErrTooLarge is wrapped by Reader's error for a frame longer than
	// its limit.
	ErrTooLarge = errors.New("frame too large")
	// ErrVersion is wrapped by Reader's error for a frame of another
	// version of the format.
	ErrVersion = errors.New("unsupported frame version")
)

// FrameType says what a frame's body holds.
type FrameType uint8

const (
	// FrameHello opens a connection. Its body belongs to the runtime's
	// handshake.
	FrameHello FrameType = iota + 1
	// FrameAuth carries the handshake's authentication; its body belongs
	// to the runtime too.
	FrameAuth
	// FrameData carries one message of one service: see Data.
	FrameData
	// FramePing asks the peer for a FramePong with the same body.
	FramePing
	// FramePong answers a FramePing.
	FramePong
	// FrameClose ends the connection; its body is the reason, as text.
	FrameClose
)

var frameNames = [...]string{"", "hello", "auth", "data", "ping", "pong", "close"}

func (t FrameType) String() string {
	if t.valid() {
		return frameNames[t]
	}
	return fmt.Sprintf("FrameType(%d)", uint8(t))
}

func (t FrameType) valid() bool { return t >= FrameHello && t <= FrameClose }

// Frame is one frame: its type and its body.
type Frame struct {
	Type FrameType
	Body []byte
}

// frameHeader is the version and type bytes, counted in the length.
const frameHeader = 2

// AppendFrame appends f to dst as it goes on the wire: the length of the
// rest as a uvarint, the version byte, the type byte, the body.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = appendUvarint(dst, uint64(frameHeader+len(f.Body)))
	dst = append(dst, Version, byte(f.Type))
	return append(dst, f.Body...)
}

// Reader reads frames from a stream.
//
// It holds one buffer, which grows, as bytes arrive, to the largest frame
// read, and never beyond the limit plus the length prefix; a length prefix
// above the limit is refused before any of the body is read. The Body of a returned Frame
// is a view of that buffer, valid until the next call to Next: copy what
// must outlive it (Codec.Decode copies).
//
// Errors are final: after one, the stream's framing cannot be trusted, and
// every later Next returns the same error. A stream that ends between two
// frames ends with io.EOF; one that ends inside a frame, with an error
// wrapping io.ErrUnexpectedEOF.
type Reader struct {
	r          io.Reader
	max        int
	buf        []byte // buf[start:end] is read and not yet consumed
	start, end int
	rerr       error // the underlying reader's error, once it returned one
	err        error // Next's final error
}

// NewReader returns a Reader of frames from r, each at most maxFrame bytes
// (counted as the length prefix counts: version, type and body). A
// maxFrame of zero or less means DefaultMaxFrame.
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	maxFrame = min(maxFrame, math.MaxInt-binary.MaxVarintLen64)
	return &Reader{r: r, max: maxFrame}
}

// readAhead is how much a Reader asks of the stream at once when its
// frames are small, to save calls to Read.
const readAhead = 4096

// Next reads the next frame.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	f, err := r.next()
	if err != nil {
		r.err = err
		return Frame{}, err
	}
	return f, nil
}

func (r *Reader) next() (Frame, error) {
	// The length prefix: at most MaxVarintLen64 bytes, or fewer if the
	// stream holds fewer.
	var size uint64
	var n int
	for {
		var err error
		size, n, err = uvarint(r.buf[r.start:r.end])
		if err == nil {
			break
		}
		if err != errTruncated || r.end-r.start >= binary.MaxVarintLen64 {
			return Frame{}, fmt.Errorf("wire: frame length: %w", err)
		}
		if err := r.fill(r.end - r.start + 1); err != nil {
			switch {
			case r.end > r.start:
				return Frame{}, r.cut(err)
			case err == io.EOF:
				return Frame{}, io.EOF // between two frames: the clean end
			}
			return Frame{}, fmt.Errorf("wire: reading a frame: %w", err)
		}
	}
	if size > uint64(r.max) {
		return Frame{}, fmt.Errorf("wire: %w: %d bytes, the limit is %d", ErrTooLarge, size, r.max)
	}
	if size < frameHeader {
		return Frame{}, fmt.Errorf("wire: %w: frame of %d bytes has no room for its version and type", ErrMalformed, size)
	}
	// Version and type first, so that a peer speaking another version is
	// told so before its frame is read.
	if err := r.fill(n + frameHeader); err != nil {
		return Frame{}, r.cut(err)
	}
	if v := r.buf[r.start+n]; v != Version {
		return Frame{}, fmt.Errorf("wire: %w %d (this side speaks %d)", ErrVersion, v, Version)
	}
	t := FrameType(r.buf[r.start+n+1])
	if !t.valid() {
		return Frame{}, fmt.Errorf("wire: %w: unknown frame type %d", ErrMalformed, uint8(t))
	}
	total := n + int(size)
	if err := r.fill(total); err != nil {
		return Frame{}, r.cut(err)
	}
	body := r.buf[r.start+n+frameHeader : r.start+total : r.start+total]
	r.start += total
	return Frame{Type: t, Body: body}, nil
}

// cut reports a stream that ended, or failed, inside a frame.
func (r *Reader) cut(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("wire: frame cut short after %d bytes: %w", r.end-r.start, err)
}

// fill reads until buf[start:end] holds at least need bytes (need is at
// most the limit plus MaxVarintLen64). When the buffer is full it moves
// the unread bytes to its front, which is where the previous frame's Body
// is overwritten, or doubles it, up to the limit: the buffer grows with the
// bytes that actually arrive, not with what a length prefix announces.
func (r *Reader) fill(need int) error {
	for r.end-r.start < need {
		if r.rerr != nil {
			return r.rerr
		}
		if r.end == len(r.buf) {
			if r.start > 0 {
				r.end = copy(r.buf, r.buf[r.start:r.end])
				r.start = 0
			} else {
				size := min(max(2*len(r.buf), readAhead), r.max+binary.MaxVarintLen64)
				r.buf = append(make([]byte, 0, size), r.buf...)[:size]
			}
		}
		k, err := r.readSome()
		r.end += k
		if err != nil {
			r.rerr = err
		}
	}
	return nil
}

// readSome reads into the free end of the buffer, retrying a reader that
// returns nothing a few times as io.Reader allows.
func (r *Reader) readSome() (int, error) {
	for range 100 {
		k, err := r.r.Read(r.buf[r.end:])
		if k > 0 || err != nil {
			return k, err
		}
	}
	return 0, io.ErrNoProgress
}

// FlagClock marks a Data body that carries the sender's vector clock.
// The other bits of the flags byte are reserved and must be zero.
const FlagClock = 1 << 0

// Data is the body of a FrameData: one message of one service.
//
// On the wire: a flags byte; Service as a uvarint; From as a zigzag
// varint; the payload's length as a uvarint and the payload (the message,
// encoded by the service's Codec); then, if FlagClock is set, the clock:
// its length as a uvarint and each entry as a uvarint.
type Data struct {
	Service uint64   // which service (algorithm instance) of the connection
	From    proc.ID  // the sending process
	Payload []byte   // Codec.Append's encoding of the message
	Clock   []uint64 // the sender's vector clock; nil: none (FlagClock clear)
}

// AppendData appends the body of a Data frame to dst.
func AppendData(dst []byte, d Data) []byte {
	var flags byte
	if d.Clock != nil {
		flags |= FlagClock
	}
	dst = append(dst, flags)
	dst = appendUvarint(dst, d.Service)
	dst = appendVarint(dst, int64(d.From))
	dst = appendUvarint(dst, uint64(len(d.Payload)))
	dst = append(dst, d.Payload...)
	if d.Clock != nil {
		dst = appendUvarint(dst, uint64(len(d.Clock)))
		for _, c := range d.Clock {
			dst = appendUvarint(dst, c)
		}
	}
	return dst
}

// ParseData parses the body of a Data frame. Payload is a view of body;
// Clock is newly allocated. The errors wrap ErrMalformed.
func ParseData(body []byte) (Data, error) {
	var d Data
	b := body
	fail := func(what string, err error) (Data, error) {
		return Data{}, fmt.Errorf("wire: data frame %s at byte %d: %w", what, len(body)-len(b), err)
	}
	if len(b) == 0 {
		return fail("flags", errTruncated)
	}
	flags := b[0]
	if flags&^FlagClock != 0 {
		return fail("flags", fmt.Errorf("%w: reserved flag bits %#02x set", ErrMalformed, flags&^FlagClock))
	}
	b = b[1:]
	var n int
	var err error
	if d.Service, n, err = uvarint(b); err != nil {
		return fail("service", err)
	}
	b = b[n:]
	from, n, err := varint(b)
	if err != nil {
		return fail("sender", err)
	}
	if from < math.MinInt32 || from > math.MaxInt32 {
		return fail("sender", errRange)
	}
	d.From = proc.ID(from)
	b = b[n:]
	l, n, err := uvarint(b)
	if err != nil {
		return fail("payload length", err)
	}
	if l > uint64(len(b)-n) {
		return fail("payload length", errLength)
	}
	d.Payload = b[n : n+int(l) : n+int(l)]
	b = b[n+int(l):]
	if flags&FlagClock != 0 {
		k, n, err := uvarint(b)
		if err != nil {
			return fail("clock length", err)
		}
		if k > uint64(len(b)-n) { // every entry takes at least a byte
			return fail("clock length", errLength)
		}
		b = b[n:]
		d.Clock = make([]uint64, k)
		for i := range d.Clock {
			if d.Clock[i], n, err = uvarint(b); err != nil {
				return fail("clock", err)
			}
			b = b[n:]
		}
	}
	if len(b) != 0 {
		return fail("end", fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)))
	}
	return d, nil
}
