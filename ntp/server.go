package ntp

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// The defaults of ServerConfig. A Cohort server is not synchronised to any
// reference: it serves its own clock. It says so the way an undisciplined
// local clock traditionally does (ntpd's local-clock driver, chrony's
// "local stratum 10"): stratum 10, "fairly unreliable, many hops from a
// reference", and the reference id "LOCL". Clients that also hear a real
// server prefer it, since its stratum is lower; clients with nothing better
// accept the local clock, which is what a test bed or an isolated network
// wants.
const (
	DefaultStratum   = 10
	DefaultPrecision = -20 // 2⁻²⁰ s ≈ 1 µs: a clock read plus the socket around it
)

// DefaultRefID is the reference id of a server on its local clock.
var DefaultRefID = RefID{'L', 'O', 'C', 'L'}

// ServerConfig configures a Server. The zero value serves time.Now with
// the defaults above.
type ServerConfig struct {
	// Stratum is announced in every reply: 1 (a primary server, on a
	// reference clock) to 15. Zero means DefaultStratum.
	Stratum uint8
	// RefID is announced in every reply. Zero means DefaultRefID.
	RefID RefID
	// Precision is the clock's precision announced, as log₂ seconds. Zero
	// means DefaultPrecision.
	Precision int8
	// Clock reads the time served. Nil means time.Now. A shifted clock,
	// func() time.Time { return time.Now().Add(d) }, serves a known offset
	// for clients to measure.
	Clock func() time.Time
	// Logger receives a debug record for every packet ignored. Nil
	// discards them.
	Logger *slog.Logger
}

// Validate reports the first field out of range, naming it and its value.
func (c ServerConfig) Validate() error {
	if c.Stratum > 15 {
		return fmt.Errorf("stratum %d: want 1 to 15 (0 for the default, %d)", c.Stratum, DefaultStratum)
	}
	return nil
}

// Stats counts what a server did with the datagrams it read.
type Stats struct {
	Served     uint64 // client requests answered
	Malformed  uint64 // datagrams that are no NTP header (too short, bad version or mode)
	WrongMode  uint64 // well-formed packets that are not client requests (mode 3)
	SendFailed uint64 // replies the socket refused to send
}

// Server answers NTP client requests (mode 3) with server replies (mode 4)
// carrying its clock. It keeps no state per client: every request is
// answered on its own, as RFC 5905 §9.2 describes for a server. Anything
// else it reads is counted and dropped.
type Server struct {
	stratum   uint8
	refID     RefID
	precision int8
	clock     func() time.Time
	log       *slog.Logger

	served, malformed, wrongMode, sendFailed atomic.Uint64
}

// NewServer returns a server configured by cfg, or the error of
// cfg.Validate.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{stratum: cfg.Stratum, refID: cfg.RefID, precision: cfg.Precision, clock: cfg.Clock, log: cfg.Logger}
	if s.stratum == 0 {
		s.stratum = DefaultStratum
	}
	if s.refID == (RefID{}) {
		s.refID = DefaultRefID
	}
	if s.precision == 0 {
		s.precision = DefaultPrecision
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Stats returns the counts so far. It may be called at any time, from any
// goroutine.
func (s *Server) Stats() Stats {
	return Stats{Served: s.served.Load(), Malformed: s.malformed.Load(), WrongMode: s.wrongMode.Load(), SendFailed: s.sendFailed.Load()}
}

// Serve answers the requests read from conn until ctx ends, then closes
// conn and returns nil. It returns an error only if conn fails otherwise.
// Serve owns conn: it closes it in every case.
func (s *Server) Serve(ctx context.Context, conn net.PacketConn) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // unblocks ReadFrom
	defer stop()
	buf := make([]byte, 2048) // a longer datagram is cut short: only its header matters
	for {
		n, from, err := conn.ReadFrom(buf)
		t2 := s.clock() // T2, as soon after arrival as user space can tell
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ntp server: %w", err)
		}
		s.answer(conn, buf[:n], from, t2)
	}
}

// answer replies to one datagram that arrived at t2, if it is a client
// request.
func (s *Server) answer(conn net.PacketConn, b []byte, from net.Addr, t2 time.Time) {
	req, err := Decode(b)
	if err != nil {
		s.malformed.Add(1)
		s.log.Debug("ntp: ignored a datagram", "from", from, "err", err)
		return
	}
	if req.Mode != ModeClient {
		s.wrongMode.Add(1)
		s.log.Debug("ntp: ignored a packet that is no client request", "from", from, "mode", req.Mode)
		return
	}
	out, err := s.reply(req, t2).Encode()
	if err != nil {
		panic(fmt.Sprintf("ntp server: a reply to a valid request does not encode: %v", err))
	}
	// T3 goes in last, as late as the reply can be stamped.
	binary.BigEndian.PutUint64(out[40:], uint64(TimestampOf(s.clock())))
	if _, err := conn.WriteTo(out, from); err != nil {
		s.sendFailed.Add(1)
		s.log.Debug("ntp: reply not sent", "to", from, "err", err)
		return
	}
	s.served.Add(1)
}

// reply is the server's answer to req, received at t2, before its
// transmit timestamp is set. The client's transmit timestamp comes back as
// the origin: that is how the client matches the reply to its request and
// knows it is no forgery. The version and the poll interval are the
// client's own.
//
// The server is its own reference, so its clock was "last corrected" at
// every reading: the reference timestamp is t2, and the root delay and
// dispersion are zero.
func (s *Server) reply(req Packet, t2 time.Time) Packet {
	return Packet{
		Leap:      LeapNone,
		Version:   req.Version,
		Mode:      ModeServer,
		Stratum:   s.stratum,
		Poll:      req.Poll,
		Precision: s.precision,
		RefID:     s.refID,
		Reference: TimestampOf(t2),
		Origin:    req.Transmit,
		Receive:   TimestampOf(t2),
	}
}
