// Package names is an interface whose stub must avoid every name it could
// collide with: parameters named after types, packages and the stub's own
// variables, unnamed parameters, anonymous structs, and structs and
// named types of other packages, nested pointers and maps, and a
// declared semantics (which imports package rpc). The test generates its stub and builds
// the package with it.
package names

import (
	"context"
	"image"
	"time"
)

type Cents int64

type Blob []byte

type Pair struct {
	Key   string
	Value Blob
	At    image.Point
}

type service interface {
	Names(ctx context.Context, time time.Duration, string string, Cents Cents, args bool, impl string, c, data, r0, v1, i0 int8) (dst uint, n float32, err error)
	Unnamed(context.Context, []Pair, struct{ A, B []int16 }) ([][]string, error)
	Nothing(context.Context) error
	Points(ctx context.Context, p []image.Point, image image.Point) (image.Rectangle, Blob, error)
	// Shapes nests pointers, maps, slices and structs in one another.
	//
	//cohort:rpc semantics=at-most-once
	Shapes(ctx context.Context, rpc **int8, o map[Cents][]*Pair, k0 *map[string]map[int]struct{ X *Blob }, m0 []*struct{ P *image.Point }) (map[string]*[]image.Point, *map[uint8]**Pair, error)
}
