package wire

import (
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The test messages: one like each shape the algorithms use, and one of
// every supported kind.

// stamp and request are mutex.Stamp and raRequest.
type stamp struct {
	C uint64
	P proc.ID
}

type request struct {
	T stamp
}

// flat is the same two numbers without nesting.
type flat struct {
	C uint64
	P int32
}

// empty is a message without fields, like cfoOK.
type empty struct{}

// token is skToken: two slices.
type token struct {
	LN []uint64
	Q  []proc.ID
}

// vstamped is clock.VStamped: a string and a named slice.
type vstamped struct {
	Name string
	TS   vector
}

type vector []uint64

// state is cfoState: a duration and bools among numbers.
type state struct {
	Epoch      uint64
	Requesting bool
	Since      time.Duration
	Holding    bool
}

// inner is nested in kitchen, by value, by pointer and in slices.
type inner struct {
	Name string
	At   stamp
	Tags []string
}

// kitchen has a field of every supported kind.
type kitchen struct {
	B      bool
	I8     int8
	I16    int16
	I32    int32
	I64    int64
	I      int
	U8     uint8
	U16    uint16
	U32    uint32
	U64    uint64
	U      uint
	F32    float32
	F64    float64
	S      string
	Bytes  []byte
	Arr    [3]int16
	Sum    [4]byte
	Nested inner
	Ptr    *inner
	Nums   []int64
	Names  []string
	Inners []inner
	Grid   [][]byte
	Ptrs   []*stamp
	D      time.Duration
	None   struct{}
	Zeros  [2]struct{}
}

// node is recursive, through a pointer and through a slice.
type node struct {
	V    int
	Next *node
	Kids []node
}

// boxed is pointer-shaped: an interface holds it in its data word.
type boxed struct {
	P *inner
}

// pointed is registered as a pointer.
type pointed struct {
	X int64
	S string
}

// mapped holds maps: integer keys (of a named type), string keys, maps
// in maps, and values that are slices and pointers.
type mapped struct {
	Votes  map[proc.ID]uint64
	ByName map[string][]string
	Nested map[int8]map[string]bool
	Ptrs   map[uint16]*stamp
}

func (request) Kind() string  { return "request" }
func (flat) Kind() string     { return "flat" }
func (empty) Kind() string    { return "empty" }
func (token) Kind() string    { return "token" }
func (vstamped) Kind() string { return "msg" }
func (state) Kind() string    { return "state" }
func (kitchen) Kind() string  { return "kitchen" }
func (node) Kind() string     { return "node" }
func (boxed) Kind() string    { return "boxed" }
func (*pointed) Kind() string { return "pointed" }
func (mapped) Kind() string   { return "mapped" }

// testMessages is the list the tests register, in tag order.
var testMessages = []proc.Message{
	request{}, flat{}, empty{}, token{}, vstamped{}, state{}, kitchen{}, node{}, boxed{}, (*pointed)(nil),
	msg[outer]{}, mapped{},
}

func testCodec(tb interface{ Fatal(...any) }) *Codec {
	c, err := NewCodec(testMessages)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// outer holds, through a pointer, a struct that holds an outer by value:
// planning outer meets outer again before its plan is complete.
type outer struct {
	P *around
	X int
}

type around struct {
	O outer
	Y int
}
