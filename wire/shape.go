package wire

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"sort"
	"unsafe"
)

// maxDepth bounds the nesting of pointers, slices and arrays, on both
// sides: decoding a hostile input must not recurse once per input byte,
// and encoding a cyclic value must fail instead of overflowing the stack.
const maxDepth = 100

// op is how one value is encoded.
type op uint8

const (
	opBool op = iota + 1
	opInt8
	opInt16
	opInt32
	opInt64
	opUint8
	opUint16
	opUint32
	opUint64
	opFloat32
	opFloat64
	opString
	opBytes     // []byte, or any slice of a byte-sized unsigned kind
	opByteArray // [N]byte: N raw bytes
	opSlice
	opArray
	opPtr
	opStruct
	opMap
)

// shape is the encoding plan of one Go type, built once by reflection.
//
// A struct's fields are flattened: a nested struct field contributes its
// own fields, at their offsets plus its own, so that encoding a struct is
// one loop over leaves. Every other shape has a single field, itself at
// offset 0, so that the same loop encodes an element of a slice, an array
// or a pointer target.
type shape struct {
	typ    reflect.Type
	op     op
	fields []field
	elem   *shape // opSlice, opArray, opPtr; opMap: the values'
	key    *shape // opMap: the keys' (an integer or a string kind)
	n      int    // opArray, opByteArray: the length
	// min is the fewest bytes a value encodes to. A decoder bounds every
	// length it reads by the remaining input divided by the element's min,
	// so that no untrusted length allocates more than the input justifies.
	min  int
	done bool // the plan is complete (a struct's is not while its fields are planned)
}

// field is one leaf of a struct's plan: where it is and how to encode it.
type field struct {
	off   uintptr
	op    op
	shape *shape
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// builder builds the shapes of a codec's message types, sharing the shape
// of a type met twice (and so terminating on recursive types).
type builder struct {
	msg    reflect.Type // the message type whose fields are being planned, for errors
	shapes map[reflect.Type]*shape
	slices []*shape // every slice shape, checked once all shapes are complete
}

func (b *builder) errorf(path, format string, args ...any) error {
	where := "message type " + b.msg.String()
	if path != "" {
		where += " field " + path
	}
	return fmt.Errorf("wire: %s: %w: %s", where, ErrUnsupported, fmt.Sprintf(format, args...))
}

// shapeOf builds the plan of t, reached by path from the message type.
func (b *builder) shapeOf(t reflect.Type, path string) (*shape, error) {
	if s, ok := b.shapes[t]; ok {
		return s, nil
	}
	s := &shape{typ: t, min: minOf(t)}
	s.fields = []field{{op: 0, shape: s}} // op filled below; structs replace fields
	switch t.Kind() {
	case reflect.Bool:
		s.op = opBool
	case reflect.Int8:
		s.op = opInt8
	case reflect.Int16:
		s.op = opInt16
	case reflect.Int32:
		s.op = opInt32
	case reflect.Int64:
		s.op = opInt64
	case reflect.Int:
		s.op = sized(t, opInt32, opInt64)
	case reflect.Uint8:
		s.op = opUint8
	case reflect.Uint16:
		s.op = opUint16
	case reflect.Uint32:
		s.op = opUint32
	case reflect.Uint64:
		s.op = opUint64
	case reflect.Uint:
		s.op = sized(t, opUint32, opUint64)
	case reflect.Float32:
		s.op = opFloat32
	case reflect.Float64:
		s.op = opFloat64
	case reflect.String:
		s.op = opString
	case reflect.Slice:
		s.op = opSlice
		if t.Elem().Kind() == reflect.Uint8 {
			s.op = opBytes
			break
		}
		e, err := b.shapeOf(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s.elem = e
		b.slices = append(b.slices, s)
	case reflect.Array:
		s.n = t.Len()
		if t.Elem().Kind() == reflect.Uint8 {
			s.op = opByteArray
			break
		}
		e, err := b.shapeOf(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s.op, s.elem = opArray, e
	case reflect.Pointer:
		s.op = opPtr
		s.fields[0].op = opPtr
		// A pointer may lead back to a type being planned (a list node
		// pointing to the next): register this one first.
		b.shapes[t] = s
		e, err := b.shapeOf(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		s.elem = e
	case reflect.Struct:
		s.op = opStruct
		s.fields = nil
		b.shapes[t] = s
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			if !f.IsExported() {
				return nil, b.errorf(p, "unexported field (only exported fields can be set when decoding)")
			}
			fs, err := b.shapeOf(f.Type, p)
			if err != nil {
				return nil, err
			}
			if fs.op == opStruct && fs.done {
				for _, g := range fs.fields {
					g.off += f.Offset
					s.fields = append(s.fields, g)
				}
				continue
			}
			// A leaf, or a struct whose plan is still being made: one
			// that holds, through a pointer or a slice, the struct
			// being planned here (type S struct{ P *T }; type T
			// struct{ S S }). It is encoded by its own plan, complete
			// by then.
			s.fields = append(s.fields, field{off: f.Offset, op: fs.op, shape: fs})
		}
		s.done = true
		return s, nil
	case reflect.Map:
		s.op = opMap
		switch t.Key().Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		default:
			return nil, b.errorf(path, "map type %s: keys are integers or strings, whose order makes the encoding one (not %s)", t, t.Key().Kind())
		}
		k, err := b.shapeOf(t.Key(), path+"[key]")
		if err != nil {
			return nil, err
		}
		e, err := b.shapeOf(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s.key, s.elem = k, e
	case reflect.Interface:
		return nil, b.errorf(path, "interface type %s: the decoder could not know the concrete type", t)
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Uintptr:
		return nil, b.errorf(path, "%s type %s cannot cross a process boundary", t.Kind(), t)
	default:
		return nil, b.errorf(path, "%s type %s is not supported", t.Kind(), t)
	}
	s.fields[0].op = s.op
	s.done = true
	b.shapes[t] = s
	return s, nil
}

// minOf is the fewest bytes a value of type t encodes to: a byte for a
// number, a bool, a length or a presence byte, more for floats, arrays and
// structs. It looks only at what a value holds inline (fields, array
// elements), which cannot cycle, and counts only bytes of the value's own,
// never those of what its slices and pointers lead to.
func minOf(t reflect.Type) int {
	switch t.Kind() {
	case reflect.Float32:
		return 4
	case reflect.Float64:
		return 8
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return t.Len()
		}
		return t.Len() * minOf(t.Elem())
	case reflect.Struct:
		n := 0
		for i := 0; i < t.NumField(); i++ {
			n += minOf(t.Field(i).Type)
		}
		return n
	}
	return 1
}

func sized(t reflect.Type, small, large op) op {
	if t.Size() == 4 {
		return small
	}
	return large
}

// appendFields encodes the value at p according to the leaves fs.
func appendFields(dst []byte, fs []field, p unsafe.Pointer, depth int) ([]byte, error) {
	for i := range fs {
		f := &fs[i]
		q := unsafe.Add(p, f.off)
		switch f.op {
		case opBool:
			if *(*bool)(q) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case opInt8:
			dst = appendVarint(dst, int64(*(*int8)(q)))
		case opInt16:
			dst = appendVarint(dst, int64(*(*int16)(q)))
		case opInt32:
			dst = appendVarint(dst, int64(*(*int32)(q)))
		case opInt64:
			dst = appendVarint(dst, *(*int64)(q))
		case opUint8:
			dst = appendUvarint(dst, uint64(*(*uint8)(q)))
		case opUint16:
			dst = appendUvarint(dst, uint64(*(*uint16)(q)))
		case opUint32:
			dst = appendUvarint(dst, uint64(*(*uint32)(q)))
		case opUint64:
			dst = appendUvarint(dst, *(*uint64)(q))
		case opFloat32:
			dst = binary.LittleEndian.AppendUint32(dst, *(*uint32)(q))
		case opFloat64:
			dst = binary.LittleEndian.AppendUint64(dst, *(*uint64)(q))
		case opString:
			s := *(*string)(q)
			dst = appendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		case opBytes:
			s := *(*[]byte)(q)
			dst = appendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		case opByteArray:
			dst = append(dst, unsafe.Slice((*byte)(q), f.shape.n)...)
		case opSlice:
			if depth >= maxDepth {
				return dst, errDepth
			}
			h := (*sliceHeader)(q)
			dst = appendUvarint(dst, uint64(h.len))
			e := f.shape.elem
			if out, ok := appendNumbers(dst, e.op, h.data, h.len); ok {
				dst = out
				continue
			}
			size := e.typ.Size()
			var err error
			for j := 0; j < h.len; j++ {
				if dst, err = appendFields(dst, e.fields, unsafe.Add(h.data, uintptr(j)*size), depth+1); err != nil {
					return dst, err
				}
			}
		case opArray:
			e := f.shape.elem
			if e.min == 0 {
				continue // elements with nothing to encode
			}
			if depth >= maxDepth {
				return dst, errDepth
			}
			size := e.typ.Size()
			var err error
			for j := 0; j < f.shape.n; j++ {
				if dst, err = appendFields(dst, e.fields, unsafe.Add(q, uintptr(j)*size), depth+1); err != nil {
					return dst, err
				}
			}
		case opStruct:
			var err error
			if dst, err = appendFields(dst, f.shape.fields, q, depth); err != nil {
				return dst, err
			}
		case opMap:
			if depth >= maxDepth {
				return dst, errDepth
			}
			var err error
			if dst, err = appendMap(dst, f.shape, q, depth); err != nil {
				return dst, err
			}
		case opPtr:
			ptr := *(*unsafe.Pointer)(q)
			if ptr == nil {
				dst = append(dst, 0)
				continue
			}
			if depth >= maxDepth {
				return dst, errDepth
			}
			dst = append(dst, 1)
			var err error
			if dst, err = appendFields(dst, f.shape.elem.fields, ptr, depth+1); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// decodeFields decodes b into the zeroed value at p according to the
// leaves fs, and returns what follows. On an error, the returned slice
// starts where the error was found.
//
// budget is what is left of the input's bytes for the slices' elements
// to claim. Every element's min counts bytes of its own (its numbers,
// length prefixes, presence bytes), never its children's, so in a valid
// input the claims of all slices, l·min each, add up to no more than the
// input. Checking each length against the remaining input alone would not
// do: a hostile input could nest slices, each claiming all the rest, and
// make every level allocate for the same bytes.
func decodeFields(b []byte, fs []field, p unsafe.Pointer, depth int, budget *int) ([]byte, error) {
	for i := range fs {
		f := &fs[i]
		q := unsafe.Add(p, f.off)
		switch f.op {
		case opBool:
			if len(b) == 0 {
				return b, errTruncated
			}
			if b[0] > 1 {
				return b, errBool
			}
			*(*bool)(q) = b[0] == 1
			b = b[1:]
		case opInt8, opInt16, opInt32, opInt64:
			v, n, err := varint(b)
			if err != nil {
				return b, err
			}
			switch f.op {
			case opInt8:
				if int64(int8(v)) != v {
					return b, errRange
				}
				*(*int8)(q) = int8(v)
			case opInt16:
				if int64(int16(v)) != v {
					return b, errRange
				}
				*(*int16)(q) = int16(v)
			case opInt32:
				if int64(int32(v)) != v {
					return b, errRange
				}
				*(*int32)(q) = int32(v)
			default:
				*(*int64)(q) = v
			}
			b = b[n:]
		case opUint8, opUint16, opUint32, opUint64:
			v, n, err := uvarint(b)
			if err != nil {
				return b, err
			}
			switch f.op {
			case opUint8:
				if v > 0xff {
					return b, errRange
				}
				*(*uint8)(q) = uint8(v)
			case opUint16:
				if v > 0xffff {
					return b, errRange
				}
				*(*uint16)(q) = uint16(v)
			case opUint32:
				if v > 0xffffffff {
					return b, errRange
				}
				*(*uint32)(q) = uint32(v)
			default:
				*(*uint64)(q) = v
			}
			b = b[n:]
		case opFloat32:
			if len(b) < 4 {
				return b, errTruncated
			}
			*(*uint32)(q) = binary.LittleEndian.Uint32(b)
			b = b[4:]
		case opFloat64:
			if len(b) < 8 {
				return b, errTruncated
			}
			*(*uint64)(q) = binary.LittleEndian.Uint64(b)
			b = b[8:]
		case opString, opBytes:
			l, n, err := uvarint(b)
			if err != nil {
				return b, err
			}
			if l > uint64(len(b)-n) {
				return b, errLength
			}
			b = b[n:]
			if l > 0 {
				if f.op == opString {
					*(*string)(q) = string(b[:l])
				} else {
					*(*[]byte)(q) = append([]byte(nil), b[:l]...)
				}
			}
			b = b[l:]
		case opByteArray:
			n := f.shape.n
			if len(b) < n {
				return b, errTruncated
			}
			copy(unsafe.Slice((*byte)(q), n), b)
			b = b[n:]
		case opSlice:
			if depth >= maxDepth {
				return b, errDepth
			}
			l, n, err := uvarint(b)
			if err != nil {
				return b, err
			}
			e := f.shape.elem
			if l > uint64((len(b)-n)/e.min) || int(l)*e.min > *budget {
				return b, errLength
			}
			*budget -= int(l) * e.min
			b = b[n:]
			if l == 0 {
				continue
			}
			h := (*sliceHeader)(q)
			if data := makeNumbers(e.op, int(l)); data != nil {
				*h = sliceHeader{data: data, len: int(l), cap: int(l)}
				if b, err = decodeNumbers(b, e.op, data, int(l)); err != nil {
					return b, err
				}
				continue
			}
			// Grow allocates the backing array with the element type's
			// layout, so the collector sees the pointers in it.
			v := reflect.NewAt(f.shape.typ, q).Elem()
			v.Grow(int(l))
			v.SetLen(int(l))
			size := e.typ.Size()
			for j := 0; j < int(l); j++ {
				if b, err = decodeFields(b, e.fields, unsafe.Add(h.data, uintptr(j)*size), depth+1, budget); err != nil {
					return b, err
				}
			}
		case opArray:
			e := f.shape.elem
			if e.min == 0 {
				continue
			}
			if depth >= maxDepth {
				return b, errDepth
			}
			size := e.typ.Size()
			var err error
			for j := 0; j < f.shape.n; j++ {
				if b, err = decodeFields(b, e.fields, unsafe.Add(q, uintptr(j)*size), depth+1, budget); err != nil {
					return b, err
				}
			}
		case opStruct:
			var err error
			if b, err = decodeFields(b, f.shape.fields, q, depth, budget); err != nil {
				return b, err
			}
		case opMap:
			if depth >= maxDepth {
				return b, errDepth
			}
			var err error
			if b, err = decodeMap(b, f.shape, q, depth, budget); err != nil {
				return b, err
			}
		case opPtr:
			if len(b) == 0 {
				return b, errTruncated
			}
			switch b[0] {
			case 0:
				b = b[1:]
				continue
			case 1:
			default:
				return b, errBool
			}
			if depth >= maxDepth {
				return b, errDepth
			}
			e := f.shape.elem
			ptr := reflect.New(e.typ).UnsafePointer()
			var err error
			if b, err = decodeFields(b[1:], e.fields, ptr, depth+1, budget); err != nil {
				return b, err
			}
			*(*unsafe.Pointer)(q) = ptr
		}
	}
	return b, nil
}

// Maps go through package reflect, entry by entry: they are rare in
// messages, and a map's entries must be put in order anyway.

// appendMap encodes the map at q, of shape s: its length, then each entry,
// key then value, in ascending order of the keys.
func appendMap(dst []byte, s *shape, q unsafe.Pointer, depth int) ([]byte, error) {
	// A map value is one pointer. Reflect on a copy of it, so that q does
	// not escape (the caller's message would move to the heap with it).
	hdr := *(*unsafe.Pointer)(q)
	m := reflect.NewAt(s.typ, unsafe.Pointer(&hdr)).Elem()
	dst = appendUvarint(dst, uint64(m.Len()))
	if m.Len() == 0 {
		return dst, nil
	}
	keys := reflect.MakeSlice(reflect.SliceOf(s.key.typ), 0, m.Len())
	for it := m.MapRange(); it.Next(); {
		keys = reflect.Append(keys, it.Key())
	}
	sort.Slice(keys.Interface(), func(i, j int) bool { return keyLess(keys.Index(i), keys.Index(j)) })
	v := reflect.New(s.elem.typ).Elem()
	var err error
	for i := range keys.Len() {
		k := keys.Index(i)
		if dst, err = appendFields(dst, s.key.fields, k.Addr().UnsafePointer(), depth+1); err != nil {
			return dst, err
		}
		v.Set(m.MapIndex(k))
		if dst, err = appendFields(dst, s.elem.fields, v.Addr().UnsafePointer(), depth+1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// keyLess orders map keys: integers by value, strings byte by byte.
func keyLess(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() < b.Int()
	case reflect.String:
		return a.String() < b.String()
	}
	return a.Uint() < b.Uint()
}

// decodeMap decodes a map of shape s into the zeroed map at q, refusing
// keys that are not each above the one before (so that a map has one
// encoding, and a key cannot come twice). Its length is checked as a
// slice's is, an entry claiming the key's min and the value's.
func decodeMap(b []byte, s *shape, q unsafe.Pointer, depth int, budget *int) ([]byte, error) {
	l, n, err := uvarint(b)
	if err != nil {
		return b, err
	}
	min := s.key.min + s.elem.min
	if l > uint64((len(b)-n)/min) || int(l)*min > *budget {
		return b, errLength
	}
	*budget -= int(l) * min
	b = b[n:]
	if l == 0 {
		return b, nil // nil, as an empty slice decodes
	}
	m := reflect.MakeMapWithSize(s.typ, int(l))
	k, prev := reflect.New(s.key.typ).Elem(), reflect.New(s.key.typ).Elem()
	v := reflect.New(s.elem.typ).Elem()
	for i := range int(l) {
		k.SetZero()
		if b, err = decodeFields(b, s.key.fields, k.Addr().UnsafePointer(), depth+1, budget); err != nil {
			return b, err
		}
		if i > 0 && !keyLess(prev, k) {
			return b, errKeyOrder
		}
		prev.Set(k)
		v.SetZero()
		if b, err = decodeFields(b, s.elem.fields, v.Addr().UnsafePointer(), depth+1, budget); err != nil {
			return b, err
		}
		m.SetMapIndex(k, v)
	}
	*(*unsafe.Pointer)(q) = m.UnsafePointer() // a map value is one pointer
	return b, nil
}

// makeNumbers allocates the backing array of a slice of n numbers or bools
// of the kind op, or returns nil for other kinds. A named element type
// (proc.ID) has the layout of its kind and holds no pointers, so an array
// of the kind serves it, without the reflect call.
func makeNumbers(o op, n int) unsafe.Pointer {
	switch o {
	case opBool:
		return unsafe.Pointer(unsafe.SliceData(make([]bool, n)))
	case opInt8:
		return unsafe.Pointer(unsafe.SliceData(make([]int8, n)))
	case opInt16:
		return unsafe.Pointer(unsafe.SliceData(make([]int16, n)))
	case opInt32:
		return unsafe.Pointer(unsafe.SliceData(make([]int32, n)))
	case opInt64:
		return unsafe.Pointer(unsafe.SliceData(make([]int64, n)))
	case opUint16:
		return unsafe.Pointer(unsafe.SliceData(make([]uint16, n)))
	case opUint32:
		return unsafe.Pointer(unsafe.SliceData(make([]uint32, n)))
	case opUint64:
		return unsafe.Pointer(unsafe.SliceData(make([]uint64, n)))
	case opFloat32:
		return unsafe.Pointer(unsafe.SliceData(make([]float32, n)))
	case opFloat64:
		return unsafe.Pointer(unsafe.SliceData(make([]float64, n)))
	}
	return nil
}

// Slices of integers are the common case (vector clocks, process lists):
// appendNumbers and decodeNumbers encode them in one loop, without a call
// per element. ok is false for other element kinds.

func appendNumbers(dst []byte, o op, p unsafe.Pointer, n int) (out []byte, ok bool) {
	switch o {
	case opInt8:
		return appendInts[int8](dst, p, n), true
	case opInt16:
		return appendInts[int16](dst, p, n), true
	case opInt32:
		return appendInts[int32](dst, p, n), true
	case opInt64:
		return appendInts[int64](dst, p, n), true
	case opUint16:
		return appendUints[uint16](dst, p, n), true
	case opUint32:
		return appendUints[uint32](dst, p, n), true
	case opUint64:
		return appendUints[uint64](dst, p, n), true
	}
	return dst, false
}

func appendInts[T int8 | int16 | int32 | int64](dst []byte, p unsafe.Pointer, n int) []byte {
	for _, v := range unsafe.Slice((*T)(p), n) {
		dst = appendVarint(dst, int64(v))
	}
	return dst
}

func appendUints[T uint16 | uint32 | uint64](dst []byte, p unsafe.Pointer, n int) []byte {
	for _, v := range unsafe.Slice((*T)(p), n) {
		dst = appendUvarint(dst, uint64(v))
	}
	return dst
}

// decodeNumbers decodes n elements of a kind makeNumbers allocates, into p.
func decodeNumbers(b []byte, o op, p unsafe.Pointer, n int) ([]byte, error) {
	switch o {
	case opInt8:
		return decodeInts[int8](b, p, n)
	case opInt16:
		return decodeInts[int16](b, p, n)
	case opInt32:
		return decodeInts[int32](b, p, n)
	case opInt64:
		return decodeInts[int64](b, p, n)
	case opUint16:
		return decodeUints[uint16](b, p, n)
	case opUint32:
		return decodeUints[uint32](b, p, n)
	case opUint64:
		return decodeUints[uint64](b, p, n)
	}
	// bool and floats: one element at a time.
	size := uintptr(1)
	switch o {
	case opFloat32:
		size = 4
	case opFloat64:
		size = 8
	}
	leaf := []field{{op: o}}
	var err error
	for j := 0; j < n; j++ {
		if b, err = decodeFields(b, leaf, unsafe.Add(p, uintptr(j)*size), 0, nil); err != nil {
			return b, err
		}
	}
	return b, nil
}

func decodeInts[T int8 | int16 | int32 | int64](b []byte, p unsafe.Pointer, n int) ([]byte, error) {
	s := unsafe.Slice((*T)(p), n)
	for j := range s {
		v, k, err := varint(b)
		if err != nil {
			return b, err
		}
		if int64(T(v)) != v {
			return b, errRange
		}
		s[j] = T(v)
		b = b[k:]
	}
	return b, nil
}

func decodeUints[T uint16 | uint32 | uint64](b []byte, p unsafe.Pointer, n int) ([]byte, error) {
	s := unsafe.Slice((*T)(p), n)
	for j := range s {
		v, k, err := uvarint(b)
		if err != nil {
			return b, err
		}
		if uint64(T(v)) != v {
			return b, errRange
		}
		s[j] = T(v)
		b = b[k:]
	}
	return b, nil
}
