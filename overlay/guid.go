package overlay

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/cohort-go/cohort/proc"
)

// GUID is a 128-bit identifier of a node or a key: Hi holds the most
// significant bits. Read in base 2^B it is a string of Digits digits, the
// first the most significant.
type GUID struct{ Hi, Lo uint64 }

// B is Pastry's b: identifiers are read in digits of B bits (hex digits).
const B = 4

// Digits is the number of digits of a GUID: 128/B, the rows of the
// routing table.
const Digits = 128 / B

// Radix is 2^B, the columns of the routing table.
const Radix = 1 << B

// String renders g as 32 hex digits.
func (g GUID) String() string { return fmt.Sprintf("%016x%016x", g.Hi, g.Lo) }

// MarshalText renders g as String does (JSON traces carry keys as hex).
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses 32 hex digits.
func (g *GUID) UnmarshalText(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("guid %q: want 32 hex digits", b)
	}
	hi, err1 := strconv.ParseUint(string(b[:16]), 16, 64)
	lo, err2 := strconv.ParseUint(string(b[16:]), 16, 64)
	if err1 != nil || err2 != nil || b[0] == '+' || b[16] == '+' {
		return fmt.Errorf("guid %q: want 32 hex digits", b)
	}
	g.Hi, g.Lo = hi, lo
	return nil
}

// Digit is digit i of g (0 the most significant).
func (g GUID) Digit(i int) int {
	if i < Digits/2 {
		return int(g.Hi>>(60-B*i)) & (Radix - 1)
	}
	return int(g.Lo>>(60-B*(i-Digits/2))) & (Radix - 1)
}

// SharedPrefix is the number of leading digits a and b share: Pastry's
// shl(a, b), 0 .. Digits.
func SharedPrefix(a, b GUID) int {
	if x := a.Hi ^ b.Hi; x != 0 {
		return bits.LeadingZeros64(x) / B
	}
	if x := a.Lo ^ b.Lo; x != 0 {
		return Digits/2 + bits.LeadingZeros64(x)/B
	}
	return Digits
}

// Cmp compares a and b as unsigned integers: −1, 0 or 1.
func Cmp(a, b GUID) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// Clockwise is the distance from a to b going up the ring: b − a mod 2^128.
func Clockwise(a, b GUID) GUID {
	lo, borrow := bits.Sub64(b.Lo, a.Lo, 0)
	hi, _ := bits.Sub64(b.Hi, a.Hi, borrow)
	return GUID{hi, lo}
}

// Distance is the numerical distance between a and b on the ring: the
// shorter way round.
func Distance(a, b GUID) GUID {
	cw, ccw := Clockwise(a, b), Clockwise(b, a)
	if Cmp(cw, ccw) <= 0 {
		return cw
	}
	return ccw
}

// Closer reports whether node a is numerically closer to key than node b
// is: the shorter ring distance, an exact tie going to the smaller
// identifier. It is the total order by which an object's home is chosen.
func Closer(key, a, b GUID) bool {
	switch Cmp(Distance(a, key), Distance(b, key)) {
	case -1:
		return true
	case 1:
		return false
	}
	return Cmp(a, b) < 0
}

// NodeID is the GUID of the node at address id: a hash of the address, as
// Pastry assigns nodeIds (Rowstron & Druschel: a hash of the node's IP
// address or public key), uniform on the ring. Here SplitMix64's
// finalizer, twice, over the address: not cryptographic, but uniform and
// known to everyone, so the identifier never needs to travel.
func NodeID(id proc.ID) GUID {
	x := uint64(uint32(id))
	return GUID{mix(x*2 + 0x9e3779b97f4a7c15), mix(x*2 + 1 + 0x3c6ef372fe94f82a)}
}

func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Home is the node of ids numerically closest to key: where the object
// with that key lives (proc.None if ids is empty). It is the oracle the
// routing must agree with.
func Home(key GUID, ids []proc.ID) proc.ID {
	best := proc.None
	for _, id := range ids {
		if best == proc.None || Closer(key, NodeID(id), NodeID(best)) {
			best = id
		}
	}
	return best
}
