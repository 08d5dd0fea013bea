package transport

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/cohort-go/cohort/proc"
)

// The handshake, dialer D to acceptor A. Nothing D sends reaches A's handler
// before A has sent welcome.
//
//	D → A  hello     "cohort" | version u8 | mode u8 | from i32 | to i32 | incD u64 | nonceD [32]   (56 bytes)
//	with a shared secret K:
//	A → D  challenge nonceA [32] | HMAC-SHA256(K, "cohort acceptor" | hello | nonceA)
//	D → A  proof     HMAC-SHA256(K, "cohort dialer" | hello | nonceA)
//	A → D  welcome   code u8 | incA u64
//
// The welcome's code is 1 (welcomeOK): the connection is the pair's; or 2
// (welcomeKeep): both members dialed at once and A keeps the connection it
// dialed itself (doc.go, "Connections"), so D closes this one and uses
// that. D's first frame then announces it (members.go), and each side's
// first ack says where the other's frames resume (ack.go).
//
// The MACs cover both IDs and both nonces. A's nonce is fresh, so a
// recorded proof is useless on a new connection; D's nonce is fresh, so a
// recorded challenge cannot fool D; the labels differ, so neither side's MAC
// can be reflected as the other's. With mutual TLS the challenge and proof
// are skipped: TLS has authenticated both certificates, D has checked that
// A's names the member it dialed, and A checks that D's names the member
// hello claims (CertName). A rejects a connection by closing it, and logs
// why; it tells D nothing.
//
// incD and incA are the incarnations of the two processes: random numbers
// drawn when a transport is created, so that each side can tell a member
// that restarted from one that reconnected (ack.go). The acceptor reads the
// version before the rest of the hello, so a dialer of another version is
// told apart from a slow one whatever the length of its hello.
const (
	protocolVersion = 3 // 3: one connection per pair, data and acks both ways
	modeSecret      = 1
	modeTLS         = 2

	helloLen    = 56
	nonceLen    = 32
	macLen      = sha256.Size
	welcomeOK   = 1
	welcomeKeep = 2
	welcomeLen  = 9
)

var (
	helloMagic    = []byte("cohort")
	labelAcceptor = []byte("cohort acceptor")
	labelDialer   = []byte("cohort dialer")
)

type hello struct {
	version, mode byte
	from, to      proc.ID
	incarnation   uint64
	nonce         [nonceLen]byte
}

func (h *hello) marshal() []byte {
	b := make([]byte, 0, helloLen)
	b = append(b, helloMagic...)
	b = append(b, h.version, h.mode)
	b = binary.BigEndian.AppendUint32(b, uint32(h.from))
	b = binary.BigEndian.AppendUint32(b, uint32(h.to))
	b = binary.BigEndian.AppendUint64(b, h.incarnation)
	return append(b, h.nonce[:]...)
}

func parseHello(b []byte) hello {
	h := hello{
		version:     b[6],
		mode:        b[7],
		from:        proc.ID(binary.BigEndian.Uint32(b[8:])),
		to:          proc.ID(binary.BigEndian.Uint32(b[12:])),
		incarnation: binary.BigEndian.Uint64(b[16:]),
	}
	copy(h.nonce[:], b[24:])
	return h
}

// auth is how a transport authenticates members: a shared secret, or TLS.
type auth struct {
	incarnation uint64 // this process's, sent in hello and welcome
	secret      []byte
	clientTLS   *tls.Config   // for dialing; ServerName is set per member
	serverTLS   *tls.Config   // for accepting; requires and verifies client certificates
	wrote       atomic.Uint64 // bytes of handshakes written (Stats.HandshakeBytes)
}

// write writes b, a handshake message, to conn, and counts it.
func (a *auth) write(conn net.Conn, b []byte) error {
	n, err := conn.Write(b)
	a.wrote.Add(uint64(n))
	return err
}

func newAuth(c *Config) *auth {
	if c.TLS == nil {
		return &auth{secret: c.Secret}
	}
	client := c.TLS.Clone()
	if client.MinVersion < tls.VersionTLS12 {
		client.MinVersion = tls.VersionTLS12
	}
	server := client.Clone()
	server.ClientAuth = tls.RequireAndVerifyClientCert
	if server.ClientCAs == nil {
		server.ClientCAs = server.RootCAs
	}
	return &auth{clientTLS: client, serverTLS: server}
}

func (a *auth) mode() byte {
	if a.secret != nil {
		return modeSecret
	}
	return modeTLS
}

func modeName(m byte) string {
	switch m {
	case modeSecret:
		return "a shared secret"
	case modeTLS:
		return "TLS"
	}
	return fmt.Sprintf("unknown mode %d", m)
}

func (a *auth) mac(label, hello, nonce []byte) []byte {
	m := hmac.New(sha256.New, a.secret)
	m.Write(label)
	m.Write(hello)
	m.Write(nonce)
	return m.Sum(nil)
}

// Handshake failures. The text of the error is the reason that is logged.
var (
	// errKept: the acceptor keeps the connection it dialed to the dialer
	// (welcomeKeep). Not a failure: the pair has its connection.
	errKept             = errors.New("the member keeps the connection it dialed")
	errHandshakeTimeout = errors.New("handshake timeout")
	errClosedEarly      = errors.New("connection closed during handshake")
)

// handshakeIOErr names an I/O error met during the handshake.
func handshakeIOErr(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return errHandshakeTimeout
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return errClosedEarly
	}
	return err
}

// dial authenticates this member (self) to member to over raw, which the
// caller has given a deadline. It returns the connection to use (raw, or
// TLS over it) and the acceptor's incarnation.
func (a *auth) dial(raw net.Conn, self, to proc.ID) (net.Conn, uint64, error) {
	conn := raw
	if a.clientTLS != nil {
		cfg := a.clientTLS.Clone()
		cfg.ServerName = CertName(to)
		tc := tls.Client(raw, cfg)
		if err := tc.Handshake(); err != nil {
			return nil, 0, fmt.Errorf("tls handshake: %w", handshakeIOErr(err))
		}
		conn = tc
	}
	h := hello{version: protocolVersion, mode: a.mode(), from: self, to: to, incarnation: a.incarnation}
	rand.Read(h.nonce[:])
	hb := h.marshal()
	if err := a.write(conn, hb); err != nil {
		return nil, 0, handshakeIOErr(err)
	}
	if a.secret != nil {
		var ch [nonceLen + macLen]byte
		if _, err := io.ReadFull(conn, ch[:]); err != nil {
			return nil, 0, rejectedBy(err)
		}
		if !hmac.Equal(ch[nonceLen:], a.mac(labelAcceptor, hb, ch[:nonceLen])) {
			return nil, 0, errors.New("peer failed authentication (wrong secret)")
		}
		if err := a.write(conn, a.mac(labelDialer, hb, ch[:nonceLen])); err != nil {
			return nil, 0, handshakeIOErr(err)
		}
	}
	var w [welcomeLen]byte
	if _, err := io.ReadFull(conn, w[:1]); err != nil {
		return nil, 0, rejectedBy(err)
	}
	if w[0] != welcomeOK && w[0] != welcomeKeep {
		return nil, 0, fmt.Errorf("unexpected handshake reply %#x", w[0])
	}
	if _, err := io.ReadFull(conn, w[1:]); err != nil {
		return nil, 0, handshakeIOErr(err)
	}
	if w[0] == welcomeKeep {
		return nil, binary.BigEndian.Uint64(w[1:]), errKept
	}
	return conn, binary.BigEndian.Uint64(w[1:]), nil
}

// rejectedBy names a failure to read the acceptor's reply.
func rejectedBy(err error) error {
	if err = handshakeIOErr(err); err == errClosedEarly {
		return errors.New("rejected by peer (its log says why)")
	}
	return err
}

// accept authenticates the dialer of raw, which the caller has given a
// deadline, to this member (self). member reports whether an ID belongs to
// the cluster. It returns the connection to use, the dialer's ID and its
// incarnation, and leaves the welcome to the caller (welcome), which first
// decides whether the pair keeps this connection; on failure, claimed is the member the dialer claimed to be
// (proc.None if it claimed none), and the error's text is the reason.
func (a *auth) accept(raw net.Conn, self proc.ID, member func(proc.ID) bool) (conn net.Conn, claimed proc.ID, incarnation uint64, err error) {
	claimed = proc.None
	conn = raw
	var tc *tls.Conn
	if a.serverTLS != nil {
		tc = tls.Server(raw, a.serverTLS)
		if err := tc.Handshake(); err != nil {
			return nil, claimed, 0, fmt.Errorf("tls handshake: %w", handshakeIOErr(err))
		}
		conn = tc
	}
	var hb [helloLen]byte
	v := len(helloMagic) // where the version is
	if _, err := io.ReadFull(conn, hb[:v+1]); err != nil {
		return nil, claimed, 0, handshakeIOErr(err)
	}
	if !bytes.Equal(hb[:v], helloMagic) {
		return nil, claimed, 0, errors.New("not a cohort connection (bad magic)")
	}
	if hb[v] != protocolVersion {
		return nil, claimed, 0, fmt.Errorf("unsupported protocol version %d (this node speaks %d)", hb[v], protocolVersion)
	}
	if _, err := io.ReadFull(conn, hb[v+1:]); err != nil {
		return nil, claimed, 0, handshakeIOErr(err)
	}
	h := parseHello(hb[:])
	if member(h.from) {
		claimed = h.from
	}
	switch {
	case h.mode != a.mode():
		return nil, claimed, 0, fmt.Errorf("peer authenticates with %s, this node with %s", modeName(h.mode), modeName(a.mode()))
	case h.from == self:
		return nil, claimed, 0, fmt.Errorf("peer claims to be this node (%v)", self)
	case !member(h.from):
		return nil, claimed, 0, fmt.Errorf("unknown member %v", h.from)
	case h.to != self:
		return nil, claimed, 0, fmt.Errorf("hello addressed to %v, this node is %v", h.to, self)
	}
	if tc != nil {
		leaf := tc.ConnectionState().PeerCertificates[0]
		if err := leaf.VerifyHostname(CertName(h.from)); err != nil {
			return nil, claimed, 0, fmt.Errorf("impostor: claims to be %v but %v", h.from, err)
		}
	}
	if a.secret != nil {
		var ch [nonceLen + macLen]byte
		rand.Read(ch[:nonceLen])
		copy(ch[nonceLen:], a.mac(labelAcceptor, hb[:], ch[:nonceLen]))
		if err := a.write(conn, ch[:]); err != nil {
			return nil, claimed, 0, handshakeIOErr(err)
		}
		var proof [macLen]byte
		if _, err := io.ReadFull(conn, proof[:]); err != nil {
			return nil, claimed, 0, handshakeIOErr(err)
		}
		if !hmac.Equal(proof[:], a.mac(labelDialer, hb[:], ch[:nonceLen])) {
			return nil, claimed, 0, errors.New("authentication failed (wrong secret or replayed handshake)")
		}
	}
	return conn, h.from, h.incarnation, nil
}

// welcome ends an accepted handshake with code: welcomeOK, or welcomeKeep
// to turn the connection down in favour of the one this member dialed.
func (a *auth) welcome(conn net.Conn, code byte) error {
	w := binary.BigEndian.AppendUint64([]byte{code}, a.incarnation)
	if err := a.write(conn, w); err != nil {
		return handshakeIOErr(err)
	}
	return nil
}
