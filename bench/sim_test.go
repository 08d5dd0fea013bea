package bench

import (
	"runtime"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
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

// BenchmarkSimFlood: 100k nodes each sending 10 messages to random peers:
// a million events in flight, so this measures the queue at depth.
func BenchmarkSimFlood(b *testing.B) {
	b.ReportAllocs()
	var delivered int64
	for i := 0; i < b.N; i++ {
		r, err := Flood(100_000, 10, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		delivered += r.Deliveries
	}
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
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
