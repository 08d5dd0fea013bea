package dht_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/dht"
	"github.com/cohort-go/cohort/proc"
)

// quantile is the q-quantile of sorted ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// BenchmarkGet: gets of 100 keys through every node of a cluster on
// loopback, one at a time: the route's hops there, and the answer's way
// back. With 8 nodes (4 founders, 4 that joined) every node is in every
// leaf set; with 32 (founders) routes take prefix hops. Reports the
// latency's p50 and p99 and the mean overlay hops.
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{8, 32} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchGet(b, n) })
	}
}

func benchGet(b *testing.B, n int) {
	founders := n
	if n == 8 {
		founders = 4
	}
	c := newCluster(b, founders)
	for _, s := range c.servers {
		<-s.Ready()
	}
	for id := proc.ID(founders); id < proc.ID(n); id++ {
		c.join(id, id-1-id%2)
	}
	ctx := context.Background()
	ids := c.ids()
	const keys = 100
	for k := range keys {
		if _, err := c.servers[ids[k%len(ids)]].Put(ctx, fmt.Sprintf("key-%d", k), "v"); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	hops := 0
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		r, err := c.servers[ids[i%len(ids)]].Get(ctx, fmt.Sprintf("key-%d", i%keys))
		if err != nil || !r.Found {
			b.Fatalf("get: %+v %v", r, err)
		}
		lat = append(lat, time.Since(start))
		hops += r.Hops
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(quantile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(quantile(lat, 0.99).Microseconds()), "p99-µs")
	b.ReportMetric(float64(hops)/float64(b.N), "hops/get")
}

// BenchmarkRepairAfterKill: an 8-node cluster with 40 keys and a group
// of 4 listeners; the group's root (the home of the group's name, and of
// some keys) is closed as a crash would. Reports how long until every
// survivor has read every key (get-repair-ms: gets that meet the dead
// home go around it, or wait for RequestTimeout and ask again), and
// until a multicast published then reaches every listener
// (tree-repair-ms: the root's children notice its silence and rejoin,
// and the node now closest becomes the root). One cluster per iteration:
// run with -benchtime=5x.
func BenchmarkRepairAfterKill(b *testing.B) {
	var gets, trees []time.Duration
	for range b.N {
		b.StopTimer()
		c := newCluster(b, 8)
		for _, s := range c.servers {
			<-s.Ready()
		}
		ctx := context.Background()
		ids := c.ids()
		const keys = 40
		for k := range keys {
			if _, err := c.servers[ids[k%len(ids)]].Put(ctx, fmt.Sprintf("key-%d", k), "v"); err != nil {
				b.Fatal(err)
			}
		}
		root, err := c.servers[0].Lookup(ctx, "g") // a group's root is its name's home
		if err != nil {
			b.Fatal(err)
		}
		var others []proc.ID
		for _, id := range ids {
			if id != proc.ID(root.Home) {
				others = append(others, id)
			}
		}
		publisher, listeners := others[0], others[1:5]
		var mu sync.Mutex
		got := map[proc.ID]map[string]bool{}
		for _, id := range listeners {
			got[id] = map[string]bool{}
			stop, err := c.servers[id].Listen(ctx, "g", func(m dht.Message) {
				mu.Lock()
				got[id][m.Body] = true
				mu.Unlock()
			})
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
		}
		probe := 0
		reached := func(members []proc.ID) func() error {
			return func() error {
				probe++
				body := fmt.Sprint(probe)
				if _, err := c.servers[publisher].Publish(ctx, "g", body); err != nil {
					return err
				}
				for range 10 {
					mu.Lock()
					all := true
					for _, id := range members {
						all = all && got[id][body]
					}
					mu.Unlock()
					if all {
						return nil
					}
					time.Sleep(10 * time.Millisecond)
				}
				return fmt.Errorf("multicast %s missed", body)
			}
		}
		waitFor(b, "the tree", 30*time.Second, reached(listeners))
		b.StartTimer()
		start := time.Now()
		c.kill(proc.ID(root.Home))
		survivors := c.ids()
		done := make(chan time.Duration, 1)
		go func() {
			var wg sync.WaitGroup
			for _, id := range survivors {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range keys {
						if r, err := c.servers[id].Get(ctx, fmt.Sprintf("key-%d", k)); err != nil || !r.Found {
							b.Errorf("get key-%d at p%d: %+v %v", k, id, r, err)
						}
					}
				}()
			}
			wg.Wait()
			done <- time.Since(start)
		}()
		waitFor(b, "the tree repaired", 30*time.Second, reached(listeners))
		trees = append(trees, time.Since(start))
		gets = append(gets, <-done)
		b.StopTimer()
		for id := range c.Nodes {
			c.kill(id)
		}
	}
	slices.Sort(gets)
	slices.Sort(trees)
	b.ReportMetric(float64(quantile(gets, 0.5).Milliseconds()), "get-repair-ms")
	b.ReportMetric(float64(quantile(trees, 0.5).Milliseconds()), "tree-repair-ms")
}
