package live_test

import (
	"io"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// ticker sets a timer of period again each time one goes off, as a SWIM
// member sets its period's, and pings the next node, which answers; it
// counts its timers in fired.
type ticker struct {
	period time.Duration
	fired  *atomic.Int64
}

type tick struct{ Seq uint64 }

func (tick) Kind() string { return "tick" }

type tock struct{ Seq uint64 }

func (tock) Kind() string { return "tock" }

func (p ticker) Start(env proc.Env) { env.SetTimer(p.period, nil) }
func (p ticker) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if t, ok := m.(tick); ok {
		env.Send(from, tock(t))
	}
}
func (p ticker) Input(proc.Env, proc.Input) {}
func (p ticker) Timeout(env proc.Env, _ any) {
	n := p.fired.Add(1)
	env.Send((env.Self()+1)%proc.ID(env.N()), tick{Seq: uint64(n)})
	env.SetTimer(p.period, nil)
}

// BenchmarkTimers: 200 nodes in one process, each with a service whose
// timer of 2 ms goes off and is set again — 100,000 timers a second, the
// timers of a thousand SWIM members at a 10 ms period — and pings the
// next node, which answers, until b.N timers have gone off. Reported: the
// process's CPU time (user and system) per timer, its ping and its ack.
func BenchmarkTimers(b *testing.B) {
	const nodes = 200
	nw, err := transport.NewInProc(nodes, transport.InProcConfig{})
	if err != nil {
		b.Fatal(err)
	}
	var fired atomic.Int64
	var ns []*live.Node
	defer func() {
		for _, n := range ns {
			n.Close()
		}
	}()
	start, cpu := time.Now(), cpuTime()
	for i := range nodes {
		ep, _ := nw.Endpoint(proc.ID(i))
		n, err := live.NewNode(live.Config{Self: proc.ID(i), N: nodes, Transport: ep, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		ns = append(ns, n)
		if err := n.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := n.Service("ticker", proc.Algorithm{Family: "test", Name: "ticker",
			Messages: []proc.Message{tick{}, tock{}},
			New:      func(proc.ID, int) proc.Process { return ticker{period: 2 * time.Millisecond, fired: &fired} }}); err != nil {
			b.Fatal(err)
		}
	}
	for fired.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%d timers in 5 minutes", fired.Load())
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(fired.Load()), "cpu-ns/timer")
}

// quiet drops the log: the first pings reach nodes not yet started.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
