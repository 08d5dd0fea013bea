package ntp

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var genPacket = rapid.Custom(func(t *rapid.T) Packet {
	return Packet{
		Leap:           Leap(rapid.IntRange(0, 3).Draw(t, "leap")),
		Version:        uint8(rapid.IntRange(1, 4).Draw(t, "version")),
		Mode:           Mode(rapid.IntRange(1, 5).Draw(t, "mode")),
		Stratum:        rapid.Uint8().Draw(t, "stratum"),
		Poll:           rapid.Int8().Draw(t, "poll"),
		Precision:      rapid.Int8().Draw(t, "precision"),
		RootDelay:      Short(rapid.Uint32().Draw(t, "rootdelay")),
		RootDispersion: Short(rapid.Uint32().Draw(t, "rootdisp")),
		RefID:          RefID(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "refid")),
		Reference:      Timestamp(rapid.Uint64().Draw(t, "ref")),
		Origin:         Timestamp(rapid.Uint64().Draw(t, "org")),
		Receive:        Timestamp(rapid.Uint64().Draw(t, "rec")),
		Transmit:       Timestamp(rapid.Uint64().Draw(t, "xmt")),
	}
})

// Every valid packet encodes to 48 bytes that decode to it.
func TestPropertyPacketRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPacket.Draw(t, "packet")
		b, err := p.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", p, err)
		}
		if len(b) != HeaderLen {
			t.Fatalf("Encode gave %d bytes", len(b))
		}
		q, err := Decode(b)
		if err != nil || q != p {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", p, q, err)
		}
	})
}

// Bytes that decode re-encode to their header, exactly: every header has
// one reading, and the bytes after it are ignored.
func TestPropertyBytesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 40, 80).Draw(t, "bytes")
		p, err := Decode(b)
		if err != nil {
			return
		}
		out, err := p.Encode()
		if err != nil || !bytes.Equal(out, b[:HeaderLen]) {
			t.Fatalf("%x decoded to %+v, which encodes to %x, %v", b, p, out, err)
		}
	})
}

// Times from 1800 to 2300 at nanosecond resolution.
var genTime = rapid.Custom(func(t *rapid.T) time.Time {
	secs := rapid.Int64Range(date("1800-01-01T00:00:00Z").Unix(), date("2300-01-01T00:00:00Z").Unix()).Draw(t, "secs")
	return time.Unix(secs, rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).UTC()
})

// A time survives the trip through a timestamp to the nanosecond, in any
// era, given a pivot within 68 years of it: a unit of 2⁻³² s is finer than
// a nanosecond.
func TestPropertyTimeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := genTime.Draw(t, "time")
		skew := time.Duration(rapid.Int64Range(-68*365*24, 68*365*24).Draw(t, "skew hours")) * time.Hour
		pivot := tm.Add(skew)
		if got := TimestampOf(tm).Time(pivot); !got.Equal(tm) {
			t.Fatalf("TimestampOf(%s).Time(%s) = %s", tm, pivot, got)
		}
	})
}

// A timestamp survives the trip through a time.Time to within a
// nanosecond, the resolution of time.Time.
func TestPropertyTimestampRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := Timestamp(rapid.Uint64().Draw(t, "ts"))
		pivot := genTime.Draw(t, "pivot")
		back := TimestampOf(ts.Time(pivot))
		if d := back.Sub(ts); d < -time.Nanosecond || d > time.Nanosecond {
			t.Fatalf("%v → %s → %v: off by %v", ts, ts.Time(pivot), back, d)
		}
		if d := uint64(back - ts + 3); d > 6 { // 1 ns is 4.3 units of 2⁻³² s
			t.Fatalf("%v → %s → %v: off by %d units", ts, ts.Time(pivot), back, int64(back-ts))
		}
	})
}

// The difference of two timestamps is the difference of their times, in
// any era, while they are less than 68 years apart.
func TestPropertySub(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genTime.Draw(t, "a")
		b := a.Add(time.Duration(rapid.Int64Range(-int64(68*365*24*time.Hour), int64(68*365*24*time.Hour)).Draw(t, "b−a")))
		if got, want := TimestampOf(a).Sub(TimestampOf(b)), a.Sub(b); got != want {
			t.Fatalf("TimestampOf(%s) − TimestampOf(%s) = %v, want %v", a, b, got, want)
		}
	})
}
