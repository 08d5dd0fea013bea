package ntp

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// The exchange's formulas (θ, and δ as RFC 5905 defines it: the round
// trip less the server's time), worked on exchanges whose answers are known.
func TestSampleOffsetAndDelay(t *testing.T) {
	at := func(s string) time.Time { return date("2026-01-01T00:00:" + s + "Z") }
	cases := []struct {
		name           string
		t1, t2, t3, t4 string
		offset, delay  time.Duration
	}{
		{"server ahead", "10.000", "10.503", "10.504", "10.007", 500 * time.Millisecond, 6 * time.Millisecond},
		{"server behind", "10.000", "09.004", "09.005", "10.009", -1000 * time.Millisecond, 8 * time.Millisecond},
		{"same clock", "10.000", "10.002", "10.003", "10.005", 0, 4 * time.Millisecond},
		// The request takes 1 ms and the answer 9: θ is off by
		// their half-difference, 4 ms, within δ/2 = 5 ms of the truth (0).
		{"asymmetric legs", "10.000", "10.001", "10.001", "10.010", -4 * time.Millisecond, 10 * time.Millisecond},
	}
	for _, c := range cases {
		p := Packet{Version: 4, Mode: ModeServer, Stratum: 2, Receive: TimestampOf(at(c.t2)), Transmit: TimestampOf(at(c.t3))}
		s := newSample(at(c.t1), at(c.t4), p)
		if s.Offset != c.offset || s.Delay != c.delay || s.OneWay != c.delay/2 {
			t.Errorf("%s: θ %v δ %v one way %v, want θ %v δ %v", c.name, s.Offset, s.Delay, s.OneWay, c.offset, c.delay)
		}
		if !s.T2.Equal(at(c.t2)) || !s.T3.Equal(at(c.t3)) {
			t.Errorf("%s: T2 %s T3 %s, want %s and %s", c.name, s.T2, s.T3, c.t2, c.t3)
		}
	}
}

// fakeServer answers each request read on a loopback socket with the
// packets answer returns (none, one, or more), until the test ends.
// answer gets the request's number, from 0, and the request.
func fakeServer(t *testing.T, answer func(i int, req Packet) []Packet) string {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for i := 0; ; i++ {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			req, err := Decode(buf[:n])
			if err != nil {
				t.Errorf("the client sent a malformed request: %v", err)
				return
			}
			for _, p := range answer(i, req) {
				b, err := p.Encode()
				if err != nil {
					t.Errorf("fake reply: %v", err)
					return
				}
				conn.WriteTo(b, from)
			}
		}
	}()
	return conn.LocalAddr().String()
}

// good answers req honestly, with the given clock shift, T2 = T3.
func good(req Packet, shift time.Duration) Packet {
	now := TimestampOf(time.Now().Add(shift))
	return Packet{Version: 4, Mode: ModeServer, Stratum: 3, RefID: RefID{192, 0, 2, 1}, Origin: req.Transmit, Receive: now, Transmit: now}
}

func TestClientSendsAProperRequest(t *testing.T) {
	reqs := make(chan Packet, 3)
	addr := fakeServer(t, func(_ int, req Packet) []Packet {
		reqs <- req
		return []Packet{good(req, 0)}
	})
	c := Client{Samples: 3}
	if _, err := c.Query(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	seen := map[Timestamp]bool{}
	for range 3 {
		r := <-reqs
		if r.Version != 4 || r.Mode != ModeClient || r.Transmit.IsZero() || seen[r.Transmit] {
			t.Errorf("request %+v: want version 4, mode 3, a fresh non-zero transmit timestamp", r)
		}
		seen[r.Transmit] = true
	}
}

// A reply whose origin is not the request's transmit timestamp — a
// forgery, or a late answer to an earlier request — is ignored; the
// genuine one that follows is taken.
func TestClientIgnoresRepliesThatDoNotMatch(t *testing.T) {
	addr := fakeServer(t, func(_ int, req Packet) []Packet {
		forged := good(req, time.Hour)
		forged.Origin = req.Transmit + 1
		return []Packet{forged, {Version: 4, Mode: ModeServer}, good(req, 2*time.Second)}
	})
	r, err := Query(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if (r.Offset - 2*time.Second).Abs() > 100*time.Millisecond {
		t.Errorf("offset %v, want the genuine reply's 2s", r.Offset)
	}
	if r.Stratum != 3 || r.RefID.Format(r.Stratum) != "192.0.2.1" {
		t.Errorf("stratum %d refid %s, want 3 and 192.0.2.1", r.Stratum, r.RefID.Format(r.Stratum))
	}
}

// With only forgeries, the query times out and says what it ignored.
func TestClientTimesOutNamingWhatItIgnored(t *testing.T) {
	addr := fakeServer(t, func(_ int, req Packet) []Packet {
		forged := good(req, 0)
		forged.Origin = req.Transmit ^ 0xff
		return []Packet{forged}
	})
	c := Client{Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, err := c.Query(context.Background(), addr)
	if !errors.Is(err, ErrNoReply) || !strings.Contains(err.Error(), "ignored 1 packet(s)") || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("err = %v, want ErrNoReply naming the ignored forgery", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v with a 100ms timeout", el)
	}
}

// Replies that match the request but cannot be used fail the sample, with
// an error that names what is wrong.
func TestClientRejectsBadReplies(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(*Packet)
		check func(error) bool
		want  string
	}{
		{"wrong mode", func(p *Packet) { p.Mode = ModeClient }, nil, "reply in mode 3 (client), want 4 (server)"},
		{"zero transmit", func(p *Packet) { p.Transmit = 0 }, nil, "zero transmit timestamp"},
		{"alarm", func(p *Packet) { p.Leap = LeapUnknown }, func(err error) bool { return errors.Is(err, ErrUnsynchronized) }, "leap indicator 3"},
		{"stratum 16", func(p *Packet) { p.Stratum = 16 }, func(err error) bool { return errors.Is(err, ErrUnsynchronized) }, "stratum 16"},
		{"kiss-o'-death", func(p *Packet) { p.Stratum, p.RefID = 0, RefID{'R', 'A', 'T', 'E'} }, func(err error) bool {
			var k *KissError
			return errors.As(err, &k) && k.Code == "RATE"
		}, `kiss-o'-death "RATE": rate exceeded`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := fakeServer(t, func(_ int, req Packet) []Packet {
				p := good(req, 0)
				c.spoil(&p)
				return []Packet{p}
			})
			_, err := Query(context.Background(), addr)
			if err == nil || !strings.Contains(err.Error(), c.want) || (c.check != nil && !c.check(err)) {
				t.Errorf("err = %v, want one naming %q", err, c.want)
			}
		})
	}
}

// A kiss-o'-death ends the query at once: no more requests go out.
func TestClientStopsAtAKiss(t *testing.T) {
	requests := make(chan int, 10)
	addr := fakeServer(t, func(i int, req Packet) []Packet {
		requests <- i
		p := good(req, 0)
		p.Stratum, p.RefID = 0, RefID{'D', 'E', 'N', 'Y'}
		return []Packet{p}
	})
	c := Client{Samples: 4}
	_, err := c.Query(context.Background(), addr)
	var k *KissError
	if !errors.As(err, &k) || k.Code != "DENY" {
		t.Fatalf("err = %v, want a DENY kiss", err)
	}
	if n := len(requests); n != 1 {
		t.Errorf("%d requests sent, want 1", n)
	}
}

// Of several samples the one of least delay wins, NTP's rule: the fake
// server holds its answers to samples 0 and 2 back for 40 ms after
// stamping them, which adds 40 ms to their round trip and 20 ms of error
// to their offset.
func TestClientPicksTheLeastDelay(t *testing.T) {
	addr := fakeServer(t, func(i int, req Packet) []Packet {
		p := good(req, 0)
		if i != 1 {
			time.Sleep(40 * time.Millisecond)
		}
		return []Packet{p}
	})
	c := Client{Samples: 3}
	r, err := c.Query(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Best != 1 || r.Offset != r.Samples[1].Offset || r.Delay != r.Samples[1].Delay {
		t.Fatalf("chose sample %d (θ %v, δ %v) of %+v, want sample 1", r.Best, r.Offset, r.Delay, r.Samples)
	}
	for _, i := range []int{0, 2} {
		if s := r.Samples[i]; s.Delay < 20*time.Millisecond || s.Offset > -10*time.Millisecond {
			t.Errorf("held-back sample %d: θ %v δ %v, want δ ≥ 20ms and θ ≤ −10ms", i, s.Offset, s.Delay)
		}
	}
}

// A sample without a reply is lost; the others still make a result.
func TestClientSurvivesLostSamples(t *testing.T) {
	addr := fakeServer(t, func(i int, req Packet) []Packet {
		if i == 0 {
			return nil
		}
		return []Packet{good(req, 0)}
	})
	c := Client{Samples: 3, Timeout: 100 * time.Millisecond}
	r, err := c.Query(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost != 1 || len(r.Samples) != 2 {
		t.Errorf("%d lost, %d samples; want 1 and 2", r.Lost, len(r.Samples))
	}
}

// Cancelling the context ends a query that waits for a reply.
func TestClientHonoursItsContext(t *testing.T) {
	addr := fakeServer(t, func(int, Packet) []Packet { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	c := Client{Timeout: 10 * time.Second}
	start := time.Now()
	_, err := c.Query(ctx, addr)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("returned after %v", el)
	}
}

func TestClientDefaultsToPort123(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Query(ctx, "127.0.0.1")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:123") {
		t.Errorf("err = %v, want one naming 127.0.0.1:123", err)
	}
}
