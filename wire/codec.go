package wire

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/cohort-go/cohort/proc"
)

var (
	// ErrUnsupported is wrapped by NewCodec's errors: a message type that
	// cannot be encoded (an unexported field, a map keyed by floats, an
	// interface ...).
	ErrUnsupported = errors.New("unsupported message type")
	// ErrUnregistered is wrapped by Append's error for a message whose type
	// is not in the codec's list.
	ErrUnregistered = errors.New("unregistered message type")
	// ErrUnknownTag is wrapped by Decode's error for a tag the codec does
	// not know: the peer runs a newer list of messages, or garbage.
	ErrUnknownTag = errors.New("unknown message tag")
	// ErrMalformed is wrapped by every error about bytes that are not a
	// canonical encoding: truncated, trailing bytes, lengths beyond the
	// input, values out of range for their field.
	ErrMalformed = errors.New("malformed input")
)

// Codec encodes and decodes the messages of one algorithm. It is built
// once from the algorithm's message list (proc.Algorithm.Messages) and is
// then immutable: safe for concurrent use.
type Codec struct {
	types  []msgType                   // by tag − 1
	byType map[unsafe.Pointer]*msgType // by the type word of an interface holding one
}

// msgType is one registered message type and its plan.
type msgType struct {
	tag    uint64
	typ    reflect.Type   // as registered: a struct S, or *S
	elem   reflect.Type   // the struct S
	ptr    bool           // registered as *S
	direct bool           // a value of typ is stored in the interface word itself
	word   unsafe.Pointer // the type word of an interface holding a typ
	fields []field        // the plan of S
}

// eface is the layout of an interface value: a type word (for an empty
// interface, the type itself) and a data word (a pointer to the value, or
// the value itself for pointer-shaped types).
//
// The codec reads and writes it directly, and reads and writes fields at
// offsets computed once by reflection, because the reflect.Value route
// costs several times more per message and allocates twice per decoded
// value (once for the value, once more to box a copy of it); the hot path
// of the live runtime encodes and decodes every message. The offsets and
// types come from reflect itself, the type word is the one the runtime
// gives a value of that type, and the tests round-trip every shape.
type eface struct {
	typ, data unsafe.Pointer
}

func efaceOf(p *any) *eface { return (*eface)(unsafe.Pointer(p)) }

// NewCodec builds a codec for the message types of msgs, whose positions
// from 1 are their tags. Each must be a struct (or a pointer to one) whose
// fields are all exported and of the supported kinds: bool, integers,
// floats, strings, slices, arrays, structs, pointers and maps keyed by
// integers or strings, nested to any depth. A type may appear once. The
// errors name the type and field at fault and wrap ErrUnsupported.
func NewCodec(msgs []proc.Message) (*Codec, error) {
	c := &Codec{types: make([]msgType, len(msgs)), byType: make(map[unsafe.Pointer]*msgType, len(msgs))}
	b := &builder{shapes: map[reflect.Type]*shape{}}
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("wire: message %d: %w: nil", i+1, ErrUnsupported)
		}
		t := reflect.TypeOf(m)
		mt := msgType{tag: uint64(i + 1), typ: t, elem: t}
		if t.Kind() == reflect.Pointer {
			mt.ptr, mt.elem = true, t.Elem()
		}
		b.msg = t
		if mt.elem.Kind() != reflect.Struct {
			return nil, b.errorf("", "messages are structs or pointers to structs, not %s", t.Kind())
		}
		s, err := b.shapeOf(mt.elem, "")
		if err != nil {
			return nil, err
		}
		mt.fields = s.fields
		boxed := any(m)
		mt.word = efaceOf(&boxed).typ
		mt.direct = !mt.ptr && storedDirectly(t)
		c.types[i] = mt
		if _, dup := c.byType[mt.word]; dup {
			return nil, fmt.Errorf("wire: message %d: %w: type %s is listed twice", i+1, ErrUnsupported, t)
		}
		c.byType[mt.word] = &c.types[i]
	}
	for _, s := range b.slices {
		if s.elem.min == 0 {
			return nil, fmt.Errorf("wire: %w: slice type %s: its elements encode to no bytes, so the input cannot bound its length", ErrUnsupported, s.typ)
		}
	}
	return c, nil
}

// storedDirectly reports whether an interface holds a value of the
// non-pointer type t in its data word rather than pointing to it (a struct
// whose only field is a pointer, say). It asks the runtime: it boxes a
// value whose word is a known address and looks where that address went.
func storedDirectly(t reflect.Type) bool {
	if t.Size() != unsafe.Sizeof(uintptr(0)) {
		return false
	}
	probe := new(uint64)
	v := reflect.New(t)
	*(*unsafe.Pointer)(v.UnsafePointer()) = unsafe.Pointer(probe)
	e := v.Elem().Interface()
	direct := efaceOf(&e).data == unsafe.Pointer(probe)
	runtime.KeepAlive(probe)
	return direct
}

// Append appends the encoding of m to dst: its tag, then its fields. The
// error, for a type the codec does not list (ErrUnregistered), a nil
// pointer, or a value nested deeper than the decoder accepts (a cycle),
// leaves dst as it was.
func (c *Codec) Append(dst []byte, m proc.Message) ([]byte, error) {
	e := any(m)
	w := efaceOf(&e)
	mt := c.lookup(w.typ)
	if mt == nil {
		if m == nil {
			return dst, fmt.Errorf("wire: %w: nil message", ErrUnregistered)
		}
		return dst, fmt.Errorf("wire: %w: %T", ErrUnregistered, m)
	}
	p := w.data
	switch {
	case mt.direct:
		p = unsafe.Pointer(&w.data)
	case mt.ptr && p == nil:
		return dst, fmt.Errorf("wire: cannot encode a nil %s", mt.typ)
	}
	start := len(dst)
	dst = appendUvarint(dst, mt.tag)
	dst, err := appendFields(dst, mt.fields, p, 0)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: encoding %s: %w", mt.typ, err)
	}
	return dst, nil
}

// lookup finds a message type by its type word: by a scan of a short list
// (most algorithms have a handful of messages, and the scan is cheaper
// than hashing), by the map otherwise.
func (c *Codec) lookup(word unsafe.Pointer) *msgType {
	if len(c.types) <= 16 {
		for i := range c.types {
			if c.types[i].word == word {
				return &c.types[i]
			}
		}
		return nil
	}
	return c.byType[word]
}

// Decode decodes one message that is all of b. The message has the Go type
// that was registered (S, or *S if a pointer was), so it type-asserts as
// the algorithm expects. It does not keep b: strings and slices are
// copied. Errors wrap ErrUnknownTag or ErrMalformed.
func (c *Codec) Decode(b []byte) (proc.Message, error) {
	tag, n, err := uvarint(b)
	if err != nil {
		return nil, fmt.Errorf("wire: message tag: %w", err)
	}
	if tag == 0 || tag > uint64(len(c.types)) {
		return nil, fmt.Errorf("wire: %w %d (this codec knows 1 to %d)", ErrUnknownTag, tag, len(c.types))
	}
	mt := &c.types[tag-1]
	// The value is decoded in place in a new one, which the interface then
	// points to; a pointer-shaped value is the interface's word itself.
	p := reflect.New(mt.elem).UnsafePointer()
	budget := len(b)
	rest, err := decodeFields(b[n:], mt.fields, p, 0, &budget)
	if err != nil {
		return nil, fmt.Errorf("wire: %s at byte %d: %w", mt.typ, len(b)-len(rest), err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("wire: %s: %w: %d bytes after the message", mt.typ, ErrMalformed, len(rest))
	}
	if mt.direct {
		p = *(*unsafe.Pointer)(p)
	}
	var e any
	*efaceOf(&e) = eface{typ: mt.word, data: p}
	return e.(proc.Message), nil
}
