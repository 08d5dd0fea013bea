package bench

import (
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// token is the benchmark's message: zero-sized, so sending it allocates
// nothing and the figures measure the simulator, not the handler.
type token struct{}

func (token) Kind() string { return "token" }

// flooder sends its quota of messages to random peers when it starts, and
// does nothing when one arrives: the trivial handler of the scale run.
type flooder struct{ quota int32 }

func (f *flooder) Start(env proc.Env) {
	r, n := env.Rand(), env.N()
	for i := int32(0); i < f.quota; i++ {
		env.Send(proc.ID(r.IntN(n)), token{})
	}
}
func (*flooder) Receive(proc.Env, proc.ID, proc.Message) {}
func (*flooder) Timeout(proc.Env, any)                   {}
func (*flooder) Input(proc.Env, proc.Input)              {}

// pinger bounces a token back to its sender until rounds deliveries have
// happened in the whole run: the trivial handler of the throughput run. Two
// processes keep the queue short, so this measures per-event cost.
type pinger struct{ left *int64 }

func (p *pinger) Start(env proc.Env) {
	if env.Self() == 0 {
		env.Send(1, token{})
	}
}
func (p *pinger) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if *p.left--; *p.left > 0 {
		env.Send(from, m)
	}
}
func (*pinger) Timeout(proc.Env, any)      {}
func (*pinger) Input(proc.Env, proc.Input) {}

// SimResult is the JSON contract of `cohort bench sim`.
type SimResult struct {
	Workload       string  `json:"workload"`
	Nodes          int     `json:"nodes"`
	Deliveries     int64   `json:"deliveries"`
	WallS          float64 `json:"wall_s"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
}

// Flood runs nodes processes that each send perNode messages to random
// peers at start, with exponential latency, vector clocks and tracing off.
func Flood(nodes, perNode int, seed uint64) (SimResult, error) {
	if nodes < 1 || perNode < 0 {
		return SimResult{}, fmt.Errorf("flood: nodes %d, messages per node %d: need nodes >= 1 and messages >= 0", nodes, perNode)
	}
	if err := sim.CheckMemory(nodes, func(proc.ID, int) proc.Process { return &flooder{} }); err != nil {
		return SimResult{}, err
	}
	procs := sim.MakeHuge[flooder](nodes) // one allocation for all processes
	cfg := sim.Config{
		Nodes: nodes, Seed: seed,
		New: func(id proc.ID, _ int) proc.Process {
			procs[id].quota = int32(perNode)
			return &procs[id]
		},
		Network:   sim.Network{Latency: sim.Exponential{MeanD: time.Millisecond}},
		NoGarbage: true, // the flooders make none: every event is live until delivered
	}
	return measure("flood", cfg)
}

// PingPong runs two processes bouncing one message deliveries times.
func PingPong(deliveries int64, seed uint64) (SimResult, error) {
	if deliveries < 1 {
		return SimResult{}, fmt.Errorf("ping-pong: deliveries %d: need at least 1", deliveries)
	}
	left := deliveries
	cfg := sim.Config{
		Nodes: 2, Seed: seed,
		New: func(proc.ID, int) proc.Process { return &pinger{left: &left} },
	}
	return measure("ping-pong", cfg)
}

func measure(name string, cfg sim.Config) (SimResult, error) {
	start := time.Now()
	s, err := sim.New(cfg)
	if err != nil {
		return SimResult{}, err
	}
	res, err := s.Run()
	if err != nil {
		return SimResult{}, err
	}
	wall := time.Since(start).Seconds()
	return SimResult{
		Workload: name, Nodes: cfg.Nodes, Deliveries: res.Delivered, WallS: wall,
		DeliveriesPerS: float64(res.Delivered) / wall, PeakRSSBytes: PeakRSS(),
	}, nil
}

// PeakRSS is the process's peak resident set size in bytes (0 where the
// platform does not say).
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes there
	}
	return ru.Maxrss * 1024 // KiB on Linux
}
