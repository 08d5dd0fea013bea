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
// written and read directly on a loopback net.Conn.
func BenchmarkPingPong(b *testing.B) {
	b.Run("bare-tcp", benchBarePingPong)
	b.Run("tcp", func(b *testing.B) {
		trs := newTCPCluster(b, 2, nil)
		benchPingPong(b, trs[0], trs[1])
	})
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
		benchPingPong(b, trs[0], trs[1])
	})
	b.Run("inproc", func(b *testing.B) {
		nw, err := NewInProc(2, InProcConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer nw.Close()
		a, _ := nw.Endpoint(0)
		c, _ := nw.Endpoint(1)
		benchPingPong(b, a, c)
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

func benchPingPong(b *testing.B, a, c Transport) {
	pong := make(chan struct{}, 1)
	a.Start(func(proc.ID, []byte) { pong <- struct{}{} })
	c.Start(func(from proc.ID, p []byte) { c.Send(from, p) })
	p := make([]byte, benchPayload)
	roundTrip := func() {
		if err := a.Send(1, p); err != nil {
			b.Fatal(err)
		}
		<-pong
	}
	roundTrip() // both connections are up
	for b.Loop() {
		roundTrip()
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
		b.ReportMetric(float64(st.Sent)/float64(trs[0].peers[1].q.nWrites.Load()), "msgs/write")
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
	done := make(chan struct{})
	a.Start(func(proc.ID, []byte) {})
	c.Start(func(proc.ID, []byte) {
		if got.Add(1) == target {
			close(done)
		}
	})
	p := make([]byte, benchPayload)
	// The first payload waits for the connection.
	if err := a.Send(1, p); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() == 0 {
		if time.Now().After(deadline) {
			b.Fatal("no connection")
		}
		runtime.Gosched()
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
