package transport

import (
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

const benchPayload = 32

// BenchmarkPingPong measures a round trip per op: a payload to the other
// member, which sends it back. bare-tcp is the floor: the same exchange
// written and read directly on a loopback net.Conn by one goroutine, which
// writes the next ping as soon as it has read the pong. tcp, tls and inproc
// do the same from the handler that receives the pong; tcp-caller instead
// has the benchmark goroutine wait for each pong on a channel, as a host
// does, which adds a goroutine wake-up per round trip.
func BenchmarkPingPong(b *testing.B) {
	tcp := func(b *testing.B) [2]Transport {
		trs := newTCPCluster(b, 2, nil)
		return [2]Transport{trs[0], trs[1]}
	}
	b.Run("bare-tcp", benchBarePingPong)
	b.Run("tcp", func(b *testing.B) { benchPingPong(b, tcp(b)) })
	b.Run("tcp-caller", func(b *testing.B) { benchPingPongCaller(b, tcp(b)) })
	b.Run("tls", func(b *testing.B) {
		dir := b.TempDir()
		if err := GenerateCerts(dir, 2); err != nil {
			b.Fatal(err)
		}
		trs := newTCPCluster(b, 2, func(c *Config) {
			cfg, err := LoadTLS(dir, c.Self)
			if err != nil {
				b.Fatal(err)
			}
			c.Secret, c.TLS = nil, cfg
		})
		benchPingPong(b, [2]Transport{trs[0], trs[1]})
	})
	b.Run("inproc", func(b *testing.B) {
		nw, err := NewInProc(2, InProcConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer nw.Close()
		a, _ := nw.Endpoint(0)
		c, _ := nw.Endpoint(1)
		benchPingPong(b, [2]Transport{a, c})
	})
}

func benchBarePingPong(b *testing.B) {
	ln := listen(b)
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, benchPayload)
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	out, in := make([]byte, benchPayload), make([]byte, benchPayload)
	for b.Loop() {
		if _, err := conn.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, in); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPingPong runs b.N round trips, each ping sent by the handler that
// received the previous pong.
func benchPingPong(b *testing.B, trs [2]Transport) {
	a, c := trs[0], trs[1]
	var left atomic.Int64
	done := make(chan struct{}, 1)
	p := make([]byte, benchPayload)
	a.Start(func(proc.ID, []byte) {
		if left.Add(-1) <= 0 {
			done <- struct{}{}
			return
		}
		a.Send(1, p)
	})
	c.Start(func(from proc.ID, p []byte) { c.Send(from, p) })
	run := func(n int) {
		left.Store(int64(n))
		if err := a.Send(1, p); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatalf("%d round trips left", left.Load())
		}
	}
	run(10) // both connections are up
	if t, ok := a.(*TCP); ok {
		// acks/msg: ack frames the caller receives, most of them
		// piggybacked on replies; ack-writes/msg: writes, at either end,
		// that carried an ack alone (a segment of its own).
		acks := t.peer(1).q.acks.Load
		alone := func() uint64 { return t.peer(1).q.ackWrites.Load() + c.(*TCP).peer(0).q.ackWrites.Load() }
		before, beforeAlone := acks(), alone()
		defer func() {
			b.ReportMetric(float64(acks()-before)/float64(b.N), "acks/msg")
			b.ReportMetric(float64(alone()-beforeAlone)/float64(b.N), "ack-writes/msg")
		}()
	}
	b.ResetTimer()
	run(b.N)
}

// benchPingPongCaller runs b.N round trips from the benchmark goroutine,
// which waits for each pong on a channel.
func benchPingPongCaller(b *testing.B, trs [2]Transport) {
	a, c := trs[0], trs[1]
	pong := make(chan struct{}, 1)
	a.Start(func(proc.ID, []byte) { pong <- struct{}{} })
	c.Start(func(from proc.ID, p []byte) { c.Send(from, p) })
	p := make([]byte, benchPayload)
	for i := range b.N + 10 {
		if i == 10 { // both connections are up
			b.ResetTimer()
		}
		if err := a.Send(1, p); err != nil {
			b.Fatal(err)
		}
		<-pong
	}
}

// BenchmarkThroughput measures one-way throughput of small payloads: b.N
// payloads of 32 bytes sent as fast as Send takes them, until the last has
// been handled. It reports messages per second, wire bytes per message and
// messages per write call (the batching).
func BenchmarkThroughput(b *testing.B) {
	b.Run("tcp", func(b *testing.B) {
		trs := newTCPCluster(b, 2, nil)
		benchThroughput(b, trs[0], trs[1])
		st := trs[0].Stats().Peers[1]
		b.ReportMetric(float64(st.SentBytes)/float64(st.Sent), "wire-B/msg")
		b.ReportMetric(float64(st.Sent)/float64(trs[0].peer(1).q.nWrites.Load()), "msgs/write")
		b.ReportMetric(float64(trs[0].peer(1).q.acks.Load())/float64(st.Sent), "acks/msg")
	})
	b.Run("inproc", func(b *testing.B) {
		nw, err := NewInProc(2, InProcConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer nw.Close()
		a, _ := nw.Endpoint(0)
		c, _ := nw.Endpoint(1)
		benchThroughput(b, a, c)
	})
}

func benchThroughput(b *testing.B, a, c Transport) {
	var got atomic.Int64
	target := int64(b.N) + 1
	first, done := make(chan struct{}), make(chan struct{})
	a.Start(func(proc.ID, []byte) {})
	c.Start(func(proc.ID, []byte) {
		switch got.Add(1) {
		case 1:
			close(first)
		case target:
			close(done)
		}
	})
	p := make([]byte, benchPayload)
	// The first payload waits for the connection.
	if err := a.Send(1, p); err != nil {
		b.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		b.Fatal("no connection")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		if a.Send(1, p) == nil {
			i++
		} else {
			runtime.Gosched()
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatalf("%d of %d delivered", got.Load(), target)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
