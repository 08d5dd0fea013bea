package transport

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// datagramPair starts members 0 and 1 with datagrams on loopback; got
// receives what member 1's handler is given. With stranger, member 1 has
// not heard of member 0; joins says whether they take joins.
func datagramPair(t *testing.T, stranger, joins bool) (a, b *TCP, got chan string) {
	t.Helper()
	lnA, pcA, err := ListenBoth("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lnB, pcB, err := ListenBoth("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peersA := map[proc.ID]string{1: lnB.Addr().String()}
	peersB := map[proc.ID]string{0: lnA.Addr().String()}
	if stranger {
		peersB = nil
	}
	log := testLogger(t)
	a, err = NewTCP(Config{Self: 0, Listener: lnA, DatagramConn: pcA, Datagrams: true, Peers: peersA, Secret: testSecret, Joins: joins, LinkIdle: time.Minute, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	b, err = NewTCP(Config{Self: 1, Listener: lnB, DatagramConn: pcB, Datagrams: true, Peers: peersB, Secret: testSecret, Joins: joins, LinkIdle: time.Minute, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	got = make(chan string, 16)
	if err := a.Start(func(proc.ID, []byte) {}); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(func(from proc.ID, p []byte) { got <- from.String() + ":" + string(p) }); err != nil {
		t.Fatal(err)
	}
	return a, b, got
}

func receive(t *testing.T, got chan string) string {
	t.Helper()
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10 s")
		return ""
	}
}

// TestDatagramsGoWithoutAConnection: a payload sent as a datagram reaches
// the member's handler, and no TCP connection is made for it (lazy
// links); one too large for a datagram is refused, for the stream.
func TestDatagramsGoWithoutAConnection(t *testing.T) {
	a, b, got := datagramPair(t, false, false)
	if err := a.SendDatagram(1, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if s := receive(t, got); s != "p0:ping" {
		t.Fatalf("received %q", s)
	}
	st := b.Stats()
	if st.Datagrams.Received != 1 || a.Stats().Datagrams.Sent != 1 {
		t.Fatalf("datagram stats: sender %+v, receiver %+v", a.Stats().Datagrams, st.Datagrams)
	}
	if ps := a.Stats().Peers[1]; ps.Connected || ps.Sent != 0 {
		t.Fatalf("a connection was used: %+v", ps)
	}
	big := make([]byte, DefaultMaxDatagram-DatagramOverhead+1)
	if err := a.SendDatagram(1, big); !errors.Is(err, ErrNoDatagram) {
		t.Fatalf("a %d-byte payload: %v, want ErrNoDatagram", len(big), err)
	}
	if err := a.SendDatagram(1, big[:len(big)-1]); err != nil {
		t.Fatalf("a %d-byte payload: %v", len(big)-1, err)
	}
	if s := receive(t, got); len(s) != len("p0:")+len(big)-1 {
		t.Fatalf("received %d bytes", len(s))
	}
	if err := a.SendDatagram(7, []byte("x")); !errors.Is(err, ErrNoDatagram) {
		t.Fatalf("to an unknown member: %v, want ErrNoDatagram", err)
	}
}

// TestForgedAndReplayedDatagramsAreDropped: datagrams under another key,
// tampered with, replayed, stale, addressed to another member, or that
// claim to come from the receiver are dropped and counted; the handler
// sees only the genuine one, once.
func TestForgedAndReplayedDatagramsAreDropped(t *testing.T) {
	_, b, got := datagramPair(t, false, false)
	raw, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	to := b.Addr().String()
	inc := uint64(42)
	seal := func(key []byte, from, dst proc.ID, seq uint64, at time.Time, payload string) []byte {
		return sealDatagram(nil, hmac.New(sha256.New, key), from, dst, inc, seq, at.UnixNano(), []byte(payload))
	}
	send := func(b []byte) {
		t.Helper()
		udp, _ := net.ResolveUDPAddr("udp", to)
		if _, err := raw.WriteTo(b, udp); err != nil {
			t.Fatal(err)
		}
	}
	key, wrong := datagramKey(testSecret), datagramKey([]byte("another cluster's secret, 32 b.."))
	now := time.Now()
	genuine := seal(key, 0, 1, 1, now, "genuine")
	tampered := bytes.Clone(genuine)
	tampered[datagramHeader] ^= 1 // "genuine" → "fenuine"
	forged := []struct {
		name string
		b    []byte
	}{
		{"another key", seal(wrong, 0, 1, 1, now, "forged")},
		{"tampered", tampered},
		{"truncated", genuine[:DatagramOverhead-1]},
		{"for another member", seal(key, 0, 2, 1, now, "misdirected")},
		{"from the receiver itself", seal(key, 1, 1, 1, now, "self")},
	}
	for _, f := range forged {
		send(f.b)
	}
	send(genuine)
	if s := receive(t, got); s != "p0:genuine" {
		t.Fatalf("received %q", s)
	}
	send(genuine) // a replay
	send(seal(key, 0, 1, 2, now.Add(-datagramMaxAge-time.Second), "stale"))
	send(seal(key, 0, 1, 3, now, "fresh")) // after the bad ones: they have all been read
	if s := receive(t, got); s != "p0:fresh" {
		t.Fatalf("received %q, want the fresh datagram", s)
	}
	st := b.Stats().Datagrams
	if st.Forged != 4 || st.Malformed != 1 || st.Replayed != 1 || st.Stale != 1 || st.Received != 2 {
		t.Fatalf("stats %+v: want 4 forged, 1 malformed, 1 replayed, 1 stale, 2 received", st)
	}
	select {
	case s := <-got:
		t.Fatalf("the handler got %q", s)
	default:
	}
}

// TestDatagramFromANewcomer: in a cluster that takes joins, an
// authenticated datagram from a member not in the table is delivered,
// and answered at its source address; without joins it is dropped as
// unknown.
func TestDatagramFromANewcomer(t *testing.T) {
	for _, joins := range []bool{true, false} {
		a, b, got := datagramPair(t, true, joins)
		if err := a.SendDatagram(1, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if !joins {
			waitUntil(t, 10*time.Second, "the datagram is counted unknown", func() bool { return b.Stats().Datagrams.Unknown == 1 })
			if n := b.Stats().Datagrams.Received; n != 0 {
				t.Fatalf("without joins, %d datagrams from a stranger received", n)
			}
			continue
		}
		if s := receive(t, got); s != "p0:hello" {
			t.Fatalf("received %q", s)
		}
		if err := b.SendDatagram(0, []byte("welcome")); err != nil {
			t.Fatalf("answering the newcomer: %v", err)
		}
		waitUntil(t, 10*time.Second, "the newcomer gets the answer", func() bool { return a.Stats().Datagrams.Received == 1 })
	}
}

// TestReplayWindow: the sliding window of RFC 4303 §3.4.3, and the
// change of a sender's incarnation.
func TestReplayWindow(t *testing.T) {
	var w window
	steps := []struct {
		inc, seq uint64
		t        int64
		want     bool
	}{
		{1, 0, 10, false}, // seq 0 is never sent
		{1, 5, 10, true},
		{1, 5, 10, false}, // again
		{1, 3, 11, true},  // late, within the window
		{1, 3, 11, false},
		{1, 100, 12, true},
		{1, 37, 13, true},  // 63 behind: the window's last
		{1, 36, 13, false}, // 64 behind: beyond it
		{1, 99, 13, true},
		{2, 1, 12, false},   // a new incarnation stamped before the last accepted: an older process
		{2, 1, 14, true},    // one stamped after: the sender restarted
		{1, 101, 13, false}, // the old incarnation again, stamped before the new one's: a replay
		{2, 1, 15, false},
		{2, 1000, 16, true},
		{2, 2, 16, false},
	}
	for i, s := range steps {
		if got := w.accept(s.inc, s.seq, s.t); got != s.want {
			t.Fatalf("step %d: accept(inc %d, seq %d, t %d) = %v, want %v", i, s.inc, s.seq, s.t, got, s.want)
		}
	}
}

// TestOpenDatagramAllocatesNothing: the decoder works in the datagram's
// own bytes.
func TestOpenDatagramAllocatesNothing(t *testing.T) {
	mac := hmac.New(sha256.New, datagramKey(testSecret))
	b := sealDatagram(nil, mac, 0, 1, 9, 1, 1, []byte("payload"))
	var sum [sha256.Size]byte
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := openDatagram(b, mac, &sum); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("openDatagram allocates %v times", allocs)
	}
}

func TestDatagramConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Datagrams: true, TLS: &tls.Config{Certificates: []tls.Certificate{{}}, RootCAs: x509.NewCertPool()}}, "Datagrams needs Secret"},
		{Config{Datagrams: true, Secret: testSecret, MaxDatagram: 100}, "MaxDatagram = 100"},
		{Config{Datagrams: true, Secret: testSecret, MaxDatagram: 70000}, "MaxDatagram = 70000"},
		{Config{Secret: testSecret, DatagramConn: &net.UDPConn{}}, "DatagramConn is set without Datagrams"},
	} {
		c.cfg.Listen = "127.0.0.1:0"
		err := c.cfg.Validate()
		if !errors.Is(err, ErrConfig) || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// FuzzOpenDatagram: whatever arrives, the receiver neither panics nor
// hands on more than the datagram, and hands on only what carries a
// valid MAC, addressed to it, once.
func FuzzOpenDatagram(f *testing.F) {
	key := datagramKey(testSecret)
	mac := hmac.New(sha256.New, key)
	now := time.Unix(1e9, 0)
	f.Add(sealDatagram(nil, mac, 0, 1, 7, 1, now.UnixNano(), []byte("ping")))
	f.Add(sealDatagram(nil, mac, 0, 1, 7, 1, now.UnixNano(), nil))
	f.Add(sealDatagram(nil, mac, 2, 1, 7, 1<<63, now.UnixNano(), []byte("x")))
	f.Add(sealDatagram(nil, mac, -5, 1, 7, 1, now.UnixNano(), []byte("x")))
	f.Add([]byte("cd\x01"))
	f.Add(make([]byte, DatagramOverhead))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := &TCP{cfg: Config{Self: 1}, auth: &auth{incarnation: 9}}
		d := newDatagrams(tr, nil, testSecret, 256)
		tr.dg = d
		empty := map[proc.ID]*peer{0: {}, 2: {}}
		tr.peers.Store(&empty)
		for range 2 {
			payload, from, ok := d.accept(b, nil, now)
			if !ok {
				continue
			}
			if len(payload) > len(b)-DatagramOverhead || len(b) > 256 || from == 1 {
				t.Fatalf("accepted %d bytes of payload from %v in a %d-byte datagram", len(payload), from, len(b))
			}
			body := len(b) - datagramMAC
			check := hmac.New(sha256.New, key)
			check.Write(b[:body])
			if !hmac.Equal(check.Sum(nil)[:datagramMAC], b[body:]) {
				t.Fatal("accepted a datagram without its MAC")
			}
		}
		st := d.stats()
		if st.Received > 1 {
			t.Fatalf("the same datagram accepted %d times", st.Received)
		}
		if total := st.Received + st.Malformed + st.Forged + st.Unknown + st.Stale + st.Replayed; total != 2 {
			t.Fatalf("2 datagrams, %d counted: %+v", total, st)
		}
	})
}
