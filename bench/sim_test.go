package bench

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/trace"
)

func TestFloodDeliversEverything(t *testing.T) {
	r, err := Flood(1000, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Deliveries != 10000 {
		t.Errorf("deliveries = %d, want 10000", r.Deliveries)
	}
	if _, err := Flood(0, 10, 1); err == nil {
		t.Error("flood with 0 nodes accepted")
	}
}

func TestPingPongCounts(t *testing.T) {
	r, err := PingPong(1001, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Deliveries != 1001 {
		t.Errorf("deliveries = %d, want 1001", r.Deliveries)
	}
}

// BenchmarkSimPingPong: per-delivery cost of the simulator with a trivial
// handler and a short queue. Reports deliveries/s.
func BenchmarkSimPingPong(b *testing.B) {
	b.ReportAllocs()
	left := int64(b.N)
	s, err := sim.New(sim.Config{Nodes: 2, New: func(proc.ID, int) proc.Process { return &pinger{left: &left} }})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	res, err := s.Run()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.Delivered)/b.Elapsed().Seconds(), "deliveries/s")
}

// cpuSeconds is the process's CPU time so far, user and system. On a
// shared, loaded machine a run's CPU time says more about its cost than
// its wall time, which counts the time others had the processor.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkSimFlood: 100k nodes each sending 10 messages to random peers:
// a million events in flight, so this measures the queue at depth.
// Reports deliveries per second of wall time and of CPU time.
func BenchmarkSimFlood(b *testing.B) {
	b.ReportAllocs()
	var delivered int64
	cpu := cpuSeconds()
	for i := 0; i < b.N; i++ {
		r, err := Flood(100_000, 10, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		delivered += r.Deliveries
	}
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(delivered)/(cpuSeconds()-cpu), "deliveries/cpu-s")
}

// idle does nothing at all: the bytes the host spends per simulated
// process, beyond the process's own state.
type idle struct{}

func (*idle) Start(proc.Env)                          {}
func (*idle) Receive(proc.Env, proc.ID, proc.Message) {}
func (*idle) Timeout(proc.Env, any)                   {}
func (*idle) Input(proc.Env, proc.Input)              {}

// BenchmarkSimIdleNodeBytes reports the simulator's heap bytes per idle
// process (one shared zero-size process value, so only host state counts).
func BenchmarkSimIdleNodeBytes(b *testing.B) {
	const n = 1_000_000
	var perNode float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		shared := &idle{}
		s, err := sim.New(sim.Config{Nodes: n, New: func(proc.ID, int) proc.Process { return shared },
			Network: sim.Network{Latency: sim.Constant(time.Millisecond)}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		perNode = float64(after.TotalAlloc-before.TotalAlloc) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perNode, "bytes/node")
}

func TestPHOLDKeepsItsPopulationAndIsDeterministic(t *testing.T) {
	p := PHOLD{Processes: 500, Events: 4, Lookahead: 100 * time.Microsecond, Mean: time.Millisecond, Deliveries: 20_000, Seed: 9}
	cfg, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	hash := func(cfg sim.Config) (string, sim.Result) {
		h := trace.NewHasher(trace.Header{Nodes: p.Processes})
		cfg.Trace = h
		s, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		return h.Sum(), res
	}
	a, res := hash(cfg)
	cfg2, _ := p.Config()
	b, _ := hash(cfg2)
	if a != b {
		t.Error("same seed, different PHOLD traces")
	}
	// Every delivery sends one more: sent = initial population + delivered.
	if res.Delivered != 20_000 || res.Sent != 2000+res.Delivered {
		t.Errorf("delivered %d, sent %d; want 20000 and 2000 + delivered", res.Delivered, res.Sent)
	}
	if res.Stop != sim.StopMaxEvents {
		t.Errorf("stopped: %s, want max-events", res.Stop)
	}
	// Remote 0.5: about half of the events stay home.
	p.Remote, p.Deliveries = 0.5, 0 // the default: 4 × 500 × 4 deliveries
	rec := &trace.Recorder{}
	cfg, _ = p.Config()
	cfg.Trace = rec
	s, _ := sim.New(cfg)
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var home, all float64
	for _, e := range rec.Trace.Events {
		if e.Kind == trace.Send {
			all++
			if e.Peer == e.Node {
				home++
			}
		}
	}
	// Staying home: 1 - 0.5 + 0.5/500 of the sends.
	if f := home / all; f < 0.45 || f > 0.55 {
		t.Errorf("%.3f of the events stayed home, want about 0.5", f)
	}
	for _, bad := range []PHOLD{{Processes: 0, Events: 1, Mean: 1}, {Processes: 1, Events: 0, Mean: 1},
		{Processes: 1, Events: 1, Remote: 2, Mean: 1}, {Processes: 1, Events: 1}} {
		if _, err := bad.Config(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// BenchmarkPHOLD: the standard PHOLD workload (10 events per process, all
// remote, 0.1 ms lookahead + exp 1 ms) at 10³ and 10⁵ processes; each
// iteration delivers every event of the population four times on average.
// Reports deliveries per second of wall time and of CPU time (the process's,
// the garbage collector's included).
func BenchmarkPHOLD(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("processes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var delivered int64
			cpu := cpuSeconds()
			for i := 0; i < b.N; i++ {
				p := DefaultPHOLD()
				p.Processes, p.Seed = n, uint64(i+1) // four deliveries per event of the population
				r, err := p.Run()
				if err != nil {
					b.Fatal(err)
				}
				delivered += r.Deliveries
			}
			b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
			b.ReportMetric(float64(delivered)/(cpuSeconds()-cpu), "deliveries/cpu-s")
		})
	}
}
