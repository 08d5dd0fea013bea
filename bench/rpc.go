package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/pool"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
)

// RPCConfig is a run of live RPC on loopback: two nodes over TCP, node 1
// calling an echo procedure on node 0.
type RPCConfig struct {
	// Sem is the calls' semantics; 0 means at-most-once.
	Sem rpc.Semantics
	// Callers call at once, each one call after another; 0 means 1.
	Callers int
	// Calls is the number of calls of the run; 0 means 2000.
	Calls int
	// Payload is the arguments' size in bytes, echoed back; 0 means 128.
	Payload int
	// Disk keeps the stubs' stable storage in files, synced (the
	// duplicate table of at-most-once and maybe); without it, in memory.
	Disk bool
	// Pool is the server's worker pool; the zero value is a self-sized
	// one.
	Pool *pool.Config
	// Bursts, if positive, sends the calls in bursts: all Callers call
	// at once, once each, then wait Bursts before the next burst.
	Bursts time.Duration
	// Work is how long the procedure sleeps; 0: it echoes at once.
	Work time.Duration
}

// RPCResult is what a run measured.
type RPCResult struct {
	Calls    int           `json:"calls"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	PerSec   float64       `json:"calls_per_sec"`
	P50, P99 time.Duration `json:"-"`
	P50us    float64       `json:"p50_us"`
	P99us    float64       `json:"p99_us"`
	// Pool is the server pool's state at the end.
	Pool pool.Stats `json:"pool"`
}

// Drive calls call calls times from callers goroutines (in bursts if
// gap > 0: every caller once, then a pause of gap) and measures the
// throughput and the latency percentiles. A failed call ends the run with
// its error.
func Drive(ctx context.Context, callers, calls int, gap time.Duration, call func(context.Context) error) (RPCResult, error) {
	callers = max(callers, 1)
	lat := make([]time.Duration, calls)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	one := func() bool {
		i := int(next.Add(1)) - 1
		if i >= calls || ctx.Err() != nil {
			return false
		}
		t0 := time.Now()
		if err := call(ctx); err != nil {
			fail(err)
			return false
		}
		lat[i] = time.Since(t0)
		return true
	}
	start := time.Now()
	if gap <= 0 {
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for one() {
				}
			})
		}
		wg.Wait()
	} else {
		for int(next.Load()) < calls && ctx.Err() == nil {
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() { one() })
			}
			wg.Wait()
			time.Sleep(gap)
		}
	}
	elapsed := time.Since(start)
	if firstErr != nil {
		return RPCResult{}, firstErr
	}
	slices.Sort(lat)
	r := RPCResult{Calls: calls, Elapsed: elapsed, PerSec: float64(calls) / elapsed.Seconds(),
		P50: percentile(lat, 50), P99: percentile(lat, 99)}
	r.P50us, r.P99us = micros(r.P50), micros(r.P99)
	return r, nil
}

// RPCPair is two live nodes on loopback, each with an RPC endpoint;
// node 0 serves "echo".
type RPCPair struct {
	Server, Client *liverpc.Endpoint
	nodes          []*live.Node
	dir            string
}

// StartRPCPair starts the pair: stable storage under a temporary
// directory if disk, the server's pool as pc (nil: self-sized), the echo
// procedure sleeping work first.
func StartRPCPair(disk bool, pc *pool.Config, work time.Duration) (_ *RPCPair, err error) {
	log := slog.New(slog.DiscardHandler)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	trs, err := loopbackTransports(2, secret, log)
	if err != nil {
		return nil, err
	}
	p := &RPCPair{}
	defer func() {
		if err != nil {
			for _, tr := range trs[len(p.nodes):] {
				tr.Close()
			}
			p.Close()
		}
	}()
	if disk {
		if p.dir, err = os.MkdirTemp("", "cohort-bench-rpc-"); err != nil {
			return nil, err
		}
	}
	cfg := liverpc.DefaultConfig()
	if pc != nil {
		cfg.Pool = *pc
	}
	var eps []*liverpc.Endpoint
	for i, tr := range trs {
		lc := live.Config{Self: proc.ID(i), N: 2, Transport: tr, Logger: log}
		if disk {
			lc.DataDir = filepath.Join(p.dir, fmt.Sprintf("node%d", i))
		}
		n, err := live.NewNode(lc)
		if err != nil {
			return nil, err
		}
		p.nodes = append(p.nodes, n)
		ep, err := liverpc.New(n, cfg)
		if err != nil {
			return nil, err
		}
		eps = append(eps, ep)
		if err := ep.Handle("echo", func(ctx context.Context, b []byte) ([]byte, error) {
			if work > 0 {
				time.Sleep(work)
			}
			return b, nil
		}); err != nil {
			return nil, err
		}
		if err := n.Start(); err != nil {
			return nil, err
		}
	}
	p.Server, p.Client = eps[0], eps[1]
	return p, nil
}

// Close stops the nodes and removes their storage.
func (p *RPCPair) Close() {
	for _, n := range p.nodes {
		_ = n.Close()
	}
	if p.Server != nil {
		p.Server.Close()
		p.Client.Close()
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// RunRPC runs cfg once.
func RunRPC(ctx context.Context, cfg RPCConfig) (RPCResult, error) {
	if cfg.Calls == 0 {
		cfg.Calls = 2000
	}
	if cfg.Payload == 0 {
		cfg.Payload = 128
	}
	if cfg.Sem == 0 {
		cfg.Sem = rpc.AtMostOnce
	}
	p, err := StartRPCPair(cfg.Disk, cfg.Pool, cfg.Work)
	if err != nil {
		return RPCResult{}, err
	}
	defer p.Close()
	payload := make([]byte, cfg.Payload)
	_, _ = rand.Read(payload)
	// A long attempt timer: the run measures what the server can do, not
	// how soon a client gives up on it (a synced duplicate table costs two
	// fsyncs a call, one after another).
	o := liverpc.Options{Sem: cfg.Sem, Attempt: 10 * time.Second}
	// A first call connects the nodes.
	if _, err := p.Client.Invoke(ctx, 0, "echo", payload, o); err != nil {
		return RPCResult{}, fmt.Errorf("warm-up call: %w", err)
	}
	r, err := Drive(ctx, cfg.Callers, cfg.Calls, cfg.Bursts, func(ctx context.Context) error {
		got, err := p.Client.Invoke(ctx, 0, "echo", payload, o)
		if err == nil && len(got) != len(payload) {
			err = errors.New("echo returned a different payload")
		}
		return err
	})
	r.Pool = p.Server.Stats().Pool
	return r, err
}

// Median returns the run whose throughput is the median of rs, with the
// median p50 and p99 of rs (each median taken on its own).
func Median(rs []RPCResult) RPCResult {
	if len(rs) == 0 {
		return RPCResult{}
	}
	med := func(f func(RPCResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m := slices.Clone(rs)
	slices.SortFunc(m, func(a, b RPCResult) int {
		switch {
		case a.PerSec < b.PerSec:
			return -1
		case a.PerSec > b.PerSec:
			return 1
		}
		return 0
	})
	out := m[len(m)/2]
	out.P50 = time.Duration(med(func(r RPCResult) float64 { return float64(r.P50) }))
	out.P99 = time.Duration(med(func(r RPCResult) float64 { return float64(r.P99) }))
	out.P50us, out.P99us = micros(out.P50), micros(out.P99)
	return out
}
