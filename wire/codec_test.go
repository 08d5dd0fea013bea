package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The documented encodings, byte for byte.
func TestEncodingIsAsDocumented(t *testing.T) {
	c := testCodec(t)
	cases := []struct {
		m    proc.Message
		want string
	}{
		{request{T: stamp{C: 42, P: 3}}, "012a06"},
		{request{T: stamp{C: 300, P: -1}}, "01ac0201"},
		{flat{C: 1 << 63, P: math.MinInt32}, "02" + "80808080808080808001" + "ffffffff0f"},
		{empty{}, "03"},
		{token{LN: []uint64{1, 2}, Q: nil}, "04" + "020102" + "00"},
		{vstamped{Name: "m\xff", TS: vector{7}}, "05" + "026dff" + "0107"},
		{state{Epoch: 2, Requesting: true, Since: -time.Nanosecond, Holding: false}, "06" + "02" + "01" + "01" + "00"},
		{boxed{}, "09" + "00"},
		{boxed{P: &inner{Name: "a"}}, "09" + "01" + "0161" + "0000" + "00"},
		{&pointed{X: -2, S: ""}, "0a" + "03" + "00"},
		// Entries in ascending order of their keys, whatever the map's.
		{mapped{Votes: map[proc.ID]uint64{2: 7, -1: 1}}, "0c" + "02" + "0101" + "0407" + "00" + "00" + "00"},
		{mapped{ByName: map[string][]string{"b": nil, "a": {"x"}}}, "0c" + "00" + "02" + "0161" + "01" + "0178" + "0162" + "00" + "00" + "00"},
	}
	for _, tc := range cases {
		got, err := c.Append(nil, tc.m)
		if err != nil {
			t.Fatalf("%#v: %v", tc.m, err)
		}
		if hex.EncodeToString(got) != tc.want {
			t.Errorf("%#v encodes to %x, want %s", tc.m, got, tc.want)
		}
		back, err := c.Decode(got)
		if err != nil {
			t.Fatalf("%#v: decoding %x: %v", tc.m, got, err)
		}
		if !reflect.DeepEqual(back, tc.m) {
			t.Errorf("%x decodes to %#v, want %#v", got, back, tc.m)
		}
	}
}

// Decode returns the registered Go type, value or pointer, so that the
// algorithm's type switch matches.
func TestDecodedMessagesHaveTheRegisteredType(t *testing.T) {
	c := testCodec(t)
	for _, proto := range testMessages {
		m := proto
		if reflect.TypeOf(proto).Kind() == reflect.Pointer {
			m = reflect.New(reflect.TypeOf(proto).Elem()).Interface().(proc.Message)
		}
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		back, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if reflect.TypeOf(back) != reflect.TypeOf(proto) {
			t.Errorf("decoded a %T, registered %T", back, proto)
		}
	}
	for _, mt := range c.types {
		if want := mt.typ == reflect.TypeFor[boxed](); mt.direct != want {
			t.Errorf("%s: stored directly in an interface: %v, want %v", mt.typ, mt.direct, want)
		}
	}
	back, _ := c.Decode([]byte{1, 5, 2})
	if r, ok := back.(request); !ok || r.T != (stamp{C: 5, P: 1}) {
		t.Errorf("decoded %#v, want request{T: stamp{C: 5, P: 1}}", back)
	}
}

func TestRoundTripOfEveryKind(t *testing.T) {
	c := testCodec(t)
	k := kitchen{
		B: true, I8: -128, I16: math.MaxInt16, I32: math.MinInt32, I64: math.MinInt64, I: -1,
		U8: 255, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64, U: 7,
		F32: float32(math.Inf(-1)), F64: math.Float64frombits(0x7ff8dead0000beef), // a NaN with a payload
		S: "héllo\x00\xfe", Bytes: []byte{0, 1, 2}, Arr: [3]int16{-1, 0, 1}, Sum: [4]byte{9, 8, 7, 6},
		Nested: inner{Name: "n", At: stamp{C: 1, P: 2}, Tags: []string{"", "x"}},
		Ptr:    &inner{Tags: []string{"p"}},
		Nums:   []int64{math.MinInt64, 0, math.MaxInt64},
		Names:  []string{"a", ""},
		Inners: []inner{{Name: "i"}, {At: stamp{P: proc.None}}},
		Grid:   [][]byte{{1}, nil, {2, 3}},
		Ptrs:   []*stamp{nil, {C: 3}},
		D:      -time.Hour,
	}
	n := node{V: 1, Next: &node{V: 2, Next: &node{V: 3}}, Kids: []node{{V: 4, Kids: []node{{V: 5}}}}}
	mp := mapped{
		Votes:  map[proc.ID]uint64{proc.None: 0, 0: math.MaxUint64, math.MaxInt32: 1},
		ByName: map[string][]string{"": {""}, "\xff": nil, "a": {"b", "c"}},
		Nested: map[int8]map[string]bool{-128: {"x": true}, 127: nil},
		Ptrs:   map[uint16]*stamp{0: nil, 65535: {C: 1, P: 2}},
	}
	for _, m := range []proc.Message{k, n, mp, kitchen{}, node{}, mapped{}} {
		b, err := c.Append(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		if got, want := mustAppend(t, c, back), b; !bytes.Equal(got, want) {
			t.Errorf("re-encoding gives %x, want %x", got, want)
		}
		if bk, ok := back.(kitchen); ok {
			// A NaN is not equal to itself: compare its bits, then
			// leave it out of the comparison.
			mk := m.(kitchen)
			if math.Float64bits(bk.F64) != math.Float64bits(mk.F64) {
				t.Errorf("F64 bits %x, want %x", math.Float64bits(bk.F64), math.Float64bits(mk.F64))
			}
			bk.F64, mk.F64 = 0, 0
			back, m = bk, mk
		}
		if !reflect.DeepEqual(back, m) {
			t.Errorf("round trip of %T:\n got %#v\nwant %#v", m, back, m)
		}
	}
}

// A map's encoding is one, whatever order Go iterates it in; and an empty
// map encodes as a nil one does, and decodes as nil.
func TestMapEncodingIsDeterministic(t *testing.T) {
	c := testCodec(t)
	m := mapped{Votes: map[proc.ID]uint64{}, ByName: map[string][]string{}}
	for i := range 100 {
		m.Votes[proc.ID(i*7919%1000-500)] = uint64(i)
		m.ByName[strings.Repeat("k", i%10)+string(rune('a'+i%26))] = []string{"v"}
	}
	want := mustAppend(t, c, m)
	for range 50 {
		if got := mustAppend(t, c, m); !bytes.Equal(got, want) {
			t.Fatalf("the same maps encoded differently:\n%x\n%x", got, want)
		}
	}
	if got, want := mustAppend(t, c, mapped{Votes: map[proc.ID]uint64{}}), mustAppend(t, c, mapped{}); !bytes.Equal(got, want) {
		t.Errorf("an empty map encodes as %x, a nil one as %x", got, want)
	}
	back, err := c.Decode(mustAppend(t, c, mapped{Votes: map[proc.ID]uint64{}}))
	if err != nil || back.(mapped).Votes != nil {
		t.Errorf("an empty map came back as %#v, %v; want nil", back, err)
	}
}

// The Codec writes a map as generated code does with the primitives: its
// length, then key and value in the order of SortedKeys — so a Go API's
// messages and an RPC's arguments agree on what a map is.
func TestMapIsThePrimitivesEncoding(t *testing.T) {
	c := testCodec(t)
	votes := map[proc.ID]uint64{5: 1, -3: 2, 0: 3, 1 << 20: 4}
	names := map[string][]string{"b": {"x"}, "": nil, "ab": {"y", "z"}}
	want := AppendUint(nil, 12)
	want = AppendLen(want, len(votes))
	for _, k := range SortedKeys(votes) {
		want = AppendUint(AppendInt(want, int64(k)), votes[k])
	}
	want = AppendLen(want, len(names))
	for _, k := range SortedKeys(names) {
		want = AppendLen(AppendString(want, k), len(names[k]))
		for _, v := range names[k] {
			want = AppendString(want, v)
		}
	}
	want = AppendLen(AppendLen(want, 0), 0)
	if got := mustAppend(t, c, mapped{Votes: votes, ByName: names}); !bytes.Equal(got, want) {
		t.Errorf("the codec wrote %x, the primitives %x", got, want)
	}
}

func mustAppend(t testing.TB, c *Codec, m proc.Message) []byte {
	t.Helper()
	b, err := c.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMutuallyRecursiveStructs(t *testing.T) {
	c := testCodec(t)
	m := msg[outer]{V: outer{P: &around{O: outer{P: &around{Y: 5}, X: 2}, Y: 3}, X: 1}}
	b := mustAppend(t, c, m)
	// tag 11; P present; O.P present; O.P.O.P nil, O.P.O.X 0; O.P.Y 5;
	// O.X 2; Y 3; X 1.
	if want := "0b" + "01" + "01" + "0000" + "0a" + "04" + "06" + "02"; hex.EncodeToString(b) != want {
		t.Errorf("encoding %x, want %s", b, want)
	}
	back, err := c.Decode(b)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("came back as %#v, %v", back, err)
	}
}

// Unsupported types are refused with an error naming the type and field.
func TestNewCodecRefusesWhatItCannotEncode(t *testing.T) {
	type (
		hidden struct {
			A int
			b int
		}
		withMap   struct{ M map[float64]int }
		structKey struct{ M map[stamp]int }
		boolKey   struct{ M map[bool]int }
		badValue  struct{ M map[string]any }
		withAny   struct {
			Inner struct{ X any }
		}
		withChan   struct{ C chan int }
		withFunc   struct{ F func() }
		withUPtr   struct{ U uintptr }
		withCmplx  struct{ Z complex128 }
		withTime   struct{ T time.Time }
		voidSlice  struct{ V []struct{} }
		deepHidden struct{ L []hidden }
	)
	cases := []struct {
		m    proc.Message
		want []string
	}{
		{msg[hidden]{}, []string{"hidden", "field V.b", "unexported"}},
		{msg[withMap]{}, []string{"withMap", "field V.M", "keys are integers or strings", "float64"}},
		{msg[structKey]{}, []string{"field V.M", "keys are integers or strings", "struct"}},
		{msg[boolKey]{}, []string{"field V.M", "keys are integers or strings", "bool"}},
		{msg[badValue]{}, []string{"field V.M[]", "interface"}},
		{msg[withAny]{}, []string{"field V.Inner.X", "interface"}},
		{msg[withChan]{}, []string{"field V.C", "chan"}},
		{msg[withFunc]{}, []string{"field V.F", "func"}},
		{msg[withUPtr]{}, []string{"field V.U", "uintptr"}},
		{msg[withCmplx]{}, []string{"field V.Z", "complex128"}},
		{msg[withTime]{}, []string{"field V.T.wall", "unexported"}},
		{msg[voidSlice]{}, []string{"[]struct {}", "no bytes"}},
		{msg[deepHidden]{}, []string{"field V.L[].b"}},
		{named(3), []string{"wire.named", "structs"}},
	}
	for _, tc := range cases {
		_, err := NewCodec([]proc.Message{request{}, tc.m})
		if err == nil {
			t.Errorf("%T: no error", tc.m)
			continue
		}
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%T: %v does not wrap ErrUnsupported", tc.m, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%T: error %q does not mention %q", tc.m, err, w)
			}
		}
	}
	if _, err := NewCodec([]proc.Message{request{}, flat{}, request{}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a type listed twice: %v", err)
	}
	if _, err := NewCodec([]proc.Message{request{}, nil}); err == nil || !strings.Contains(err.Error(), "message 2") {
		t.Errorf("a nil prototype: %v", err)
	}
}

// msg wraps a test type in a message, under field V.
type msg[T any] struct{ V T }

func (msg[T]) Kind() string { return "msg" }

type named int

func (named) Kind() string { return "named" }

func TestAppendRefusesUnregisteredAndNil(t *testing.T) {
	c := testCodec(t)
	dst := []byte("keep")
	out, err := c.Append(dst, msg[int]{})
	if !errors.Is(err, ErrUnregistered) || !strings.Contains(err.Error(), "wire.msg[int]") {
		t.Errorf("unregistered type: %v", err)
	}
	if string(out) != "keep" {
		t.Errorf("dst became %q", out)
	}
	if _, err := c.Append(nil, nil); !errors.Is(err, ErrUnregistered) {
		t.Errorf("nil message: %v", err)
	}
	if _, err := c.Append(nil, (*pointed)(nil)); err == nil {
		t.Error("a nil *pointed encoded")
	}
	// A pointer to a registered value is another type.
	if _, err := c.Append(nil, &request{}); !errors.Is(err, ErrUnregistered) {
		t.Errorf("*request: %v", err)
	}
}

// A cycle cannot be encoded, and fails instead of overflowing the stack.
func TestCycleFailsToEncode(t *testing.T) {
	c := testCodec(t)
	n := &node{V: 1}
	n.Next = n
	out, err := c.Append([]byte{7}, *n)
	if err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("a cyclic node: %v", err)
	}
	if !bytes.Equal(out, []byte{7}) {
		t.Errorf("dst became %x", out)
	}
}

func TestDecodeRefusesMalformedInput(t *testing.T) {
	c := testCodec(t)
	deep := []byte{8}
	for range maxDepth + 1 {
		deep = append(deep, 0, 1) // V=0, Next present
	}
	cases := []struct {
		name string
		in   string // hex
		want error
		says string
	}{
		{"empty", "", ErrMalformed, "truncated"},
		{"tag 0", "00", ErrUnknownTag, "tag 0"},
		{"tag too big", "0d", ErrUnknownTag, "tag 13 (this codec knows 1 to 12)"},
		{"truncated field", "012a", ErrMalformed, "truncated"},
		{"trailing bytes", "012a0600", ErrMalformed, "1 bytes after"},
		{"overlong varint", "01aa0006", ErrMalformed, "shortest form"},
		{"overlong tag", "8100", ErrMalformed, "shortest form"},
		{"varint beyond 64 bits", "01ffffffffffffffffff0206", ErrMalformed, "overflows"},
		{"int32 out of range", "012a8080808020", ErrMalformed, "out of range"},
		{"bool of 2", "06000200000000", ErrMalformed, "neither 0 nor 1"},
		{"presence byte of 2", "0902", ErrMalformed, "neither 0 nor 1"},
		{"string longer than input", "05ff0161", ErrMalformed, "exceeds the remaining"},
		{"slice longer than input", "04050102", ErrMalformed, "exceeds the remaining"},
		{"huge length", "04ffffffffffffffff7f", ErrMalformed, "exceeds the remaining"},
		{"map keys out of order", "0c" + "02" + "0407" + "0101" + "000000", ErrMalformed, "out of order"},
		{"map key repeated", "0c" + "02" + "0407" + "0408" + "000000", ErrMalformed, "repeated"},
		{"string keys out of order", "0c" + "00" + "02" + "016200" + "016100" + "0000", ErrMalformed, "out of order"},
		{"map longer than input", "0c" + "05" + "0407", ErrMalformed, "exceeds the remaining"},
		{"huge map", "0c" + "ffffffffffffffff7f", ErrMalformed, "exceeds the remaining"},
	}
	for _, tc := range cases {
		in, err := hex.DecodeString(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Decode(in)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Decode(%s) = %#v, %v; want %v saying %q", tc.name, tc.in, m, err, tc.want, tc.says)
		}
	}
	if _, err := c.Decode(deep); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("nesting of %d: %v", maxDepth+1, err)
	}
}

// A short input that claims a huge length is refused before anything is
// allocated for it.
func TestHugeLengthsDoNotAllocate(t *testing.T) {
	c := testCodec(t)
	inputs := [][]byte{
		{4, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3},       // token with 2^32−1 entries
		{5, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1}, // a string of 2^42 bytes
		// kitchen: zero bool and integers (11 bytes), floats (12), empty
		// string (1), then Bytes of 2^31.
		append(append([]byte{7}, make([]byte, 24)...), 0x80, 0x80, 0x80, 0x80, 0x08),
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		for _, in := range inputs {
			if _, err := c.Decode(in); err == nil {
				t.Fatalf("%x decoded", in)
			}
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("decoding 300 short hostile inputs allocated %d bytes", grew)
	}
}

// Nested slices that each claim all of the remaining input are refused
// as soon as their claims add up to more than the input: otherwise every
// level would allocate for the same bytes.
func TestNestedClaimsDoNotAmplify(t *testing.T) {
	c := testCodec(t)
	const size = 30000
	in := []byte{8} // node
	for range maxDepth - 10 {
		// V=0, Next=nil, Kids claiming every byte that follows (each kid
		// takes at least 3).
		pos := len(in) + 4
		in = append(in, 0, 0)
		in = binary.AppendUvarint(in, uint64((size-pos)/3))
	}
	in = append(in, make([]byte, size-len(in))...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Decode(in)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("Decode: %v", err)
	}
	// One level: some 10,000 nodes of 40 bytes. Ninety levels: 36 MB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Errorf("a %d-byte input allocated %d bytes", size, grew)
	}
}

// The budget: encoding and decoding a small message allocates once, for
// the decoded value.
func TestSmallMessageAllocatesOnce(t *testing.T) {
	c := testCodec(t)
	var m proc.Message = request{T: stamp{C: 42, P: 3}}
	buf := make([]byte, 0, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		b, _ := c.Append(buf[:0], m)
		if _, err := c.Decode(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations per round trip, want at most 1", allocs)
	}
}

// Zero-size messages decode without allocating, and to the same value.
func TestEmptyMessage(t *testing.T) {
	c := testCodec(t)
	b := mustAppend(t, c, empty{})
	if !bytes.Equal(b, []byte{3}) {
		t.Fatalf("empty{} encodes to %x, want 03", b)
	}
	m, err := c.Decode(b)
	if err != nil || m != (empty{}) {
		t.Fatalf("Decode(03) = %#v, %v", m, err)
	}
}

// A codec is used by many goroutines at once (one per connection).
func TestCodecIsSafeForConcurrentUse(t *testing.T) {
	c := testCodec(t)
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for i := range 1000 {
				m := token{LN: []uint64{uint64(g), uint64(i)}, Q: []proc.ID{proc.ID(g)}}
				back, err := c.Decode(mustAppend(t, c, m))
				if err != nil || !reflect.DeepEqual(back, m) {
					t.Errorf("goroutine %d: %#v, %v", g, back, err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
