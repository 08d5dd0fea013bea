package ntp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// HeaderLen is the length of the NTP header, the whole of an ordinary
// client request or server reply.
const HeaderLen = 48

// ErrMalformed is wrapped by every error of Decode and Encode; the message
// names the bad field and its value.
var ErrMalformed = errors.New("malformed NTP packet")

// Leap is the leap indicator: a warning of a leap second to be inserted or
// deleted at the end of the current day, or an alarm that the clock is not
// synchronised.
type Leap uint8

const (
	LeapNone    Leap = 0 // no warning
	LeapInsert  Leap = 1 // the last minute of the day has 61 seconds
	LeapDelete  Leap = 2 // the last minute of the day has 59 seconds
	LeapUnknown Leap = 3 // alarm: the clock is unsynchronised
)

// Mode is the association mode of a packet.
type Mode uint8

const (
	ModeReserved         Mode = 0
	ModeSymmetricActive  Mode = 1
	ModeSymmetricPassive Mode = 2
	ModeClient           Mode = 3
	ModeServer           Mode = 4
	ModeBroadcast        Mode = 5
	ModeControl          Mode = 6 // ntpq's control messages: another format
	ModePrivate          Mode = 7 // ntpdc's private messages: another format
)

var modeNames = [...]string{"reserved", "symmetric active", "symmetric passive", "client", "server", "broadcast", "control", "private"}

// String names the mode: "4 (server)".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return fmt.Sprintf("%d (%s)", uint8(m), modeNames[m])
	}
	return fmt.Sprintf("%d", uint8(m))
}

// RefID is the reference identifier. At stratum 0 it is a kiss code
// ("RATE", "DENY"); at stratum 1 it names the kind of reference clock
// ("GPS", "PPS", "LOCL"); above, it is the IPv4 address of the server's
// own source (or the first four bytes of the MD5 hash of an IPv6 one).
type RefID [4]byte

// RefIDOf returns the reference identifier for s: a dotted IPv4 address
// ("127.127.1.1") or a code of one to four printable ASCII characters
// ("LOCL", "GPS"), padded with zero bytes.
func RefIDOf(s string) (RefID, error) {
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return RefID(a.As4()), nil
	}
	var r RefID
	if len(s) < 1 || len(s) > 4 {
		return r, fmt.Errorf("reference id %q: want an IPv4 address or 1 to 4 ASCII characters", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return r, fmt.Errorf("reference id %q: byte %#x is not a printable ASCII character", s, s[i])
		}
		r[i] = s[i]
	}
	return r, nil
}

// code returns r as an ASCII code, and whether it is one: printable
// characters, then nothing but zero bytes.
func (r RefID) code() (string, bool) {
	s := strings.TrimRight(string(r[:]), "\x00")
	if s == "" {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "", false
		}
	}
	return s, true
}

// Format shows r the way a packet of the given stratum means it: a code at
// stratum 0 and 1, an address above. An address whose bytes also spell a
// code has the code added, "76.79.67.76 (LOCL)", since servers on an
// undisciplined local clock send "LOCL" at any stratum. What fits neither
// reading is shown in hex.
func (r RefID) Format(stratum uint8) string {
	c, isCode := r.code()
	switch {
	case stratum <= 1 && isCode:
		return c
	case stratum <= 1:
		return fmt.Sprintf("%x", r[:])
	case isCode && len(c) == 4:
		return fmt.Sprintf("%s (%s)", netip.AddrFrom4(r), c)
	default:
		return netip.AddrFrom4(r).String()
	}
}

// Packet is the NTPv4 header (RFC 5905 §7.3). Extension fields and a
// message authentication code may follow it on the wire; Decode skips
// them and Encode writes none.
type Packet struct {
	Leap      Leap  // 0..3
	Version   uint8 // 1..4; Cohort sends 4 and answers in the request's version
	Mode      Mode  // 1..5: modes 6 and 7 have formats of their own
	Stratum   uint8 // 0 kiss-o'-death, 1 primary, 2..15 secondary, 16 unsynchronised
	Poll      int8  // log₂ of the poll interval in seconds
	Precision int8  // log₂ of the clock's precision in seconds: −20 ≈ 1 µs

	RootDelay      Short // round-trip delay to the reference clock
	RootDispersion Short // error bound relative to the reference clock
	RefID          RefID

	Reference Timestamp // when the clock was last set or corrected
	Origin    Timestamp // in a reply: the request's Transmit (T1)
	Receive   Timestamp // when the request arrived (T2)
	Transmit  Timestamp // when the packet left (T3 in a reply)
}

// check returns the first field that no NTPv4 header may hold.
func (p Packet) check() error {
	switch {
	case p.Leap > LeapUnknown:
		return fmt.Errorf("%w: leap indicator %d (want 0 to 3)", ErrMalformed, p.Leap)
	case p.Version < 1 || p.Version > 4:
		return fmt.Errorf("%w: version %d (want 1 to 4)", ErrMalformed, p.Version)
	case p.Mode == ModeReserved:
		return fmt.Errorf("%w: mode %v", ErrMalformed, p.Mode)
	case p.Mode > ModeBroadcast:
		return fmt.Errorf("%w: mode %v has a format of its own, not the NTP header", ErrMalformed, p.Mode)
	}
	return nil
}

// Decode reads the header at the start of b. Bytes beyond the 48 of the
// header — extension fields, a MAC — are ignored. The error, wrapping
// ErrMalformed, names the length or the field that is wrong.
func Decode(b []byte) (Packet, error) {
	if len(b) < HeaderLen {
		return Packet{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrMalformed, len(b), HeaderLen)
	}
	be := binary.BigEndian
	p := Packet{
		Leap:           Leap(b[0] >> 6),
		Version:        b[0] >> 3 & 7,
		Mode:           Mode(b[0] & 7),
		Stratum:        b[1],
		Poll:           int8(b[2]),
		Precision:      int8(b[3]),
		RootDelay:      Short(be.Uint32(b[4:])),
		RootDispersion: Short(be.Uint32(b[8:])),
		RefID:          RefID(b[12:16]),
		Reference:      Timestamp(be.Uint64(b[16:])),
		Origin:         Timestamp(be.Uint64(b[24:])),
		Receive:        Timestamp(be.Uint64(b[32:])),
		Transmit:       Timestamp(be.Uint64(b[40:])),
	}
	if err := p.check(); err != nil {
		return Packet{}, err
	}
	return p, nil
}

// Append appends the 48-byte header to dst. It refuses a packet Decode
// would refuse, naming the field.
func (p Packet) Append(dst []byte) ([]byte, error) {
	if err := p.check(); err != nil {
		return dst, err
	}
	be := binary.BigEndian
	dst = append(dst, byte(p.Leap)<<6|p.Version<<3|byte(p.Mode), p.Stratum, byte(p.Poll), byte(p.Precision))
	dst = be.AppendUint32(dst, uint32(p.RootDelay))
	dst = be.AppendUint32(dst, uint32(p.RootDispersion))
	dst = append(dst, p.RefID[:]...)
	for _, ts := range []Timestamp{p.Reference, p.Origin, p.Receive, p.Transmit} {
		dst = be.AppendUint64(dst, uint64(ts))
	}
	return dst, nil
}

// Encode returns the 48-byte header.
func (p Packet) Encode() ([]byte, error) {
	return p.Append(make([]byte, 0, HeaderLen))
}
