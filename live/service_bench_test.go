package live

import (
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
	"github.com/cohort-go/cohort/wire"
)

// pumped is a transport whose Sends wait in a queue shared by the cluster
// until the benchmark pumps them to their destination's handler, in the
// benchmark's goroutine: the host's own work per message, without a
// network or goroutine switches.
type pumped struct {
	self    proc.ID
	handler transport.Handler
	queue   *[]pumpedMsg
	nodes   []*pumped
}

type pumpedMsg struct {
	from, to proc.ID
	payload  []byte
}

func (p *pumped) Start(h transport.Handler) error { p.handler = h; return nil }
func (p *pumped) Send(to proc.ID, payload []byte) error {
	*p.queue = append(*p.queue, pumpedMsg{p.self, to, append([]byte(nil), payload...)})
	return nil
}
func (p *pumped) Addr() net.Addr         { return nil }
func (p *pumped) Stats() transport.Stats { return transport.Stats{} }
func (p *pumped) Close() error           { return nil }
func pump(nodes []*pumped, q *[]pumpedMsg) int {
	n := 0
	for len(*q) > 0 {
		m := (*q)[0]
		*q = (*q)[1:]
		nodes[m.to].handler(m.from, m.payload)
		n++
	}
	*q = (*q)[:0]
	return n
}

// BenchmarkRicartAgrawalaRound is one acquire and release of a
// Ricart–Agrawala lock on a node of a five-node cluster: 4 requests and 4
// replies through the hosts (encoding, routing, decoding, the handlers,
// the outputs), with the network taken out. Reported per message.
func BenchmarkRicartAgrawalaRound(b *testing.B) { raRound(b, nil) }

// BenchmarkRicartAgrawalaRoundTraced is the same round with every node
// tracing (to io.Discard): its events alone, and with the processes'
// states (Config.TraceStates).
func BenchmarkRicartAgrawalaRoundTraced(b *testing.B) {
	for _, states := range []bool{false, true} {
		b.Run(map[bool]string{false: "events", true: "states"}[states], func(b *testing.B) {
			raRound(b, func(c *Config) {
				c.Trace, c.TraceFamily, c.TraceAlgo, c.TraceStates = io.Discard, "mutex", "ricart-agrawala", states
			})
		})
	}
}

func raRound(b *testing.B, configure func(*Config)) {
	f, err := registry.Lookup("mutex")
	if err != nil {
		b.Fatal(err)
	}
	ra, err := f.Algorithm("ricart-agrawala")
	if err != nil {
		b.Fatal(err)
	}
	const n = 5
	var queue []pumpedMsg
	trs := make([]*pumped, n)
	var svcs []*Service
	for i := range trs {
		trs[i] = &pumped{self: proc.ID(i), queue: &queue, nodes: trs}
		cfg := Config{Self: proc.ID(i), N: n, Transport: trs[i],
			NewCodec: func(m []proc.Message) (Codec, error) { return wire.NewCodec(m) }}
		if configure != nil {
			configure(&cfg)
		}
		node, err := NewNode(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := node.Start(); err != nil {
			b.Fatal(err)
		}
		defer node.Close()
		s, err := node.Service("lock/bench", ra)
		if err != nil {
			b.Fatal(err)
		}
		svcs = append(svcs, s)
	}
	// Every service has started (and takes its events at once) when its
	// turn is free.
	for _, s := range svcs {
		for !s.turn.TryLock() {
			runtime.Gosched()
		}
		s.turn.Unlock()
	}
	svc0 := svcs[0]
	entered, exited := 0, 0
	svc0.OnOutput(func(o proc.Output) {
		switch o.(type) {
		case mutex.Enter:
			entered++
		case mutex.Exit:
			exited++
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	msgs := 0
	for range b.N {
		if err := svc0.Input(mutex.Acquire{}); err != nil {
			b.Fatal(err)
		}
		msgs += pump(trs, &queue)
		if err := svc0.Input(mutex.Release{}); err != nil {
			b.Fatal(err)
		}
		msgs += pump(trs, &queue)
	}
	b.StopTimer()
	if entered != b.N || exited != b.N {
		b.Fatalf("%d entries and %d exits in %d rounds", entered, exited, b.N)
	}
	b.ReportMetric(float64(msgs)/float64(b.N), "msgs/round")
}
