package ntp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestTimestampKnownValues(t *testing.T) {
	cases := []struct {
		t    string
		want Timestamp
	}{
		{"1900-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:00Z", 0x83aa7e80_00000000}, // 2208988800 s
		{"1970-01-01T00:00:00.5Z", 0x83aa7e80_80000000},
		{"2036-02-07T06:28:15Z", 0xffffffff_00000000}, // the last second of era 0
		{"2036-02-07T06:28:16Z", 0},                   // era 1 begins
		{"2036-02-07T06:28:16.25Z", 0x00000000_40000000},
		{"1899-12-31T23:59:59Z", 0xffffffff_00000000}, // era −1 ends
	}
	for _, c := range cases {
		if got := TimestampOf(date(c.t)); got != c.want {
			t.Errorf("TimestampOf(%s) = %v, want %v", c.t, got, c.want)
		}
	}
}

func TestTimestampTimePicksTheEraNearThePivot(t *testing.T) {
	cases := []struct {
		ts    Timestamp
		pivot string
		want  string
	}{
		{0, "2030-01-01T00:00:00Z", "2036-02-07T06:28:16Z"},
		{0, "1950-01-01T00:00:00Z", "1900-01-01T00:00:00Z"},
		{0xffffffff_00000000, "2040-01-01T00:00:00Z", "2036-02-07T06:28:15Z"},
		{0xffffffff_00000000, "2120-01-01T00:00:00Z", "2172-03-15T12:56:31Z"}, // era 1's last second
		{0x83aa7e80_80000000, "2026-11-21T00:00:00Z", "1970-01-01T00:00:00.5Z"},
		{0x00000001_00000000, "2036-02-07T06:28:15Z", "2036-02-07T06:28:17Z"}, // across the boundary
		{0x00000000_ffffffff, "2037-01-01T00:00:00Z", "2036-02-07T06:28:17Z"}, // the fraction rounds up to a whole second
	}
	for _, c := range cases {
		if got := c.ts.Time(date(c.pivot)); !got.Equal(date(c.want)) {
			t.Errorf("%v.Time(pivot %s) = %s, want %s", c.ts, c.pivot, got, c.want)
		}
	}
}

func TestTimestampSubAcrossTheEraBoundary(t *testing.T) {
	before, after := date("2036-02-07T06:28:15.75Z"), date("2036-02-07T06:28:16.5Z")
	a, b := TimestampOf(after), TimestampOf(before)
	if a >= b {
		t.Fatalf("want the era-1 timestamp %v numerically below the era-0 one %v", a, b)
	}
	if d := a.Sub(b); d != 750*time.Millisecond {
		t.Errorf("%v − %v = %v, want 750ms", a, b, d)
	}
	if d := b.Sub(a); d != -750*time.Millisecond {
		t.Errorf("%v − %v = %v, want −750ms", b, a, d)
	}
}

func TestShort(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want Short
	}{
		{0, 0},
		{-time.Second, 0},
		{time.Second, 0x00010000},
		{1500 * time.Millisecond, 0x00018000},
		{15259 * time.Nanosecond, 1}, // 2⁻¹⁶ s ≈ 15.2588 µs
		{100000 * time.Second, 0xffffffff},
	}
	for _, c := range cases {
		if got := ShortOf(c.d); got != c.want {
			t.Errorf("ShortOf(%v) = %#x, want %#x", c.d, got, c.want)
		}
	}
	if d := Short(0x00018000).Duration(); d != 1500*time.Millisecond {
		t.Errorf("Short(0x18000) = %v, want 1.5s", d)
	}
}

// A reply of chronyd 4.3 ("local stratum 10") to a client request, as
// captured on the wire.
const chronyReply = "240a00e700000000000000007f7f0101eeac8d46335d8f1a0000000000000000eeac8d48064f7431eeac8d48065444ba"

func TestDecodeAChronyReply(t *testing.T) {
	b, _ := hex.DecodeString(chronyReply)
	p, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Packet{
		Leap: LeapNone, Version: 4, Mode: ModeServer, Stratum: 10, Poll: 0, Precision: -25,
		RefID:     RefID{127, 127, 1, 1},
		Reference: 0xeeac8d46_335d8f1a,
		Receive:   0xeeac8d48_064f7431,
		Transmit:  0xeeac8d48_065444ba,
	}
	if p != want {
		t.Fatalf("decoded\n%+v\nwant\n%+v", p, want)
	}
	if got := p.Receive.Time(date("2026-01-01T00:00:00Z")); got.Format(time.RFC3339) != "2026-11-21T21:36:08Z" {
		t.Errorf("receive time %s, want 2026-11-21T21:36:08Z", got)
	}
	if got := p.RefID.Format(p.Stratum); got != "127.127.1.1" {
		t.Errorf("refid shows as %q, want 127.127.1.1", got)
	}
	out, err := p.Encode()
	if err != nil || !bytes.Equal(out, b) {
		t.Fatalf("re-encoded to %x, %v; want the bytes it came from", out, err)
	}
	// Extension fields or a MAC after the header change nothing.
	long := append(append([]byte{}, b...), bytes.Repeat([]byte{0xee}, 36)...)
	if q, err := Decode(long); err != nil || q != p {
		t.Errorf("with 36 trailing bytes: %+v, %v; want the same packet", q, err)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	valid, _ := hex.DecodeString(chronyReply)
	with := func(first byte) []byte {
		b := append([]byte{}, valid...)
		b[0] = first
		return b
	}
	cases := []struct {
		in   []byte
		want string
	}{
		{nil, "0 bytes, shorter than the 48-byte header"},
		{valid[:47], "47 bytes, shorter than the 48-byte header"},
		{with(0<<3 | 3), "version 0 (want 1 to 4)"},
		{with(5<<3 | 3), "version 5 (want 1 to 4)"},
		{with(7<<3 | 4), "version 7"},
		{with(4<<3 | 0), "mode 0 (reserved)"},
		{with(4<<3 | 6), "mode 6 (control) has a format of its own"},
		{with(2<<3 | 7), "mode 7 (private) has a format of its own"},
	}
	for _, c := range cases {
		_, err := Decode(c.in)
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%x) = %v, want an ErrMalformed naming %q", c.in, err, c.want)
		}
	}
}

func TestEncodeRefusesWhatDecodeWould(t *testing.T) {
	cases := []struct {
		p    Packet
		want string
	}{
		{Packet{Leap: 4, Version: 4, Mode: ModeClient}, "leap indicator 4"},
		{Packet{Version: 0, Mode: ModeClient}, "version 0"},
		{Packet{Version: 9, Mode: ModeClient}, "version 9"},
		{Packet{Version: 4, Mode: 0}, "mode 0 (reserved)"},
		{Packet{Version: 4, Mode: 8}, "mode 8"},
	}
	for _, c := range cases {
		_, err := c.p.Encode()
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode(%+v) = %v, want an error naming %q", c.p, err, c.want)
		}
	}
}

func TestRefID(t *testing.T) {
	cases := []struct {
		s       string
		stratum uint8
		shown   string
	}{
		{"LOCL", 1, "LOCL"},
		{"GPS", 1, "GPS"},
		{"RATE", 0, "RATE"},
		{"LOCL", 10, "76.79.67.76 (LOCL)"},
		{"127.127.1.1", 10, "127.127.1.1"},
		{"192.0.2.1", 2, "192.0.2.1"},
	}
	for _, c := range cases {
		r, err := RefIDOf(c.s)
		if err != nil {
			t.Fatalf("RefIDOf(%q): %v", c.s, err)
		}
		if got := r.Format(c.stratum); got != c.shown {
			t.Errorf("RefIDOf(%q).Format(%d) = %q, want %q", c.s, c.stratum, got, c.shown)
		}
	}
	if got := (RefID{1, 2, 3, 4}).Format(1); got != "01020304" {
		t.Errorf("an unprintable stratum-1 refid shows as %q, want hex", got)
	}
	for _, bad := range []string{"", "LOCAL", "a b", "é"} {
		if _, err := RefIDOf(bad); err == nil || !strings.Contains(err.Error(), "reference id") {
			t.Errorf("RefIDOf(%q) = %v, want an error naming the reference id", bad, err)
		}
	}
}
