package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// The records of a segment (each framed by wal.AppendRecord: length,
// CRC-32C, data). The data is a kind byte and its fields; integers are
// uvarints, strings and bodies a uvarint length and the bytes.
//
//	'S' start   nextID, then n × (origin, seq): the first record of every
//	            segment, so that a log whose older segments were deleted
//	            still knows the next id and what it took from remote queues
//	'B' batch   n × op, each 'P' put: queue, id, body, origin, seq
//	                              'A' ack: queue, id
//
// A batch is one put, the acks of a consumer, or a transaction (the acks
// of its gets and its puts): a record is written whole or not at all, so
// a transaction commits atomically.
const (
	recStart = 'S'
	recBatch = 'B'
	opPut    = 'P'
	opAck    = 'A'
)

// op is one change a batch makes.
type op struct {
	kind   byte
	queue  string
	id     uint64
	body   []byte
	origin string // put relayed from a remote queue: its source, else ""
	seq    uint64 // and its id there
}

func (o op) String() string {
	if o.kind == opAck {
		return fmt.Sprintf("ACK(%s,%d)", o.queue, o.id)
	}
	if o.origin != "" {
		return fmt.Sprintf("PUT(%s,%d,%dB,from=%s#%d)", o.queue, o.id, len(o.body), o.origin, o.seq)
	}
	return fmt.Sprintf("PUT(%s,%d,%dB)", o.queue, o.id, len(o.body))
}

// start is a segment's first record.
type start struct {
	nextID  uint64
	origins map[string]uint64
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeBatch(b []byte, ops []op) []byte {
	b = append(b, recBatch)
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for _, o := range ops {
		b = append(b, o.kind)
		b = appendString(b, o.queue)
		b = binary.AppendUvarint(b, o.id)
		if o.kind == opPut {
			b = appendString(b, string(o.body))
			b = appendString(b, o.origin)
			b = binary.AppendUvarint(b, o.seq)
		}
	}
	return b
}

func encodeStart(s start) []byte {
	b := []byte{recStart}
	b = binary.AppendUvarint(b, s.nextID)
	keys := make([]string, 0, len(s.origins))
	for k := range s.origins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, s.origins[k])
	}
	return b
}

var errRecord = errors.New("bad record")

// reader decodes fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(max int) []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) || n > uint64(max) {
		r.err = errRecord
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errRecord
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// decodeRecord decodes a record's data: a start (isStart) or a batch.
// Bodies alias rec. Counts are bounded by what rec can hold, so no input
// allocates beyond its own size.
func decodeRecord(rec []byte) (s start, ops []op, isStart bool, err error) {
	r := &reader{b: rec}
	switch r.byte() {
	case recStart:
		s.nextID = r.uvarint()
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			return s, nil, true, errRecord
		}
		s.origins = make(map[string]uint64, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			k := string(r.bytes(maxName))
			s.origins[k] = r.uvarint()
		}
		isStart = true
	case recBatch:
		n := r.uvarint()
		if n > uint64(len(r.b))/3 { // an op takes at least 3 bytes
			return s, nil, false, errRecord
		}
		ops = make([]op, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			o := op{kind: r.byte()}
			o.queue = string(r.bytes(maxName))
			o.id = r.uvarint()
			switch o.kind {
			case opPut:
				o.body = r.bytes(MaxMessage)
				o.origin = string(r.bytes(maxOrigin))
				o.seq = r.uvarint()
			case opAck:
			default:
				r.err = errRecord
			}
			ops = append(ops, o)
		}
	default:
		r.err = errRecord
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errRecord
	}
	if r.err != nil {
		return start{}, nil, false, fmt.Errorf("%w (%d bytes)", r.err, len(rec))
	}
	return s, ops, isStart, nil
}
