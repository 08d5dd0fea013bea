package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cohort-go/cohort/live/wal"
)

// DiskSync measures the disk under a benchmark's data: writers logs in
// dir, each appending a 100-byte record and syncing it, syncs times,
// all at once — as the nodes of a cluster on one machine sync their Raft
// logs. It returns the median time of one Append+Sync. The replicated
// services cannot commit faster than this floor: every commit waits for
// the leader's sync and a majority's.
func DiskSync(dir string, writers, syncs int) (time.Duration, error) {
	var (
		mu    sync.Mutex
		all   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	rec := make([]byte, 100)
	for w := range writers {
		wg.Go(func() {
			path := filepath.Join(dir, fmt.Sprintf("disk-probe-%d.wal", w))
			defer os.Remove(path)
			l, err := wal.Open(path)
			if err == nil {
				defer l.Close()
			}
			var ds []time.Duration
			for i := 0; i < syncs && err == nil; i++ {
				start := time.Now()
				if err = l.Append(rec); err == nil {
					err = l.Sync()
				}
				ds = append(ds, time.Since(start))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, ds...)
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	if first != nil {
		return 0, fmt.Errorf("measuring the disk: %w", first)
	}
	slices.Sort(all)
	return percentile(all, 50), nil
}
