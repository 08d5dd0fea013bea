package wire

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/proc"
	"pgregory.net/rapid"
)

// prims holds a field of every kind the primitives write, nested as
// generated code meets them.
type prims struct {
	B     bool
	I8    int8
	I16   int16
	I32   int32
	I64   int64
	I     int
	U8    uint8
	U16   uint16
	U32   uint32
	U64   uint64
	U     uint
	F32   float32
	F64   float64
	S     string
	Bytes []byte
	Ns    []int16
	Ps    []pair
}

type pair struct {
	K string
	V float32
}

func (prims) Kind() string { return "prims" }

// appendPrims and readPrims are what rpcgen writes for prims.
func appendPrims(dst []byte, v *prims) []byte {
	dst = AppendBool(dst, v.B)
	dst = AppendInt(dst, int64(v.I8))
	dst = AppendInt(dst, int64(v.I16))
	dst = AppendInt(dst, int64(v.I32))
	dst = AppendInt(dst, v.I64)
	dst = AppendInt(dst, int64(v.I))
	dst = AppendUint(dst, uint64(v.U8))
	dst = AppendUint(dst, uint64(v.U16))
	dst = AppendUint(dst, uint64(v.U32))
	dst = AppendUint(dst, v.U64)
	dst = AppendUint(dst, uint64(v.U))
	dst = AppendFloat32(dst, v.F32)
	dst = AppendFloat64(dst, v.F64)
	dst = AppendString(dst, v.S)
	dst = AppendBytes(dst, v.Bytes)
	dst = AppendLen(dst, len(v.Ns))
	for i := range v.Ns {
		dst = AppendInt(dst, int64(v.Ns[i]))
	}
	dst = AppendLen(dst, len(v.Ps))
	for i := range v.Ps {
		dst = AppendString(dst, v.Ps[i].K)
		dst = AppendFloat32(dst, v.Ps[i].V)
	}
	return dst
}

func readPrims(r *Reader, v *prims) {
	v.B = r.Bool()
	v.I8 = int8(r.Int(8))
	v.I16 = int16(r.Int(16))
	v.I32 = int32(r.Int(32))
	v.I64 = r.Int(64)
	v.I = int(r.Int(IntSize))
	v.U8 = uint8(r.Uint(8))
	v.U16 = uint16(r.Uint(16))
	v.U32 = uint32(r.Uint(32))
	v.U64 = r.Uint(64)
	v.U = uint(r.Uint(IntSize))
	v.F32 = r.Float32()
	v.F64 = r.Float64()
	v.S = r.String()
	v.Bytes = r.Bytes()
	if n := r.Len(1); n > 0 {
		v.Ns = make([]int16, n)
		for i := range v.Ns {
			v.Ns[i] = int16(r.Int(16))
		}
	}
	if n := r.Len(5); n > 0 {
		v.Ps = make([]pair, n)
		for i := range v.Ps {
			v.Ps[i].K = r.String()
			v.Ps[i].V = r.Float32()
		}
	}
}

func genPrims() *rapid.Generator[prims] {
	return rapid.Custom(func(t *rapid.T) prims {
		return prims{
			B: rapid.Bool().Draw(t, "B"), I8: rapid.Int8().Draw(t, "I8"), I16: rapid.Int16().Draw(t, "I16"),
			I32: rapid.Int32().Draw(t, "I32"), I64: rapid.Int64().Draw(t, "I64"), I: rapid.Int().Draw(t, "I"),
			U8: rapid.Uint8().Draw(t, "U8"), U16: rapid.Uint16().Draw(t, "U16"), U32: rapid.Uint32().Draw(t, "U32"),
			U64: rapid.Uint64().Draw(t, "U64"), U: rapid.Uint().Draw(t, "U"),
			F32: rapid.Float32().Draw(t, "F32"), F64: rapid.Float64().Draw(t, "F64"),
			S: oddString.Draw(t, "S"), Bytes: sliceOf(rapid.Byte(), 6).Draw(t, "Bytes"),
			Ns: sliceOf(rapid.Int16(), 5).Draw(t, "Ns"),
			Ps: sliceOf(rapid.Custom(func(t *rapid.T) pair {
				return pair{K: oddString.Draw(t, "K"), V: rapid.Float32().Draw(t, "V")}
			}), 3).Draw(t, "Ps"),
		}
	})
}

var primsCodec, _ = NewCodec([]proc.Message{prims{}})

// The primitives write, field by field, exactly what the Codec writes for
// the struct after its tag, and a Reader reads it back.
func TestPrimitivesAreTheCodecsEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genPrims().Draw(t, "v")
		want, err := primsCodec.Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got := appendPrims(nil, &v)
		if !bytes.Equal(got, want[1:]) {
			t.Fatalf("primitives wrote %x; the codec %x after its tag", got, want[1:])
		}
		var back prims
		r := NewReader(got)
		readPrims(r, &back)
		if err := r.Close(); err != nil {
			t.Fatalf("reading %x: %v", got, err)
		}
		if !reflect.DeepEqual(canonicalNaNs(back), canonicalNaNs(v)) {
			t.Fatalf("read %#v; wrote %#v", back, v)
		}
	})
}

// canonicalNaNs makes NaN fields comparable by DeepEqual: the bits are
// compared by the encoding test above.
func canonicalNaNs(v prims) prims {
	if v.F32 != v.F32 {
		v.F32 = 0
	}
	if v.F64 != v.F64 {
		v.F64 = 0
	}
	for i := range v.Ps {
		if v.Ps[i].V != v.Ps[i].V {
			v.Ps[i].V = 0
		}
	}
	return v
}

// On any input — random bytes, or a valid encoding cut or with a byte
// changed — a Reader accepts exactly what Codec.Decode accepts, and reads
// the same value.
func TestReaderAcceptsWhatDecodeAccepts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in []byte
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			in = rapid.SliceOfN(rapid.Byte(), 0, 80).Draw(t, "random")
		default:
			v := genPrims().Draw(t, "v")
			in = appendPrims(nil, &v)
			if rapid.Bool().Draw(t, "cut") {
				in = in[:rapid.IntRange(0, len(in)).Draw(t, "at")]
			} else {
				in[rapid.IntRange(0, len(in)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
			}
		}
		m, derr := primsCodec.Decode(append([]byte{1}, in...))
		var got prims
		r := NewReader(in)
		readPrims(r, &got)
		rerr := r.Close()
		if (derr == nil) != (rerr == nil) {
			t.Fatalf("%x: Decode says %v, the Reader %v", in, derr, rerr)
		}
		if rerr != nil {
			if !errors.Is(rerr, ErrMalformed) {
				t.Fatalf("%x: %v does not wrap ErrMalformed", in, rerr)
			}
			return
		}
		if want := m.(prims); !reflect.DeepEqual(canonicalNaNs(got), canonicalNaNs(want)) {
			t.Fatalf("%x: the Reader read %#v, Decode %#v", in, got, want)
		}
	})
}

// Each kind of bad input stops a Reader with an error naming where, and
// every later read returns zero.
func TestReaderErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		read func(r *Reader)
		want error
	}{
		{"truncated varint", []byte{0x80}, func(r *Reader) { r.Uint(64) }, errTruncated},
		{"long varint", []byte{0x80, 0x00}, func(r *Reader) { r.Uint(64) }, errVarint},
		{"int8 of 300", AppendInt(nil, 300), func(r *Reader) { r.Int(8) }, errRange},
		{"int8 of -129", AppendInt(nil, -129), func(r *Reader) { r.Int(8) }, errRange},
		{"uint16 of 65536", AppendUint(nil, 1<<16), func(r *Reader) { r.Uint(16) }, errRange},
		{"bool of 2", []byte{2}, func(r *Reader) { r.Bool() }, errBool},
		{"short float", []byte{1, 2, 3}, func(r *Reader) { r.Float32() }, errTruncated},
		{"string past the end", []byte{5, 'a'}, func(r *Reader) { _ = r.String() }, errLength},
		{"slice past the end", []byte{3, 1, 1}, func(r *Reader) { r.Len(1) }, errLength},
		{"slice of floats past the end", []byte{2, 0, 0, 0, 0, 0, 0, 0, 0}, func(r *Reader) { r.Len(8) }, errLength},
		// Two nested slices may not both claim the last 8 bytes.
		{"slices claiming the same bytes", append([]byte{1, 8}, make([]byte, 8)...), func(r *Reader) { r.Len(8); r.Len(1) }, errLength},
		{"trailing bytes", []byte{1, 0}, func(r *Reader) { r.Bool() }, ErrMalformed},
		{"presence byte of 2", []byte{2}, func(r *Reader) { r.Present() }, errBool},
		{"map keys out of order", []byte{1}, func(r *Reader) { r.KeyOrder(true); r.KeyOrder(false) }, errKeyOrder},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(c.in)
			c.read(r)
			err := r.Close()
			if !errors.Is(err, c.want) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v; want %v", err, c.want)
			}
			if r.Bool() || r.Int(64) != 0 || r.String() != "" || r.Len(1) != 0 || r.Bytes() != nil {
				t.Fatal("a read after the error returned a value")
			}
		})
	}
}

// A map's entries are encoded in ascending order of their keys: integers
// by value (not by their zigzag bytes), strings byte by byte.
func TestSortedKeys(t *testing.T) {
	type name string
	if got := SortedKeys(map[name]bool{"b": true, "": false, "\xff": true, "ab": false}); !slices.Equal(got, []name{"", "ab", "b", "\xff"}) {
		t.Fatalf("string keys: %q", got)
	}
	if got := SortedKeys(map[int8]int{1: 0, -1: 0, -128: 0, 127: 0, 0: 0}); !slices.Equal(got, []int8{-128, -1, 0, 1, 127}) {
		t.Fatalf("int8 keys: %v", got)
	}
	if got := SortedKeys(map[uint64]int(nil)); len(got) != 0 {
		t.Fatalf("nil map: %v", got)
	}
}
