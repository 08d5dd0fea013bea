package main

import (
	"os"
	"runtime/debug"
)

// A process that hosts live nodes (cohort node, and the benchmarks that
// run a cluster in one process as five nodes would run) gives the
// garbage collector more room than Go's default, unless the environment
// says otherwise (GOGC, GOMEMLIMIT). A node allocates a few kilobytes
// for every message it replicates (decoding, the log's records, the
// deliveries), so under load the collector runs often, and while it
// marks, every event loop of the process gives a quarter of the CPU to
// it and pays assists besides: the messages under way then are the
// slowest (in `cohort bench multicast --rate 50000`, the slowest 1% all
// overlapped a mark phase). With GOGC=400 the heap grows to five times
// what is live before a cycle instead of twice, so cycles come about
// four times less often for the same work per cycle (the Go GC guide's
// trade of memory for CPU); the soft memory limit keeps a node whose
// live heap is large (a long log before compaction) from growing past
// nodeMemoryLimit on that account: near it, the collector runs as often
// as it must.
const (
	nodeGCPercent   = 400
	nodeMemoryLimit = 1 << 30
)

// tuneGC applies that policy to this process, and leaves what the
// environment set.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(nodeGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(nodeMemoryLimit)
	}
}
