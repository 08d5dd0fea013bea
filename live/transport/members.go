package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/cohort-go/cohort/proc"
)

// Membership on the wire. A dialer's first frame on every connection is a
// members frame with one entry, itself and the address it can be dialed
// at; the acceptor answers with a members frame listing every member it
// knows, itself included. So a node that joins through any one member
// learns the whole table, and every member learns the newcomer when it
// connects to it (see Config.Joins).
//
//	members = count uvarint, count × (id uvarint, len uvarint, address [len]byte)

// Bounds on a members frame: no input can make a node allocate more.
const (
	maxMembers    = 1 << 16
	maxAddressLen = 255
)

type member struct {
	id   proc.ID
	addr string
}

func appendMembers(dst []byte, ms []member) []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(ms)))
	for _, m := range ms {
		body = binary.AppendUvarint(body, uint64(m.id))
		body = binary.AppendUvarint(body, uint64(len(m.addr)))
		body = append(body, m.addr...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(body))<<2|kindMembers)
	return append(dst, body...)
}

// parseMembers decodes a members frame's payload; every entry's address is
// a host:port.
func parseMembers(b []byte) ([]member, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > maxMembers {
		return nil, errors.New("members frame: bad count")
	}
	b = b[k:]
	ms := make([]member, 0, min(n, uint64(len(b)/3)))
	for range n {
		id, k := binary.Uvarint(b)
		if k <= 0 || id > 1<<31-1 {
			return nil, errors.New("members frame: bad id")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l > maxAddressLen || uint64(len(b)-k) < l {
			return nil, errors.New("members frame: bad address length")
		}
		addr := string(b[k : k+int(l)])
		b = b[k+int(l):]
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("members frame: address %q: %v", addr, err)
		}
		ms = append(ms, member{proc.ID(id), addr})
	}
	if len(b) != 0 {
		return nil, errors.New("members frame: trailing bytes")
	}
	return ms, nil
}

// advertised is the address this member announces.
func (t *TCP) advertised() string {
	if t.cfg.Advertise != "" {
		return t.cfg.Advertise
	}
	return t.ln.Addr().String()
}

// table is every member this transport knows, itself included.
func (t *TCP) table() []member {
	ms := []member{{t.cfg.Self, t.advertised()}}
	for id, p := range *t.peers.Load() {
		ms = append(ms, member{id, p.addr})
	}
	return ms
}

// learn adds the members of a frame this node does not know yet, if the
// cluster takes joins. A known member at another address keeps the one
// configured (a member listening on 0.0.0.0 announces that).
func (t *TCP) learn(from proc.ID, payload []byte) {
	ms, err := parseMembers(payload)
	if err != nil {
		t.log.Warn("transport: ignoring a members frame", "peer", from.String(), "err", err)
		return
	}
	if !t.cfg.Joins {
		return
	}
	for _, m := range ms {
		if m.id == t.cfg.Self || t.peer(m.id) != nil {
			continue
		}
		if err := t.addPeer(m.id, m.addr, m.id == from); err != nil && !errors.Is(err, ErrClosed) {
			t.log.Warn("transport: cannot add a member", "peer", m.id.String(), "addr", m.addr, "err", err)
		}
	}
}
