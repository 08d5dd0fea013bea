package sim

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// A run that cannot fit in memory is refused before it starts, with the
// estimate, rather than die in the middle with the runtime's "out of
// memory" and a goroutine dump. The estimate is the host's record per
// process plus the processes' own state at the start, measured: a few
// processes are built at two small sizes and their bytes extrapolated to
// the run's size, so state that grows with n (a vector of n clocks, a
// reply flag per peer) counts. Runs of up to budgetFrom processes are not
// estimated: they fit anywhere.

const (
	budgetFrom    = 10_000
	hostPerNode   = 64 // node record (32 bytes, its random source's pointer in it), a Lamport clock, topology share, with room to spare
	sampleSize    = 1_000
	sampleBuilds  = 8
	budgetOfAvail = 0.8
	// runOfAvail is a running run's budget: half of what is available, as
	// a slice that doubles (a trace's events) briefly needs three times
	// what it held.
	runOfAvail = 0.5
)

// ErrTooBig wraps the error of a run that would not fit in memory.
var ErrTooBig = errors.New("the run would not fit in memory")

// CheckMemory estimates what a run of n processes built by mk needs at its
// start and fails, naming n, the estimate and the memory available, if it
// is more than 80% of what the machine has available.
func CheckMemory(n int, mk func(proc.ID, int) proc.Process) error {
	if n <= budgetFrom {
		return nil
	}
	avail, ok := availableMemory()
	if !ok {
		return nil
	}
	need, ok := EstimateBytes(n, mk)
	if !ok || need <= budgetOfAvail*float64(avail) {
		return nil
	}
	return fmt.Errorf("%d processes: %w: it needs about %s at its start (%s per process, measured), and this machine has %s available",
		n, ErrTooBig, bytesString(need), bytesString(need/float64(n)), bytesString(float64(avail)))
}

// EstimateBytes estimates the memory a run of n processes built by mk
// needs at its start; ok is false if the processes could not be measured
// (mk panicked at a small size).
func EstimateBytes(n int, mk func(proc.ID, int) proc.Process) (bytes float64, ok bool) {
	a, ok1 := perProcess(mk, sampleSize)
	b, ok2 := perProcess(mk, 2*sampleSize)
	if !ok1 || !ok2 {
		return 0, false
	}
	// bytes per process = fixed + grow·size
	grow := max(b-a, 0) / sampleSize
	fixed := max(a-grow*sampleSize, 0)
	per := fixed + grow*float64(n) + hostPerNode
	return per * float64(n), true
}

// perProcess measures the bytes mk allocates for one process of a run of
// size n. The count is the whole program's, so another goroutine that
// allocates meanwhile inflates it, never the reverse: the least of three
// measurements is kept.
func perProcess(mk func(proc.ID, int) proc.Process, n int) (per float64, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	per = math.Inf(1)
	for range 3 {
		keep := make([]proc.Process, 0, sampleBuilds)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for i := range sampleBuilds {
			keep = append(keep, mk(proc.ID(i*n/sampleBuilds), n))
		}
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(keep)
		per = min(per, float64(ms.TotalAlloc-before)/sampleBuilds)
	}
	return per, true
}

// liveHeap is the memory the Go runtime holds for the process (all it has
// mapped, less what it gave back to the system): close to the resident
// size, garbage not yet collected included.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}

// availableMemory is what this process may still use: MemAvailable of
// /proc/meminfo (Linux), lowered by a container's limit (cgroup v2
// memory.max) and by the Go memory limit (GOMEMLIMIT) when they are set.
func availableMemory() (uint64, bool) {
	avail, ok := meminfo()
	if !ok {
		return 0, false
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			avail = min(avail, v)
		}
	}
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		avail = min(avail, uint64(lim))
	}
	return avail, true
}

func meminfo() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func bytesString(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f bytes", b)
}
