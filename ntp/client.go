package ntp

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// DefaultTimeout is how long a client waits for each reply when
// Client.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// ErrNoReply is wrapped by the error of a query that got no valid reply in
// time.
var ErrNoReply = errors.New("no valid NTP reply")

// ErrUnsynchronized is wrapped by the error of a reply from a server that
// says it has no time to give: leap indicator 3 or stratum 16 and above.
var ErrUnsynchronized = errors.New("server is unsynchronised")

// KissError is a kiss-o'-death reply (stratum 0): the server tells the
// client to go away, with a code in the reference id (RFC 5905 §7.4).
type KissError struct {
	Server string
	Code   string // "RATE", "DENY", "RSTR", ...
}

func (e *KissError) Error() string {
	why := ""
	switch e.Code {
	case "RATE":
		why = ": rate exceeded, poll less often"
	case "DENY", "RSTR":
		why = ": access denied"
	}
	return fmt.Sprintf("ntp: %s: kiss-o'-death %q%s", e.Server, e.Code, why)
}

// Client queries NTP servers, SNTP-style (RFC 4330): one request, one
// reply, no state kept between queries. The zero value sends one request
// with DefaultTimeout.
type Client struct {
	// Samples is the number of requests a query sends, one after the
	// other; the sample of least delay wins. Zero means 1.
	Samples int
	// Interval is the pause between samples. Zero means none; public
	// servers may send kiss-o'-death RATE to clients that do not pause.
	Interval time.Duration
	// Timeout bounds the wait for each reply. Zero means DefaultTimeout.
	Timeout time.Duration
	// Clock reads the local time: T1 and T4. Nil means time.Now.
	Clock func() time.Time
	// Wait is how long to keep asking a server that refuses the request
	// (nothing listens on its port yet: a server that is still starting)
	// before counting the sample lost. Zero means no retry.
	Wait time.Duration
}

// refusedRetry is the pause between requests to a server that refuses.
const refusedRetry = 20 * time.Millisecond

// Sample is one request and its reply, as Tanenbaum & van Steen §6.1 draw
// them: the client sends at T1 by its clock, the server receives at T2 and
// answers at T3 by its clock, the client receives at T4.
type Sample struct {
	T1, T2, T3, T4 time.Time
	// Offset is θ = ((T2−T1) + (T3−T4)) / 2: how far the server's clock is
	// ahead of the client's, if the two legs take equally long.
	Offset time.Duration
	// Delay is δ = (T4−T1) − (T3−T2), the round trip less the server's
	// time, as RFC 5905 and chrony define it.
	Delay time.Duration
	// OneWay is δ/2, the one-way delay if the two legs take equally long
	// (the estimate of the textbook's presentation of Cristian and NTP).
	OneWay time.Duration
	// Reply is the server's packet.
	Reply Packet
}

// Result is what a query learned. Its offset and delay are those of the
// sample of least delay, NTP's rule: θ is most trustworthy where δ is
// smallest, since an asymmetry between the two legs moves θ by at most δ.
type Result struct {
	Server         string // the address queried
	Offset         time.Duration
	Delay          time.Duration // δ, the round trip (RFC 5905)
	OneWay         time.Duration // δ/2
	Stratum        uint8
	RefID          RefID
	Leap           Leap
	Precision      int8
	RootDelay      time.Duration
	RootDispersion time.Duration
	// Samples are the samples that got a valid reply, in the order they
	// were taken; Best indexes the one reported above.
	Samples []Sample
	Best    int
	// Lost counts the samples without a valid reply.
	Lost int
}

// Query asks the NTP server at addr for its time, with a Client's zero
// configuration: one sample, DefaultTimeout.
func Query(ctx context.Context, addr string) (Result, error) {
	var c Client
	return c.Query(ctx, addr)
}

// Query asks the NTP server at addr ("host:port", or "host" for port 123)
// for its time, c.Samples times, and returns the sample of least delay. It
// fails if no sample gets a valid reply, or at once on a kiss-o'-death.
//
// Each request carries a fresh random transmit timestamp instead of T1,
// which stays with the client (as chrony does, and the data-minimisation
// advice for NTP clients recommends): the reply must echo it as its
// origin, so a reply to an earlier request, or one forged by a host that
// did not see the request, is ignored — 64 random bits cannot be guessed.
func (c *Client) Query(ctx context.Context, addr string) (Result, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "123")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return Result{}, fmt.Errorf("ntp: %w", err)
	}
	defer conn.Close()
	// A cancelled ctx cuts the wait for a reply short.
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()

	samples := max(c.Samples, 1)
	r := Result{Server: addr}
	var lastErr error
	waitUntil := time.Now().Add(c.Wait)
	for i := range samples {
		if i > 0 && c.Interval > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(c.Interval):
			}
		}
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("ntp: %s: %w", addr, ctx.Err())
		}
		s, err := c.sample(ctx, conn, addr)
		for errors.Is(err, syscall.ECONNREFUSED) && time.Now().Before(waitUntil) {
			select {
			case <-ctx.Done():
			case <-time.After(refusedRetry):
			}
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("ntp: %s: %w", addr, ctx.Err())
			}
			s, err = c.sample(ctx, conn, addr)
		}
		var kiss *KissError
		switch {
		case errors.As(err, &kiss) || ctx.Err() != nil:
			return Result{}, err
		case err != nil:
			r.Lost++
			lastErr = err
		default:
			r.Samples = append(r.Samples, s)
		}
	}
	if len(r.Samples) == 0 {
		return Result{}, lastErr
	}
	for i, s := range r.Samples {
		if s.Delay < r.Samples[r.Best].Delay {
			r.Best = i
		}
	}
	b := r.Samples[r.Best]
	r.Offset, r.Delay, r.OneWay = b.Offset, b.Delay, b.OneWay
	r.Stratum, r.RefID, r.Leap, r.Precision = b.Reply.Stratum, b.Reply.RefID, b.Reply.Leap, b.Reply.Precision
	r.RootDelay, r.RootDispersion = b.Reply.RootDelay.Duration(), b.Reply.RootDispersion.Duration()
	return r, nil
}

// sample sends one request on conn and waits for its reply.
func (c *Client) sample(ctx context.Context, conn net.Conn, addr string) (Sample, error) {
	clock := c.Clock
	if clock == nil {
		clock = time.Now
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	nonce := randomTimestamp()
	req := Packet{Version: 4, Mode: ModeClient, Transmit: nonce}
	out, err := req.Encode()
	if err != nil {
		panic(fmt.Sprintf("ntp client: the request does not encode: %v", err))
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return Sample{}, fmt.Errorf("ntp: %w", err)
	}
	if ctx.Err() != nil { // cancelled before the deadline was set: AfterFunc's reset is lost
		return Sample{}, fmt.Errorf("ntp: %s: %w", addr, ctx.Err())
	}

	t1 := clock()
	if _, err := conn.Write(out); err != nil {
		return Sample{}, fmt.Errorf("ntp: %s: %w", addr, err)
	}
	buf := make([]byte, 2048)
	ignored := 0
	var why error // why the last ignored packet was ignored
	for {
		n, err := conn.Read(buf)
		t4 := clock()
		if err != nil {
			if ctx.Err() != nil {
				return Sample{}, fmt.Errorf("ntp: %s: %w", addr, ctx.Err())
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = fmt.Errorf("%w from %s within %v", ErrNoReply, addr, timeout)
				if ignored > 0 {
					err = fmt.Errorf("%w (ignored %d packet(s), the last: %v)", err, ignored, why)
				}
				return Sample{}, fmt.Errorf("ntp: %w", err)
			}
			return Sample{}, fmt.Errorf("ntp: %s: %w", addr, err)
		}
		reply, err := Decode(buf[:n])
		if err == nil && reply.Origin != nonce {
			err = fmt.Errorf("origin timestamp %v does not match the request's transmit timestamp %v", reply.Origin, nonce)
		}
		if err != nil {
			ignored++
			why = err
			continue
		}
		if err := validate(reply, addr); err != nil {
			return Sample{}, err
		}
		return newSample(t1, t4, reply), nil
	}
}

// validate checks a reply that answers our request (its origin matched).
func validate(p Packet, addr string) error {
	switch {
	case p.Mode != ModeServer:
		return fmt.Errorf("ntp: %s: reply in mode %v, want %v", addr, p.Mode, ModeServer)
	case p.Stratum == 0:
		code, _ := p.RefID.code()
		if code == "" {
			code = fmt.Sprintf("%x", p.RefID[:])
		}
		return &KissError{Server: addr, Code: code}
	case p.Leap == LeapUnknown || p.Stratum >= 16:
		return fmt.Errorf("ntp: %s: %w: leap indicator %d, stratum %d", addr, ErrUnsynchronized, p.Leap, p.Stratum)
	case p.Transmit.IsZero():
		return fmt.Errorf("ntp: %s: reply with a zero transmit timestamp", addr)
	}
	return nil
}

// newSample works out θ and δ. T2 and T3 are the server's, as NTP
// timestamps; T1 and T4 are read here, so each difference is taken in the
// NTP format (Timestamp.Sub), which needs no era. The round trip T4−T1
// comes from the monotonic clock when the local clock has one, so that a
// step of the wall clock during the exchange does not distort it.
func newSample(t1, t4 time.Time, p Packet) Sample {
	ts1, ts4 := TimestampOf(t1), TimestampOf(t4)
	offset := (p.Receive.Sub(ts1) + p.Transmit.Sub(ts4)) / 2
	rtt := t4.Sub(t1) - p.Transmit.Sub(p.Receive)
	return Sample{
		T1: t1, T2: p.Receive.Time(t1), T3: p.Transmit.Time(t1), T4: t4,
		Offset: offset, Delay: rtt, OneWay: rtt / 2,
		Reply: p,
	}
}

// randomTimestamp returns 64 random bits, never zero (a zero transmit
// timestamp means "not set").
func randomTimestamp() Timestamp {
	var b [8]byte
	for {
		crand.Read(b[:]) // never fails (crypto/rand's contract since Go 1.24)
		if ts := Timestamp(binary.BigEndian.Uint64(b[:])); ts != 0 {
			return ts
		}
	}
}
