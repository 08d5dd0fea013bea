package ntp

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServer serves cfg on a free loopback port until the test ends.
func startServer(t *testing.T, cfg ServerConfig) (string, *Server) {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, conn) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5s of its context ending")
		}
	})
	return conn.LocalAddr().String(), srv
}

// dialRaw opens a UDP socket to addr for hand-made packets.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readPacket reads one packet from c, failing the test after 5 s.
func readPacket(t *testing.T, c net.Conn) Packet {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	p, err := Decode(buf[:n])
	if err != nil {
		t.Fatalf("reply does not decode: %v", err)
	}
	return p
}

func mustEncode(t *testing.T, p Packet) []byte {
	t.Helper()
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A server whose clock runs 250 ms ahead is measured 250 ms ahead, within
// the bound the exchange itself gives: an asymmetry of the two legs moves
// θ by at most δ.
func TestServerOffsetIsMeasured(t *testing.T) {
	const ahead = 250 * time.Millisecond
	addr, srv := startServer(t, ServerConfig{Clock: func() time.Time { return time.Now().Add(ahead) }})
	c := Client{Samples: 5}
	r, err := c.Query(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("offset %v, delay %v, one way %v", r.Offset, r.Delay, r.OneWay)
	if err := (r.Offset - ahead).Abs(); err > r.Delay+time.Millisecond {
		t.Errorf("offset %v, want %v ± δ (%v) + 1ms", r.Offset, ahead, r.Delay)
	}
	if r.Delay < 0 || r.Delay > 100*time.Millisecond || r.OneWay != r.Delay/2 {
		t.Errorf("delay %v, one way %v: want 0 ≤ δ ≤ 100ms on loopback, one way δ/2", r.Delay, r.OneWay)
	}
	if r.Stratum != DefaultStratum || r.RefID != DefaultRefID || r.Precision != DefaultPrecision || r.Leap != LeapNone {
		t.Errorf("stratum %d refid %v precision %d leap %d, want the defaults 10, LOCL, -20, 0", r.Stratum, r.RefID.Format(r.Stratum), r.Precision, r.Leap)
	}
	if len(r.Samples) != 5 || r.Lost != 0 {
		t.Errorf("%d samples, %d lost; want 5 and 0", len(r.Samples), r.Lost)
	}
	for i, s := range r.Samples {
		if s.Delay < r.Delay {
			t.Errorf("sample %d has delay %v, below the chosen %v", i, s.Delay, r.Delay)
		}
		if s.T3.Before(s.T2) {
			t.Errorf("sample %d: the server answered at %s, before it received at %s", i, s.T3, s.T2)
		}
	}
	waitFor(t, func() bool { return srv.Stats().Served == 5 }, "5 requests served")
}

// The reply echoes the request's transmit timestamp as its origin and the
// request's version and poll; it stamps receive and transmit times from
// the server's clock, and announces the configured stratum and refid.
func TestServerReplyFields(t *testing.T) {
	refid, _ := RefIDOf("GPS")
	addr, _ := startServer(t, ServerConfig{Stratum: 1, RefID: refid, Precision: -23})
	c := dialRaw(t, addr)
	before := time.Now()
	c.Write(mustEncode(t, Packet{Version: 3, Mode: ModeClient, Poll: 6, Transmit: 0x0123456789abcdef}))
	p := readPacket(t, c)
	after := time.Now()
	want := Packet{Version: 3, Mode: ModeServer, Stratum: 1, Poll: 6, Precision: -23, RefID: refid, Origin: 0x0123456789abcdef}
	got := p
	got.Reference, got.Receive, got.Transmit = 0, 0, 0
	if got != want {
		t.Errorf("reply\n%+v\nwant (times aside)\n%+v", got, want)
	}
	for name, ts := range map[string]Timestamp{"reference": p.Reference, "receive": p.Receive, "transmit": p.Transmit} {
		if tm := ts.Time(before); tm.Before(before.Add(-time.Millisecond)) || tm.After(after.Add(time.Millisecond)) {
			t.Errorf("%s time %s, not between the request (%s) and the reply (%s)", name, tm, before, after)
		}
	}
	if p.Transmit.Sub(p.Receive) < 0 {
		t.Errorf("transmit %v before receive %v", p.Transmit, p.Receive)
	}
}

// Junk gets no reply and is counted; the server goes on serving. The
// loopback delivers in order, so the first reply the client reads must
// answer its one good request.
func TestServerIgnoresJunk(t *testing.T) {
	addr, srv := startServer(t, ServerConfig{})
	c := dialRaw(t, addr)
	request := mustEncode(t, Packet{Version: 4, Mode: ModeClient, Transmit: 42})
	short := request[:47]
	badVersion := append([]byte{}, request...)
	badVersion[0] = 0<<3 | 3
	control := append([]byte{}, request...)
	control[0] = 2<<3 | 6
	server := mustEncode(t, Packet{Version: 4, Mode: ModeServer, Transmit: 7})
	symmetric := mustEncode(t, Packet{Version: 4, Mode: ModeSymmetricActive, Transmit: 8})
	for _, junk := range [][]byte{{}, short, badVersion, control, server, symmetric} {
		c.Write(junk)
	}
	c.Write(request)
	if p := readPacket(t, c); p.Origin != 42 {
		t.Fatalf("first reply answers transmit %v, want 42: junk was answered", p.Origin)
	}
	waitFor(t, func() bool { return srv.Stats().Served == 1 }, "the request served")
	if s := srv.Stats(); s != (Stats{Served: 1, Malformed: 4, WrongMode: 2}) {
		t.Errorf("stats %+v, want 1 served, 4 malformed, 2 of the wrong mode", s)
	}
}

func TestServerConfigErrorNamesTheValue(t *testing.T) {
	_, err := NewServer(ServerConfig{Stratum: 16})
	if err == nil || !strings.Contains(err.Error(), "stratum 16") {
		t.Errorf("NewServer(stratum 16) = %v, want an error naming stratum 16", err)
	}
}

// Serve returns nil and closes the socket when its context ends.
func TestServerStopsWithItsContext(t *testing.T) {
	srv, _ := NewServer(ServerConfig{})
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, conn) }()
	if _, err := Query(context.Background(), conn.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still running 5s after its context ended")
	}
	if _, err := conn.WriteTo([]byte{0}, conn.LocalAddr()); err == nil {
		t.Error("the socket is still open")
	}
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A query started before its server listens (cohort ntp serve & cohort ntp
// query) waits for it: refused requests are repeated for up to Wait.
// Without Wait the refusal is reported at once.
func TestQueryWaitsForAServerThatIsStarting(t *testing.T) {
	probe, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.LocalAddr().String()
	probe.Close() // nothing listens on addr now: requests are refused

	if _, err := (&Client{Timeout: 2 * time.Second}).Query(context.Background(), addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("without Wait: %v, want connection refused", err)
	}

	srv, err := NewServer(ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	var calls int
	c := Client{Wait: 10 * time.Second, Timeout: 2 * time.Second, Clock: func() time.Time {
		// The first exchange (T1, then T4 of its refusal) is over: start
		// the server, on the port the client keeps asking.
		if calls++; calls == 2 {
			conn, err := net.ListenPacket("udp", addr)
			started <- err
			if err == nil {
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				go srv.Serve(ctx, conn)
			}
		}
		return time.Now()
	}}
	r, err := c.Query(context.Background(), addr)
	if serr := <-started; serr != nil {
		t.Fatalf("listening on %s again: %v", addr, serr)
	}
	if err != nil || len(r.Samples) != 1 || r.Lost != 0 {
		t.Fatalf("with Wait: %+v, %v; want one sample, none lost", r, err)
	}
	if calls < 4 {
		t.Errorf("clock read %d times: the refused request was not repeated", calls)
	}
}
