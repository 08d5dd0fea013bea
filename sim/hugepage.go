package sim

// MakeHuge returns n zero values of T in memory that asks for huge pages:
// for a workload's processes made in one array, which deliveries to random
// processes read at random (see adviseHuge; at ten million processes a
// read through 4 KiB pages nearly always misses the TLB). A hint: it
// changes no result.
func MakeHuge[T any](n int) []T {
	s := make([]T, n)
	adviseHuge(s)
	return s
}
