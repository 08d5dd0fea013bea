package wire

import (
	"encoding/binary"
	"fmt"
)

// The decoders accept only the canonical (shortest) varint form, so that
// every input that decodes re-encodes to the same bytes: 0x80 0x00 is a
// longer spelling of 0 and is refused.

var (
	errTruncated = fmt.Errorf("%w: truncated", ErrMalformed)
	errVarint    = fmt.Errorf("%w: varint overflows 64 bits or is not in its shortest form", ErrMalformed)
	errRange     = fmt.Errorf("%w: integer out of range for its field", ErrMalformed)
	errBool      = fmt.Errorf("%w: bool or presence byte is neither 0 nor 1", ErrMalformed)
	errLength    = fmt.Errorf("%w: length exceeds the remaining input", ErrMalformed)
	errDepth     = fmt.Errorf("%w: nested deeper than %d levels", ErrMalformed, maxDepth)
	errKeyOrder  = fmt.Errorf("%w: map key not above the previous key (out of order, or repeated)", ErrMalformed)
)

// uvarint reads a canonical unsigned varint from the front of b and
// returns it with the number of bytes read, or an error.
func uvarint(b []byte) (uint64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1, nil // the common case: one byte
	}
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if i == len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, 0, errVarint // more than 64 bits
			}
			if c == 0 {
				return 0, 0, errVarint // a longer spelling of a shorter value
			}
			return x | uint64(c)<<s, i + 1, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0, errVarint
}

// varint reads a canonical zigzag-encoded signed varint.
func varint(b []byte) (int64, int, error) {
	u, n, err := uvarint(b)
	return int64(u>>1) ^ -int64(u&1), n, err
}

// appendUvarint and appendVarint write the canonical forms.
func appendUvarint(dst []byte, v uint64) []byte {
	if v < 0x80 {
		return append(dst, byte(v))
	}
	return binary.AppendUvarint(dst, v)
}

func appendVarint(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}
