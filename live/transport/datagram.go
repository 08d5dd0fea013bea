package transport

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Datagrams: small payloads that may be lost, over UDP.
//
// SWIM's probes — a ping, a ping-req, an ack, a nack, and the membership
// updates they carry — need no reliable channel: a lost ping is a failed
// probe, which indirect probes and the suspicion timeout absorb (Das,
// Gupta and Motivala 2002, §4). Over the stream, every probe to a member
// not talked to lately first waits for a TCP connection and its
// authentication handshake; a thousand members in one process spent
// their probe timeouts in handshakes and suspected one another.
// memberlist sends its probes as UDP packets; with Config.Datagrams, so
// does this transport. SendDatagram sends one payload as one UDP
// datagram of at most Config.MaxDatagram bytes to the member's UDP
// socket, which is bound to the address and port of its TCP listener, and
// the member's handler receives it as any payload. Nothing is
// acknowledged, resent or ordered. A payload that does not fit, a member
// whose address is not known, or a failed write gets ErrNoDatagram, and
// the caller sends the payload on the stream instead. The live host
// decides which payloads go this way (messages marked proc.Lossy).
//
// The wire, 35 bytes of header, the payload, 16 of MAC:
//
//	"cd" | version u8 | from i32 | to i32 | incarnation u64 | seq u64 | time i64 | payload | MAC [16]
//
// # Authentication
//
// MAC is HMAC-SHA256 over everything before it, truncated to 16 bytes
// (RFC 2104 §5), under a key derived from the cluster's Secret by HKDF
// (RFC 5869) with a label of its own, so that no datagram MAC can pass for
// a handshake's. Datagrams need the shared secret: under TLS each member
// holds only its own private key, no key common to the cluster can be
// derived from certificates, and Config.Validate refuses Datagrams with
// TLS (the probes then stay on the TLS connections).
//
// A datagram is believed only once its MAC verifies. One that is too
// short or too long, or of another magic or version, is dropped as
// malformed; one whose MAC fails, or that is addressed to another member
// or claims to come from this one, as forged; one from an ID not in the
// member table as unknown, unless the cluster takes joins (Config.Joins):
// a newcomer's probes can come before its address has spread, so its
// source address is kept to answer it (at most maxStrangers of them).
// DatagramStats counts each reason; the handler never sees them.
//
// # Replays
//
// A datagram is accepted at most once by a receiver process, and only
// within datagramMaxAge of its sending:
//
//   - time is the sender's wall clock, Unix nanoseconds; the receiver
//     drops a datagram more than datagramMaxAge (two minutes) from its own
//     clock (Stale). The members' clocks must agree that well, as
//     Kerberos's must within five minutes.
//   - seq numbers the sender's datagrams to this receiver from 1 in each
//     incarnation of the sender (its transport's, handshake.go). The
//     receiver keeps, for each sender, the highest seq it accepted and a
//     bitmap of the 63 before it (IPsec's anti-replay window, RFC 4303
//     §3.4.3): a seq already seen, or older than the window, is dropped
//     (Replayed). Datagrams overtaking one another by fewer than 64 are
//     all accepted.
//   - a new incarnation of a sender replaces the one the window follows
//     only if its time is later than the newest datagram accepted from
//     that one; so the datagrams of a sender's previous process cannot be
//     replayed to reset its window.
//
// The window alone would forget every sender when the receiver restarts
// (a fresh receiver takes any recording once); the time alone would let a
// recording be replayed at will for two minutes. Together, a recording is
// accepted at most once, and only by a receiver that restarted since it
// was sent, within two minutes of it. (A sender whose clock steps back
// across a restart is not heard until it passes its previous process's
// last datagram.)
//
// The handler's calls for datagrams come from one reader goroutine; they
// may overlap with the calls for the same member's stream.
const (
	datagramVersion = 1
	datagramHeader  = 35
	datagramMAC     = 16
	// DatagramOverhead is what a datagram adds to its payload.
	DatagramOverhead = datagramHeader + datagramMAC

	// DefaultMaxDatagram keeps a datagram within an Ethernet frame with
	// room for IP and UDP headers and tunnels, as memberlist's
	// UDPBufferSize does. MinMaxDatagram and MaxMaxDatagram bound
	// Config.MaxDatagram (the largest UDP payload over IPv4).
	DefaultMaxDatagram = 1400
	MinMaxDatagram     = 128
	MaxMaxDatagram     = 65507

	datagramMaxAge = 2 * time.Minute
	replayWindow   = 64
	maxStrangers   = 4096
)

var (
	datagramMagic = [2]byte{'c', 'd'}
	labelDatagram = "cohort datagram key v1"

	// ErrNoDatagram: the payload cannot go as a datagram (datagrams are
	// off, it is too large, the member's address is unknown, the write
	// failed); send it on the stream.
	ErrNoDatagram = errors.New("transport: cannot send as a datagram")

	errMalformed = errors.New("malformed")
	errForged    = errors.New("forged")
)

// DatagramStats are the datagram counters (Config.Datagrams). Every
// datagram that arrives is either Received or counted in one of the
// drop reasons.
type DatagramStats struct {
	// On: the transport has its UDP socket.
	On bool
	// Sent, SentBytes: datagrams written (header and MAC included).
	// Received, ReceivedBytes: datagrams handed to the handler.
	Sent, SentBytes, Received, ReceivedBytes uint64
	// SendFailed: writes the socket refused (the payload went on the
	// stream instead).
	SendFailed uint64
	// Dropped, by reason: Malformed (too short or long, another magic or
	// version), Forged (MAC fails, addressed to another member, or
	// claims to be this one), Unknown (a sender not in the member table,
	// or one too many strangers), Stale (sent more than two minutes from
	// this member's clock), Replayed (seen already, older than the
	// window, or of a sender's previous process).
	Malformed, Forged, Unknown, Stale, Replayed uint64
}

// datagrams is the UDP side of a TCP transport.
type datagrams struct {
	t    *TCP
	conn net.PacketConn
	key  []byte
	max  int // bytes on the wire
	self proc.ID
	inc  uint64 // this process's incarnation

	macs sync.Pool // hash.Hash under key, for senders
	bufs sync.Pool // *[]byte of max+sha256.Size, for senders

	// dests is where each member's datagrams go and their next seq, by
	// member (*dest); strangers counts those learnt from a datagram.
	dests     sync.Map
	strangers atomic.Int64

	// The reader's own: each sender's replay window, the MAC, a scratch.
	windows map[proc.ID]*window
	mac     hash.Hash
	sum     [sha256.Size]byte

	sent, sentBytes, received, receivedBytes, failed atomic.Uint64
	malformed, forged, unknown, stale, replayed      atomic.Uint64
}

// dest is a member as datagrams reach it.
type dest struct {
	addr net.Addr
	seq  atomic.Uint64 // the last seq sent
}

// datagramKey derives the datagram key from the cluster secret.
func datagramKey(secret []byte) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, labelDatagram, sha256.Size)
	if err != nil { // only for a length HKDF cannot give: not 32
		panic(err)
	}
	return k
}

func newDatagrams(t *TCP, conn net.PacketConn, secret []byte, max int) *datagrams {
	d := &datagrams{t: t, conn: conn, key: datagramKey(secret), max: max, self: t.cfg.Self, inc: t.auth.incarnation,
		windows: map[proc.ID]*window{}}
	d.macs.New = func() any { return hmac.New(sha256.New, d.key) }
	d.bufs.New = func() any { b := make([]byte, 0, max+sha256.Size); return &b }
	d.mac = hmac.New(sha256.New, d.key)
	return d
}

// SendDatagram sends payload to member to as one authenticated UDP
// datagram, which may be lost (see datagram.go). It returns
// ErrNoDatagram (wrapped) when the payload cannot go that way — the
// transport has no datagrams (Config.Datagrams), the payload is longer
// than MaxDatagram−DatagramOverhead, to's address is unknown, the write
// failed — and the caller sends it with Send instead; ErrClosed once
// closed. Safe for concurrent use.
func (t *TCP) SendDatagram(to proc.ID, payload []byte) error {
	d := t.dg
	switch {
	case d == nil:
		return ErrNoDatagram
	case t.closing.Load():
		return ErrClosed
	case len(payload) > d.max-DatagramOverhead:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrNoDatagram, len(payload), d.max-DatagramOverhead)
	}
	dst := d.dest(to)
	if dst == nil {
		return fmt.Errorf("%w: no address for %v", ErrNoDatagram, to)
	}
	mac := d.macs.Get().(hash.Hash)
	bp := d.bufs.Get().(*[]byte)
	b := sealDatagram((*bp)[:0], mac, d.self, to, d.inc, dst.seq.Add(1), time.Now().UnixNano(), payload)
	_, err := d.conn.WriteTo(b, dst.addr)
	d.bufs.Put(bp)
	d.macs.Put(mac)
	if err != nil {
		if t.closing.Load() {
			return ErrClosed
		}
		d.failed.Add(1)
		return fmt.Errorf("%w: %v", ErrNoDatagram, err)
	}
	d.sent.Add(1)
	d.sentBytes.Add(uint64(len(b)))
	return nil
}

// dest is where datagrams for member to go: the host and port it listens
// on, or, for a member not in the table, the source of its datagrams.
// nil if neither is known.
func (d *datagrams) dest(to proc.ID) *dest {
	if x, ok := d.dests.Load(to); ok {
		return x.(*dest)
	}
	p := d.t.peer(to)
	if p == nil {
		return nil
	}
	addr, err := net.ResolveUDPAddr("udp", p.addr)
	if err != nil {
		return nil
	}
	x, _ := d.dests.LoadOrStore(to, &dest{addr: addr})
	return x.(*dest)
}

// sealDatagram appends to b the datagram carrying payload, its MAC
// computed with mac (an HMAC under the datagram key).
func sealDatagram(b []byte, mac hash.Hash, from, to proc.ID, inc, seq uint64, now int64, payload []byte) []byte {
	b = append(b, datagramMagic[0], datagramMagic[1], datagramVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(from))
	b = binary.BigEndian.AppendUint32(b, uint32(to))
	b = binary.BigEndian.AppendUint64(b, inc)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = append(b, payload...)
	mac.Reset()
	mac.Write(b)
	n := len(b)
	return mac.Sum(b)[:n+datagramMAC]
}

// datagramHead is a datagram's header.
type datagramHead struct {
	from, to proc.ID
	inc, seq uint64
	time     int64
}

// openDatagram is the decoder: it checks b's form and MAC (with mac, an
// HMAC under the datagram key, and sum, a scratch for it) and returns
// the header and the payload, a slice of b. It allocates nothing.
func openDatagram(b []byte, mac hash.Hash, sum *[sha256.Size]byte) (datagramHead, []byte, error) {
	if len(b) < DatagramOverhead || b[0] != datagramMagic[0] || b[1] != datagramMagic[1] || b[2] != datagramVersion {
		return datagramHead{}, nil, errMalformed
	}
	body := len(b) - datagramMAC
	mac.Reset()
	mac.Write(b[:body])
	if !hmac.Equal(mac.Sum(sum[:0])[:datagramMAC], b[body:]) {
		return datagramHead{}, nil, errForged
	}
	h := datagramHead{
		from: proc.ID(int32(binary.BigEndian.Uint32(b[3:]))),
		to:   proc.ID(int32(binary.BigEndian.Uint32(b[7:]))),
		inc:  binary.BigEndian.Uint64(b[11:]),
		seq:  binary.BigEndian.Uint64(b[19:]),
		time: int64(binary.BigEndian.Uint64(b[27:])),
	}
	return h, b[datagramHeader:body], nil
}

// read receives datagrams until the socket is closed.
func (d *datagrams) read() {
	buf := make([]byte, d.max+1) // one more: a datagram that fills it is too long
	for {
		n, src, err := d.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || d.t.closing.Load() {
				return
			}
			d.t.log.Warn("transport: datagram read failed", "err", err)
			time.Sleep(10 * time.Millisecond) // not a spin on a persistent error
			continue
		}
		if payload, from, ok := d.accept(buf[:n], src, time.Now()); ok {
			d.t.handler(from, bytes.Clone(payload))
		}
	}
}

// accept decides whether datagram b, from address src, arrived at now,
// reaches the handler, counting it either way; payload is a slice of b.
// Only the reader calls it.
func (d *datagrams) accept(b []byte, src net.Addr, now time.Time) (payload []byte, from proc.ID, ok bool) {
	if len(b) > d.max {
		d.malformed.Add(1)
		return nil, 0, false
	}
	h, payload, err := openDatagram(b, d.mac, &d.sum)
	switch {
	case err == errMalformed || h.from < 0:
		d.malformed.Add(1)
		return nil, 0, false
	case err != nil || h.to != d.self || h.from == d.self:
		d.forged.Add(1)
		return nil, 0, false
	case !d.known(h.from, src):
		d.unknown.Add(1)
		return nil, 0, false
	case abs(now.UnixNano()-h.time) > int64(datagramMaxAge):
		d.stale.Add(1)
		return nil, 0, false
	}
	w := d.windows[h.from]
	if w == nil {
		w = &window{}
		d.windows[h.from] = w
	}
	if !w.accept(h.inc, h.seq, h.time) {
		d.replayed.Add(1)
		return nil, 0, false
	}
	d.received.Add(1)
	d.receivedBytes.Add(uint64(len(b)))
	return payload, h.from, true
}

// known reports whether datagrams from member id (authenticated) are
// taken: it is in the member table, or the cluster takes joins and its
// source address src is kept to answer it.
func (d *datagrams) known(id proc.ID, src net.Addr) bool {
	if d.t.isMember(id) {
		return true
	}
	if !d.t.cfg.Joins {
		return false
	}
	if x, ok := d.dests.Load(id); ok {
		return x.(*dest) != nil
	}
	if d.strangers.Load() >= maxStrangers {
		return false
	}
	d.strangers.Add(1)
	d.dests.Store(id, &dest{addr: src})
	return true
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// window is a sender's replay window: its incarnation, the highest seq
// accepted from it and which of the replayWindow−1 before it were, and
// the newest time it stamped.
type window struct {
	inc    uint64
	top    uint64
	seen   uint64 // bit i: top−i was accepted
	newest int64
}

// accept reports whether a datagram of the sender's incarnation inc,
// numbered seq, stamped t, is new, and records it if so.
func (w *window) accept(inc, seq uint64, t int64) bool {
	if seq == 0 {
		return false
	}
	if inc != w.inc {
		if w.inc != 0 && t <= w.newest {
			return false // an older process of the sender, or a replay of one
		}
		*w = window{inc: inc}
	}
	switch {
	case seq > w.top:
		if shift := seq - w.top; shift >= replayWindow {
			w.seen = 1
		} else {
			w.seen = w.seen<<shift | 1
		}
		w.top = seq
	case w.top-seq >= replayWindow:
		return false
	default:
		bit := uint64(1) << (w.top - seq)
		if w.seen&bit != 0 {
			return false
		}
		w.seen |= bit
	}
	w.newest = max(w.newest, t)
	return true
}

func (d *datagrams) stats() DatagramStats {
	if d == nil {
		return DatagramStats{}
	}
	return DatagramStats{On: true,
		Sent: d.sent.Load(), SentBytes: d.sentBytes.Load(), Received: d.received.Load(), ReceivedBytes: d.receivedBytes.Load(),
		SendFailed: d.failed.Load(), Malformed: d.malformed.Load(), Forged: d.forged.Load(), Unknown: d.unknown.Load(),
		Stale: d.stale.Load(), Replayed: d.replayed.Load()}
}

// ListenBoth listens on addr for TCP and for UDP on the same address and
// port, for a transport with Config.Datagrams (Listener and
// DatagramConn). With port 0 it tries free TCP ports until one is free
// for UDP too.
func ListenBoth(addr string) (net.Listener, net.PacketConn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	tries := 1
	if port == "0" {
		tries = 20
	}
	for i := 0; ; i++ {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, p))
		if err == nil {
			return ln, pc, nil
		}
		ln.Close()
		if i+1 >= tries {
			return nil, nil, fmt.Errorf("udp on %s: %w", net.JoinHostPort(host, p), err)
		}
	}
}
