package transport

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Defaults used for zero Config fields.
const (
	DefaultQueueLen         = 4096
	DefaultQueueBytes       = 16 << 20
	DefaultMaxFrame         = 1 << 20
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultPingInterval     = time.Second
	DefaultIdleTimeout      = 5 * time.Second
	DefaultDialBackoffMin   = 50 * time.Millisecond
	DefaultDialBackoffMax   = 5 * time.Second
	DefaultCloseTimeout     = 2 * time.Second

	// MaxMaxFrame is the largest MaxFrame the frame header can express.
	MaxMaxFrame = 1<<30 - 1
	// MinSecretLen is the shortest Secret accepted, in bytes.
	MinSecretLen = 16
)

// Config configures a TCP transport. Zero values of the optional fields mean
// the defaults above. NewTCP copies the Config; changing it afterwards has no
// effect.
type Config struct {
	// Self is this member's ID.
	Self proc.ID
	// Listen is the address to accept connections on, "host:port";
	// "127.0.0.1:0" picks a free port (see Addr). Ignored if Listener is set.
	Listen string
	// Listener, if not nil, is used instead of listening on Listen. The
	// transport owns it and closes it on Close. Tests use it to learn every
	// member's address before creating any transport.
	Listener net.Listener
	// Peers maps every other member to the address it listens on. It must
	// not contain Self.
	Peers map[proc.ID]string

	// Exactly one of Secret and TLS authenticates members.
	//
	// Secret is a shared cluster secret of at least MinSecretLen bytes.
	// Both ends of a connection prove they know it (HMAC-SHA256 over fresh
	// nonces and both IDs). It authenticates connection set-up only: the
	// frames that follow are neither encrypted nor authenticated, so it
	// keeps strangers and misconfigured members out but does not defend
	// against an attacker on the path. Use TLS for that.
	Secret []byte
	// TLS is this member's TLS configuration: Certificates holds its own
	// certificate, which must carry CertName(Self) as a DNS name, and
	// RootCAs the cluster CA. Connections use mutual TLS: the acceptor
	// requires and verifies a client certificate (against ClientCAs, or
	// RootCAs if ClientCAs is nil) and checks that it names the ID the
	// dialer claims; the dialer verifies that the acceptor's certificate
	// names the member it dialed. See LoadTLS and GenerateCerts.
	TLS *tls.Config

	// QueueLen bounds, in frames, what Send accepts for one member and the
	// transport has not yet handed to the connection. 0 means
	// DefaultQueueLen.
	QueueLen int
	// QueueBytes bounds in bytes what Send accepts for one member and the
	// member has not yet acknowledged: frames queued, and frames written
	// and kept to be written again should the connection fail. It is thus
	// also the most a sender has in flight (its window). 0 means
	// DefaultQueueBytes. It must be at least MaxFrame.
	QueueBytes int
	// MaxFrame is the largest payload, in bytes, that may be sent or
	// received; a peer announcing a longer frame is disconnected before the
	// body is read. 0 means DefaultMaxFrame; at most MaxMaxFrame.
	MaxFrame int

	// HandshakeTimeout bounds connection set-up (TCP connect, TLS,
	// authentication, and for the acceptor the dialer's resumption): a
	// connection not taken up within it of being opened is closed. 0
	// means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// PingInterval: while the member may await something of this side
	// (the handler holds one of its frames, or frames delivered are not
	// acknowledged yet), a connection on which this side has written
	// nothing for about this long (between 1 and 1.5 times it) gets a
	// keepalive (an ack) from it. A connection on which nothing is
	// outstanding either way gets one from each side only every third of
	// the quiet timeout (see IdleTimeout). 0 means DefaultPingInterval.
	PingInterval time.Duration
	// IdleTimeout: while this side awaits something of the member (frames
	// it wrote and the member has not acknowledged), a connection on which
	// no complete frame (data, ack or ping) arrives within this long of the
	// reader starting to wait for it is closed: a dead connection is
	// noticed within about IdleTimeout of the first Send on it. While
	// nothing is awaited, the reader waits for the first byte of a frame
	// up to the quiet timeout, ten times IdleTimeout and at least five
	// minutes (a backstop for connections to machines that vanished), and
	// the rest of the frame must follow within IdleTimeout. A connection
	// to a member that stops reading is closed too: Sends to it refused
	// (its queue full) for this long, and meanwhile nothing acknowledged
	// and no data frame from it (PeerStats.Stalled). It must be at least
	// twice PingInterval. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// DialBackoffMin and DialBackoffMax bound the delay between attempts to
	// connect to a member: it doubles from Min up to Max, and each delay
	// is drawn uniformly from its upper half. 0 means the defaults.
	DialBackoffMin, DialBackoffMax time.Duration
	// CloseTimeout bounds how long Close flushes queued frames. 0 means
	// DefaultCloseTimeout.
	CloseTimeout time.Duration

	// LinkIdle, if positive, makes connections lazy, for members that
	// talk to few of many members at a time (SWIM): a member is dialed
	// only when there is something to send it (a Send, or frames it has
	// not acknowledged), and a connection over which no data frame has
	// passed, either way, for LinkIdle is closed by either side once
	// everything on it is acknowledged both ways (checked twice every
	// LinkIdle, or every PingInterval if that is shorter). A link loses
	// and duplicates nothing for that (ack.go): the next Send dials again
	// and the link resumes where it stopped. Set it on every member: one
	// that keeps its connections up redials those the other closes. 0
	// means the default: every member is dialed at start and its
	// connection kept up.
	LinkIdle time.Duration
	// MaxLinks, if positive, bounds the connections this member holds at
	// once (those it dialed and those it accepted), for a process that
	// holds many members or a member of a group too large for a
	// connection per peer: a connection that comes up when MaxLinks are
	// up closes the least recently used of the others with everything on
	// it acknowledged both ways (PeerStats.Evicted); if none is, the new
	// one is refused (Stats.LinksRefused) and its dialer backs off. A
	// member dials only when one would be admitted. As with LinkIdle, a
	// link loses and duplicates nothing for that: what is left to send
	// dials again and resumes. It needs LinkIdle (a kept link would be
	// redialed at once). 0 means no bound.
	MaxLinks int

	// Joins lets nodes join the running cluster: an authenticated member
	// whose ID is not in Peers is accepted, and learnt, at the address it
	// announces. A node joins by listing one member in Peers: that member
	// answers with its member table, and the newcomer connects to every
	// member, each of which learns it as it connects. Every member of a
	// cluster that takes joins sets it; without it, unknown IDs are
	// refused as before.
	Joins bool
	// Advertise is the address other members dial to reach this one, which
	// it announces on every connection; "" means the listener's address
	// (set it when listening on 0.0.0.0 or behind NAT).
	Advertise string

	// Datagrams opens a UDP socket on the listener's address and port,
	// for SendDatagram: small payloads that may be lost, authenticated
	// each (SWIM's probes; datagram.go). It needs Secret: no key common
	// to the cluster can be derived from certificates. false:
	// SendDatagram returns ErrNoDatagram.
	Datagrams bool
	// DatagramConn, if not nil, is the UDP socket used with Datagrams
	// instead of one opened on the listener's address; the transport
	// owns it. Its port must be the listener's (the members send
	// datagrams to the port they dial): see ListenBoth.
	DatagramConn net.PacketConn
	// MaxDatagram bounds a datagram, in bytes on the wire (header and MAC
	// included, DatagramOverhead); a longer payload goes on the stream.
	// 0 means DefaultMaxDatagram; MinMaxDatagram .. MaxMaxDatagram.
	MaxDatagram int

	// Logger receives connection events and the reason every rejected or
	// dropped connection was closed. nil means slog.Default().
	Logger *slog.Logger
}

// Validate reports the first problem with c, naming the field. Errors wrap
// ErrConfig.
func (c *Config) Validate() error {
	if c.Self < 0 {
		return configErr("Self = %d: must be >= 0", c.Self)
	}
	if c.Listener == nil {
		if c.Listen == "" {
			return configErr("Listen is empty and Listener is nil")
		}
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return configErr("Listen = %q: %v", c.Listen, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Peers)) {
		addr := c.Peers[id]
		if id == c.Self {
			return configErr("Peers contains Self (%v)", id)
		}
		if id < 0 {
			return configErr("Peers[%d]: IDs must be >= 0", id)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return configErr("Peers[%v] = %q: %v", id, addr, err)
		}
	}
	switch {
	case c.Secret == nil && c.TLS == nil:
		return configErr("Secret and TLS are both unset: one is required")
	case c.Secret != nil && c.TLS != nil:
		return configErr("Secret and TLS are both set: use one")
	case c.Secret != nil && len(c.Secret) < MinSecretLen:
		return configErr("Secret is %d bytes: at least %d are required", len(c.Secret), MinSecretLen)
	case c.TLS != nil && len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil:
		return configErr("TLS.Certificates is empty: this member needs its certificate")
	case c.TLS != nil && c.TLS.RootCAs == nil:
		return configErr("TLS.RootCAs is nil: the cluster CA is needed to verify members")
	}
	if err := nonNegative("QueueLen", c.QueueLen); err != nil {
		return err
	}
	if err := nonNegative("QueueBytes", c.QueueBytes); err != nil {
		return err
	}
	if err := nonNegative("MaxFrame", c.MaxFrame); err != nil {
		return err
	}
	if err := nonNegative("MaxLinks", c.MaxLinks); err != nil {
		return err
	}
	if c.MaxLinks > 0 && c.LinkIdle <= 0 {
		return configErr("MaxLinks = %d needs LinkIdle > 0 (lazy links), got %v", c.MaxLinks, c.LinkIdle)
	}
	switch {
	case c.Datagrams && c.Secret == nil:
		return configErr("Datagrams needs Secret: under TLS no datagram key common to the cluster can be derived from the certificates")
	case !c.Datagrams && c.DatagramConn != nil:
		return configErr("DatagramConn is set without Datagrams")
	case c.MaxDatagram != 0 && (c.MaxDatagram < MinMaxDatagram || c.MaxDatagram > MaxMaxDatagram):
		return configErr("MaxDatagram = %d: want %d to %d, or 0 for %d", c.MaxDatagram, MinMaxDatagram, MaxMaxDatagram, DefaultMaxDatagram)
	}
	if c.MaxFrame > MaxMaxFrame {
		return configErr("MaxFrame = %d: at most %d", c.MaxFrame, MaxMaxFrame)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HandshakeTimeout", c.HandshakeTimeout},
		{"PingInterval", c.PingInterval},
		{"IdleTimeout", c.IdleTimeout},
		{"DialBackoffMin", c.DialBackoffMin},
		{"DialBackoffMax", c.DialBackoffMax},
		{"CloseTimeout", c.CloseTimeout},
		{"LinkIdle", c.LinkIdle},
	} {
		if d.v < 0 {
			return configErr("%s = %v: must be >= 0", d.name, d.v)
		}
	}
	d := c.withDefaults()
	if d.QueueBytes < d.MaxFrame {
		return configErr("QueueBytes = %d is less than MaxFrame = %d", d.QueueBytes, d.MaxFrame)
	}
	if d.IdleTimeout < 2*d.PingInterval {
		return configErr("IdleTimeout = %v must be at least twice PingInterval = %v", d.IdleTimeout, d.PingInterval)
	}
	if d.DialBackoffMax < d.DialBackoffMin {
		return configErr("DialBackoffMax = %v is less than DialBackoffMin = %v", d.DialBackoffMax, d.DialBackoffMin)
	}
	return nil
}

// withDefaults returns a copy of c with defaults filled in and Peers and
// Secret copied.
func (c *Config) withDefaults() Config {
	d := *c
	d.Peers = make(map[proc.ID]string, len(c.Peers))
	for id, a := range c.Peers {
		d.Peers[id] = a
	}
	d.Secret = bytes.Clone(c.Secret)
	setDefault(&d.QueueLen, DefaultQueueLen)
	setDefault(&d.QueueBytes, DefaultQueueBytes)
	setDefault(&d.MaxFrame, DefaultMaxFrame)
	setDefault(&d.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&d.PingInterval, DefaultPingInterval)
	setDefault(&d.IdleTimeout, DefaultIdleTimeout)
	setDefault(&d.DialBackoffMin, DefaultDialBackoffMin)
	setDefault(&d.DialBackoffMax, DefaultDialBackoffMax)
	setDefault(&d.CloseTimeout, DefaultCloseTimeout)
	setDefault(&d.MaxDatagram, DefaultMaxDatagram)
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return d
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

func nonNegative(field string, v int) error {
	if v < 0 {
		return configErr("%s = %d: must be >= 0", field, v)
	}
	return nil
}

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: Config.%s", ErrConfig, fmt.Sprintf(format, args...))
}
