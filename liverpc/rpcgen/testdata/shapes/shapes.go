// Package shapes is an interface whose values nest pointers, maps,
// slices and structs in one another. The generator's test writes its
// stub (shapes_rpc.go, not checked in) and runs this package's tests with
// it: random values round-trip, and their encoding is canonical.
package shapes

import "context"

type Key string

type Pair struct {
	K  string
	V  *int
	M  map[string]uint32
	Ps []*Leaf
}

type Leaf struct {
	F *float64
	B []byte
}

type Anon struct {
	X *struct{ Y map[int16]string }
}

type Shapes interface {
	//cohort:rpc semantics=maybe
	Nest(ctx context.Context, pp **int8, ps *[]uint16, mm map[int32]map[string][]byte, ms map[uint8][]*Pair, sm []map[Key]*Pair, pm *map[string]*[]int64, a Anon) (map[Key]**Pair, *struct {
		M map[int]bool
		P *float32
	}, error)
}
