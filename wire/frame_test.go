package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/cohort-go/cohort/proc"
)

func TestFrameLayout(t *testing.T) {
	got := AppendFrame([]byte{0xee}, Frame{Type: FrameClose, Body: []byte("bye")})
	if want := "ee" + "05" + "01" + "06" + "627965"; hex.EncodeToString(got) != want {
		t.Errorf("close frame: %x, want %s", got, want)
	}
	body := AppendData(nil, Data{Service: 3, From: 2, Payload: []byte{1, 42, 6}})
	if want := "00" + "03" + "04" + "03" + "012a06"; hex.EncodeToString(body) != want {
		t.Errorf("data body: %x, want %s", body, want)
	}
	body = AppendData(nil, Data{Service: 0, From: proc.None, Payload: nil, Clock: []uint64{1, 300}})
	if want := "01" + "00" + "01" + "00" + "02" + "01" + "ac02"; hex.EncodeToString(body) != want {
		t.Errorf("data body with clock: %x, want %s", body, want)
	}
}

// sampleFrames are frames of every type, small and large.
func sampleFrames() []Frame {
	return []Frame{
		{Type: FrameHello, Body: []byte("node 1")},
		{Type: FrameAuth, Body: bytes.Repeat([]byte{0xa5}, 32)},
		{Type: FrameData, Body: AppendData(nil, Data{Service: 1, From: 4, Payload: []byte{1, 42, 6}, Clock: []uint64{0, 3, 1}})},
		{Type: FramePing, Body: nil},
		{Type: FramePong, Body: []byte{}},
		{Type: FrameData, Body: bytes.Repeat([]byte("x"), 5000)},
		{Type: FrameClose, Body: []byte("shutting down")},
	}
}

// Frames come back as they went, whatever pieces the stream delivers them in.
func TestReaderReadsFramesBackToBack(t *testing.T) {
	var stream []byte
	frames := sampleFrames()
	for _, f := range frames {
		stream = AppendFrame(stream, f)
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":       func(r io.Reader) io.Reader { return r },
		"one byte":    iotest.OneByteReader,
		"halves":      iotest.HalfReader,
		"data+EOF":    iotest.DataErrReader,
		"timeouts":    func(r io.Reader) io.Reader { return &emptyReads{r: r} },
		"short first": func(r io.Reader) io.Reader { return io.MultiReader(io.LimitReader(r, 7), r) },
	}
	for name, wrap := range readers {
		r := NewReader(wrap(bytes.NewReader(stream)), 8000)
		for i, want := range frames {
			got, err := r.Next()
			if err != nil {
				t.Fatalf("%s: frame %d: %v", name, i, err)
			}
			if got.Type != want.Type || !bytes.Equal(got.Body, want.Body) {
				t.Fatalf("%s: frame %d is %v %q, want %v %q", name, i, got.Type, got.Body, want.Type, want.Body)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%s: after the last frame: %v, want io.EOF", name, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%s: io.EOF is not final: %v", name, err)
		}
	}
}

// emptyReads returns nothing every other call, as io.Reader allows.
type emptyReads struct {
	r    io.Reader
	skip bool
}

func (e *emptyReads) Read(p []byte) (int, error) {
	e.skip = !e.skip
	if e.skip {
		return 0, nil
	}
	return e.r.Read(p)
}

func TestReaderErrors(t *testing.T) {
	frame := AppendFrame(nil, Frame{Type: FramePing, Body: []byte("12345")})
	cases := []struct {
		name  string
		in    []byte
		limit int
		want  error
		says  []string
	}{
		{"cut in the length", []byte{0x80}, 100, io.ErrUnexpectedEOF, []string{"cut short"}},
		{"cut in the body", frame[:len(frame)-1], 100, io.ErrUnexpectedEOF, []string{"cut short after 7 bytes"}},
		{"too large", frame, 6, ErrTooLarge, []string{"7 bytes", "limit is 6"}},
		{"no header", []byte{1, Version}, 100, ErrMalformed, []string{"1 bytes has no room"}},
		{"other version", []byte{2, 9, byte(FramePing)}, 100, ErrVersion, []string{"version 9", "speaks 1"}},
		{"unknown type", []byte{2, Version, 0}, 100, ErrMalformed, []string{"unknown frame type 0"}},
		{"unknown type 7", []byte{2, Version, 7}, 100, ErrMalformed, []string{"unknown frame type 7"}},
		{"overlong length", []byte{0x82, 0x00, Version, byte(FramePing)}, 100, ErrMalformed, []string{"shortest form"}},
		{"length beyond 64 bits", bytes.Repeat([]byte{0xff}, 11), 100, ErrMalformed, []string{"frame length"}},
	}
	for _, tc := range cases {
		r := NewReader(bytes.NewReader(tc.in), tc.limit)
		_, err := r.Next()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", tc.name, err, s)
			}
		}
		if _, again := r.Next(); again != err {
			t.Errorf("%s: the error is not final: then %v", tc.name, again)
		}
	}
}

// failAfter serves its bytes, then fails the test if read again: the
// reader must decide without the body.
type failAfter struct {
	t    *testing.T
	data []byte
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		f.t.Fatal("the reader read on, past the length prefix and header")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// An oversized length is refused before the body is read or a buffer of
// its size allocated, and so is a frame of another version.
func TestReaderRefusesBeforeReadingTheBody(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<40)
	r := NewReader(&failAfter{t: t, data: huge}, 1<<16)
	_, err := r.Next()
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1099511627776 bytes") || !strings.Contains(err.Error(), "65536") {
		t.Errorf("huge frame: %v", err)
	}
	if len(r.buf) > 1<<16+binary.MaxVarintLen64 {
		t.Errorf("the buffer grew to %d bytes", len(r.buf))
	}
	v2 := append(binary.AppendUvarint(nil, 1000), 2, byte(FrameData))
	r = NewReader(&failAfter{t: t, data: v2}, 1<<16)
	if _, err := r.Next(); !errors.Is(err, ErrVersion) {
		t.Errorf("version 2: %v", err)
	}
}

// A frame announced large but cut short costs a buffer the size of what
// arrived, not of the announcement.
func TestReaderBufferGrowsWithTheBytesThatArrive(t *testing.T) {
	in := append(binary.AppendUvarint(nil, 1<<20), Version, byte(FrameData))
	in = append(in, make([]byte, 10000)...)
	r := NewReader(bytes.NewReader(in), 1<<20)
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Next: %v", err)
	}
	if len(r.buf) > 16384 {
		t.Errorf("10 kB of a 1 MB frame took a buffer of %d bytes", len(r.buf))
	}
}

// The buffer never outgrows the limit (plus a length prefix), however
// the frames are sized.
func TestReaderBufferStaysWithinTheLimit(t *testing.T) {
	const limit = 300
	var stream []byte
	for size := 0; size <= limit-frameHeader; size += 7 {
		stream = AppendFrame(stream, Frame{Type: FrameData, Body: bytes.Repeat([]byte{byte(size)}, size)})
	}
	for _, wrap := range []func(io.Reader) io.Reader{iotest.OneByteReader, iotest.HalfReader, func(r io.Reader) io.Reader { return r }} {
		r := NewReader(wrap(bytes.NewReader(stream)), limit)
		for size := 0; size <= limit-frameHeader; size += 7 {
			f, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Body) != size {
				t.Fatalf("body of %d bytes, want %d", len(f.Body), size)
			}
			if len(r.buf) > limit+binary.MaxVarintLen64 {
				t.Fatalf("buffer of %d bytes for a limit of %d", len(r.buf), limit)
			}
		}
	}
	if r := NewReader(nil, 0); r.max != DefaultMaxFrame {
		t.Errorf("limit 0 means %d, want DefaultMaxFrame", r.max)
	}
}

func TestReaderPassesOnReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := NewReader(iotest.ErrReader(boom), 100)
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("between frames: %v", err)
	}
	r = NewReader(io.MultiReader(bytes.NewReader([]byte{5, Version}), iotest.ErrReader(boom)), 100)
	if _, err := r.Next(); !errors.Is(err, boom) || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("inside a frame: %v", err)
	}
	r = NewReader(readerFunc(func([]byte) (int, error) { return 0, nil }), 100)
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("a reader that never returns: %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestDataBody(t *testing.T) {
	for _, d := range []Data{
		{},
		{Service: 1 << 40, From: proc.None, Payload: []byte{1}},
		{From: 1<<31 - 1, Clock: []uint64{}},
		{Service: 2, From: -1 << 31, Payload: bytes.Repeat([]byte{7}, 200), Clock: []uint64{1 << 63, 0, 5}},
	} {
		body := AppendData(nil, d)
		back, err := ParseData(body)
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if back.Service != d.Service || back.From != d.From || !bytes.Equal(back.Payload, d.Payload) ||
			(back.Clock == nil) != (d.Clock == nil) || !slices.Equal(back.Clock, d.Clock) {
			t.Errorf("%+v came back as %+v", d, back)
		}
	}
	cases := []struct {
		name, in, says string
	}{
		{"empty", "", "flags"},
		{"reserved flag", "02000000", "reserved flag bits 0x02"},
		{"no service", "00", "service"},
		{"sender out of range", "0000808080801000", "sender"},
		{"payload beyond the body", "00000005aa", "payload length"},
		{"clock beyond the body", "0100000003", "clock length"},
		{"clock cut short", "010000000180", "clock at byte 5"},
		{"trailing byte", "0000000000", "trailing"},
	}
	for _, tc := range cases {
		in, _ := hex.DecodeString(tc.in)
		if _, err := ParseData(in); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: ParseData(%s): %v, want an error about %q", tc.name, tc.in, err, tc.says)
		}
	}
}

func TestFrameTypeNames(t *testing.T) {
	var names []string
	for ft := FrameType(0); ft <= FrameClose+1; ft++ {
		names = append(names, ft.String())
	}
	if got := strings.Join(names, " "); got != "FrameType(0) hello auth data ping pong close FrameType(7)" {
		t.Errorf("names: %s", got)
	}
}
