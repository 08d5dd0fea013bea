package ntp

import (
	"fmt"
	"time"
)

// Timestamp is an NTP timestamp (RFC 5905 §6): 32 bits of seconds since
// the start of its era, then 32 bits of binary fraction of a second (a unit
// of 2⁻³² s ≈ 233 ps). Era 0 began at 1900-01-01 00:00:00 UTC; every era
// is 2³² seconds, about 136 years long, so era 1 begins at
// 2036-02-07 06:28:16 UTC. The wire carries no era number: Time resolves
// it against a nearby time.
//
// The zero Timestamp means "unknown" or "not set".
type Timestamp uint64

// unixEpoch is 1970-01-01 in seconds of NTP era 0 (since 1900-01-01).
const unixEpoch = 2208988800

// TimestampOf returns t as an NTP timestamp, rounded to the nearest unit of
// 2⁻³² s. Times of any era map onto the 32-bit seconds modulo 2³².
func TimestampOf(t time.Time) Timestamp {
	secs := uint32(t.Unix() + unixEpoch) // modulo 2³²: the era is dropped
	// ns·2³²/10⁹ is at most 4294967291.7 for ns < 10⁹, so the rounded
	// fraction stays below 2³² and never carries into the seconds.
	frac := (uint64(t.Nanosecond())<<32 + 5e8) / 1e9
	return Timestamp(uint64(secs)<<32 | frac)
}

// Seconds returns the seconds since the start of the timestamp's era.
func (ts Timestamp) Seconds() uint32 { return uint32(ts >> 32) }

// Fraction returns the fraction of a second, in units of 2⁻³² s.
func (ts Timestamp) Fraction() uint32 { return uint32(ts) }

// IsZero reports whether ts is the zero timestamp ("not set").
func (ts Timestamp) IsZero() bool { return ts == 0 }

// Time returns ts as a time.Time in UTC, in the era that puts it closest
// to pivot — within 68 years of it. Any clock that is not wildly wrong
// serves as pivot (a client uses its own clock when it sent the request),
// which is how RFC 5905 expects eras to be told apart. The result is
// rounded to the nanosecond.
func (ts Timestamp) Time(pivot time.Time) time.Time {
	p := pivot.Unix() + unixEpoch
	// The seconds of ts minus those of pivot, modulo 2³², taken as signed:
	// the step from pivot to ts's nearest occurrence.
	step := int64(int32(ts.Seconds() - uint32(p)))
	ns := (uint64(ts.Fraction())*1e9 + 1<<31) >> 32 // may round up to 10⁹: time.Unix carries it
	return time.Unix(p+step-unixEpoch, int64(ns)).UTC()
}

// Sub returns the duration ts − u, rounded to the nanosecond. The
// difference is taken modulo 2⁶⁴ and read as a signed 32.32 fixed-point
// number (RFC 5905 §6), so it is right across an era boundary as long as
// the two times are less than 68 years apart.
func (ts Timestamp) Sub(u Timestamp) time.Duration {
	d := int64(ts - u)
	secs := d >> 32                 // floor, also for negative d
	frac := uint64(d) & (1<<32 - 1) // 0 ≤ frac < 2³²
	ns := (frac*1e9 + 1<<31) >> 32  // rounded to the nearest ns
	return time.Duration(secs*1e9 + int64(ns))
}

// String shows the seconds and the fraction in hex, the usual way of
// writing NTP timestamps: "eeac8d46.335d8f1a".
func (ts Timestamp) String() string {
	return fmt.Sprintf("%08x.%08x", ts.Seconds(), ts.Fraction())
}

// Short is the NTP short format (RFC 5905 §6): an unsigned 16.16
// fixed-point number of seconds, used for the root delay and the root
// dispersion. Its unit is 2⁻¹⁶ s ≈ 15.3 µs, its largest value 65535.99998 s.
type Short uint32

// ShortOf returns d in the short format, rounded to the nearest unit and
// clamped to [0, 65535.99998 s].
func ShortOf(d time.Duration) Short {
	if d <= 0 {
		return 0
	}
	if d >= 1<<16*time.Second {
		return 1<<32 - 1
	}
	u := (uint64(d)<<16 + 5e8) / 1e9
	if u > 1<<32-1 {
		u = 1<<32 - 1
	}
	return Short(u)
}

// Duration returns s as a duration, rounded to the nanosecond.
func (s Short) Duration() time.Duration {
	return time.Duration((uint64(s)*1e9 + 1<<15) >> 16)
}
