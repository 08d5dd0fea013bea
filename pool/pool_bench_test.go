package pool

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// spin works for about d without sleeping (a short CPU-bound task).
func spin(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// BenchmarkBursty: bursts of 32 tasks of 2µs at once, a burst every
// 200µs, on pools of fixed sizes and a self-sized one. It reports the
// tasks per second, the median and 99th percentile time from Go to the
// task's end, and the size the pool ended with:
//
//	go test -run '^$' -bench Bursty -benchtime 5x ./pool
func BenchmarkBursty(b *testing.B) {
	const bursts, burst = 500, 32
	for _, size := range []int{0, 1, 4, 16, 64, -1} {
		name, cfg := fmt.Sprintf("size=%d", size), Config{Size: size}
		if size < 0 {
			name, cfg = "self-sized", Config{Auto: true, Every: 10 * time.Millisecond}
		}
		b.Run(name, func(b *testing.B) {
			var rates, p50s, p99s, sizes []float64
			for range b.N {
				p, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, bursts*burst)
				var mu sync.Mutex
				start := time.Now()
				for range bursts {
					var wg sync.WaitGroup
					for range burst {
						wg.Add(1)
						t0 := time.Now()
						p.Go(func() {
							spin(2 * time.Microsecond)
							d := time.Since(t0)
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
							wg.Done()
						})
					}
					wg.Wait()
					spin(200 * time.Microsecond)
				}
				el := time.Since(start)
				sizes = append(sizes, float64(p.Stats().Size))
				p.Close()
				slices.Sort(lat)
				rates = append(rates, float64(len(lat))/el.Seconds())
				p50s = append(p50s, float64(lat[len(lat)/2])/1e3)
				p99s = append(p99s, float64(lat[len(lat)*99/100])/1e3)
			}
			med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
			b.ReportMetric(med(rates), "tasks/s")
			b.ReportMetric(med(p50s), "p50-µs")
			b.ReportMetric(med(p99s), "p99-µs")
			b.ReportMetric(med(sizes), "size")
			b.ReportMetric(0, "ns/op")
		})
	}
}
