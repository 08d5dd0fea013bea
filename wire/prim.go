package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The primitives below write and read the encoding of the table in the
// package comment one value at a time, without reflection: they are what
// generated code (the RPC stubs of package liverpc/rpcgen) calls, field by
// field, in declaration order. A struct encoded with them is the bytes the
// Codec writes for it after the tag, and a Reader accepts exactly what
// Decode accepts: canonical varints, bools of 0 or 1, integers in their
// field's range, lengths that the remaining input and the whole input's
// budget can pay for.

// AppendBool appends b as one byte, 0 or 1.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendInt appends a signed integer of any size as a zigzag varint.
func AppendInt(dst []byte, v int64) []byte { return appendVarint(dst, v) }

// AppendUint appends an unsigned integer of any size as a uvarint.
func AppendUint(dst []byte, v uint64) []byte { return appendUvarint(dst, v) }

// AppendFloat32 appends the four little-endian bytes of v's IEEE 754 bits.
func AppendFloat32(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

// AppendFloat64 appends the eight little-endian bytes of v's IEEE 754 bits.
func AppendFloat64(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// AppendString appends s's length as a uvarint, then its bytes.
func AppendString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBytes appends b's length as a uvarint, then its bytes.
func AppendBytes(dst []byte, b []byte) []byte {
	dst = appendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// AppendLen appends the length of a slice (other than []byte) whose
// elements follow, or of a map whose entries follow.
func AppendLen(dst []byte, n int) []byte { return appendUvarint(dst, uint64(n)) }

// For generated code, the primitives also carry the two kinds whose
// encoding is more than a primitive's, as the Codec encodes them:
//
//	pointer  a presence byte: 0 for nil; 1, then the value it points to
//	map      its length as a uvarint, then each entry, key then value,
//	         in strictly ascending order of the keys — integers by value,
//	         strings byte by byte — so that a map has one encoding
//
// A map's keys are integers or strings: floats have no such order (NaN
// is not equal to itself, and -0 equals +0 but encodes differently).

// SortedKeys returns m's keys in ascending order, the order in which its
// entries are encoded.
func SortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Reader decodes values from an input one at a time. Its first error
// sticks: every later read returns a zero value (and Len returns 0, so
// that loops over elements end), and Err reports it with the byte it was
// found at. A Reader does not keep the input: strings and byte slices are
// copied.
type Reader struct {
	b      []byte
	n      int // the input's length
	budget int // what is left of the input for slice elements to claim
	err    error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b, n: len(b), budget: len(b)} }

// Err returns the first error, wrapping ErrMalformed, or nil.
func (r *Reader) Err() error { return r.err }

// Close reports the first error, or an error if input is left over.
func (r *Reader) Close() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("wire: %w: %d bytes after the value", ErrMalformed, len(r.b))
	}
	return r.err
}

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("wire: at byte %d: %w", r.n-len(r.b), err)
		r.b = nil
	}
}

// Bool reads a bool: one byte, 0 or 1.
func (r *Reader) Bool() bool {
	switch {
	case r.err != nil:
		return false
	case len(r.b) == 0:
		r.fail(errTruncated)
		return false
	case r.b[0] > 1:
		r.fail(errBool)
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

// Int reads a signed integer that must fit in size bits (8, 16, 32 or 64).
func (r *Reader) Int(size int) int64 {
	if r.err != nil {
		return 0
	}
	v, n, err := varint(r.b)
	if err != nil {
		r.fail(err)
		return 0
	}
	if size < 64 && (v < -1<<(size-1) || v >= 1<<(size-1)) {
		r.fail(errRange)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Uint reads an unsigned integer that must fit in size bits (8, 16, 32 or
// 64).
func (r *Reader) Uint(size int) uint64 {
	if r.err != nil {
		return 0
	}
	v, n, err := uvarint(r.b)
	if err != nil {
		r.fail(err)
		return 0
	}
	if size < 64 && v>>size != 0 {
		r.fail(errRange)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// IntSize is the size of int and uint in bits, for Int and Uint: an int
// field is encoded as the Codec encodes it on this platform.
const IntSize = bits.UintSize

// Float32 reads four little-endian bytes of IEEE 754 bits.
func (r *Reader) Float32() float32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.fail(errTruncated)
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

// Float64 reads eight little-endian bytes of IEEE 754 bits.
func (r *Reader) Float64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail(errTruncated)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// raw reads a length and that many bytes, not copied.
func (r *Reader) raw() []byte {
	if r.err != nil {
		return nil
	}
	l, n, err := uvarint(r.b)
	if err != nil {
		r.fail(err)
		return nil
	}
	if l > uint64(len(r.b)-n) {
		r.fail(errLength)
		return nil
	}
	v := r.b[n : n+int(l)]
	r.b = r.b[n+int(l):]
	return v
}

// String reads a length and that many bytes.
func (r *Reader) String() string { return string(r.raw()) }

// Bytes reads a length and that many bytes, copied; an empty slice is nil.
func (r *Reader) Bytes() []byte {
	b := r.raw()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Present reads a pointer's presence byte: whether a value follows.
func (r *Reader) Present() bool { return r.Bool() }

// KeyOrder checks a map's key as the caller reads its entries: ascending
// says it is the first key, or above the one before. A key that is not —
// out of order, or repeated — stops the Reader, so that a map has a
// single encoding and a key cannot be given twice.
func (r *Reader) KeyOrder(ascending bool) {
	if !ascending && r.err == nil {
		r.fail(errKeyOrder)
	}
}

// MaxDepth bounds the nesting of pointers, slices and maps in a value:
// the Codec refuses anything deeper on both sides, and package
// liverpc/rpcgen refuses types nested deeper.
const MaxDepth = maxDepth

// Len reads the length of a slice, or of a map, whose elements (entries)
// each encode to at least min bytes (min ≥ 1), and checks it before the caller allocates: the
// elements must fit in the remaining input, and all the slices' claims
// together, length × min each, in the whole input — so that nested slices
// cannot each claim the rest of the input anew (see decodeFields).
func (r *Reader) Len(min int) int {
	if r.err != nil {
		return 0
	}
	if min < 1 {
		panic("wire: Reader.Len: min must be at least 1")
	}
	l, n, err := uvarint(r.b)
	if err != nil {
		r.fail(err)
		return 0
	}
	if l > uint64((len(r.b)-n)/min) || int(l)*min > r.budget {
		r.fail(errLength)
		return 0
	}
	r.budget -= int(l) * min
	r.b = r.b[n:]
	return int(l)
}
