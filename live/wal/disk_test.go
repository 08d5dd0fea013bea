package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/diskio"
)

// BenchmarkAppendSync: what a sync costs by the state of the space an
// append lands in, as bench.DiskSync measures the disk (one record written
// and fdatasync'd per operation, by one writer or by five at once, as the
// five nodes of a cluster on one machine do):
//   - grown: the file ends where the log does; each write extends it;
//   - fallocated: the space is allocated but never written (unwritten
//     extents, which the sync must convert once for each block it enters);
//   - zeroed: the space was written with zeros and synced beforehand, so
//     the sync writes data blocks only.
//
// Records of 200 bytes (a lock's entry: a sync enters a new block once in
// 20) and of 4 KB (a group's entry of some 60 messages: every sync enters
// a new block). p50-us, p90-us and mean-us are those of one append+sync,
// over all writers.
func BenchmarkAppendSync(b *testing.B) {
	for _, recLen := range []int{200, 4096} {
		for _, space := range []string{"grown", "fallocated", "zeroed"} {
			for _, writers := range []int{1, 5} {
				b.Run(fmt.Sprintf("rec=%d/space=%s/writers=%d", recLen, space, writers), func(b *testing.B) {
					benchAppendSync(b, recLen, space, writers)
				})
			}
		}
	}
}

func benchAppendSync(b *testing.B, recLen int, space string, writers int) {
	dir := b.TempDir()
	files := make([]*os.File, writers)
	for w := range files {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(w)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		n := int64(b.N*recLen + PreallocChunk)
		switch space {
		case "fallocated":
			err = preallocate(f, 0, n)
		case "zeroed":
			if _, err = f.Write(make([]byte, n)); err == nil {
				err = f.Sync()
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		files[w] = f
	}
	rec := make([]byte, recLen)
	rec[0] = 1
	var (
		mu  sync.Mutex
		all []time.Duration
		wg  sync.WaitGroup
	)
	b.ResetTimer()
	for _, f := range files {
		wg.Go(func() {
			ds := make([]time.Duration, 0, b.N)
			for i := range b.N {
				start := time.Now()
				if _, err := f.WriteAt(rec, int64(i*recLen)); err != nil {
					b.Error(err)
					return
				}
				if err := diskio.Fdatasync(f); err != nil {
					b.Error(err)
					return
				}
				ds = append(ds, time.Since(start))
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	reportSyncs(b, all)
}

// BenchmarkLogSync: a Log's Append and Sync of a record per operation
// (200 bytes or 4 KB, as in BenchmarkAppendSync), by one writer or by five
// at once (each its own log), as bench.DiskSync measures the disk under a
// cluster's logs. p50-us, p90-us and mean-us are those of one
// append+sync, over all writers.
func BenchmarkLogSync(b *testing.B) {
	for _, recLen := range []int{200, 4096} {
		for _, writers := range []int{1, 5} {
			b.Run(fmt.Sprintf("rec=%d/writers=%d", recLen, writers), func(b *testing.B) {
				benchLogSync(b, recLen, writers)
			})
		}
	}
}

func benchLogSync(b *testing.B, recLen, writers int) {
	dir := b.TempDir()
	logs := make([]*Log, writers)
	for w := range logs {
		l, err := Open(filepath.Join(dir, fmt.Sprint(w)))
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		logs[w] = l
	}
	rec := make([]byte, recLen)
	var (
		mu  sync.Mutex
		all []time.Duration
		wg  sync.WaitGroup
	)
	b.ResetTimer()
	for _, l := range logs {
		wg.Go(func() {
			ds := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				if err := l.Append(rec); err != nil {
					b.Error(err)
					return
				}
				if err := l.Sync(); err != nil {
					b.Error(err)
					return
				}
				ds = append(ds, time.Since(start))
			}
			mu.Lock()
			all = append(all, ds...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	reportSyncs(b, all)
}

func reportSyncs(b *testing.B, all []time.Duration) {
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	b.ReportMetric(float64(all[len(all)/2])/1e3, "p50-us")
	b.ReportMetric(float64(all[len(all)*9/10])/1e3, "p90-us")
	b.ReportMetric(float64(sum)/float64(len(all))/1e3, "mean-us")
}
