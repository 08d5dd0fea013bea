//go:build !unix

package explore

// newTable returns a zeroed table of n entries for the visited set (on
// the Go heap here; see table_unix.go).
func newTable[T uint16 | uint32 | uint64](n int) []T { return make([]T, n) }

func freeTable[T uint16 | uint32 | uint64](t []T) {}

func growTable[T uint16 | uint32 | uint64](t []T, n int) []T {
	g := make([]T, n)
	copy(g, t)
	return g
}
