package consensus

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// How a queue operation is an entry's data. The puts — put, puts and
// run, the entries that carry bodies — are binary: a tag byte, then
// unsigned varints and length-prefixed bytes,
//
//	put:  'p' queue origin seq body
//	puts: 'P' count (queue origin seq body)…
//	run:  'r' queue origin seq after count body…
//
// where a string or a body is its length (a uvarint) and its bytes. Every
// other operation is JSON, which starts with '{' and so is told apart by
// its first byte; entries written as JSON by an earlier version (puts
// included) are read as before. In JSON a body was base64 inside a
// document that every server parsed on apply: a fifth of a replicated
// queue's time under a stream of puts went to decoding it, and the log
// held a third more bytes than the bodies.
const (
	tagPut  = 'p'
	tagPuts = 'P'
	tagRun  = 'r'
)

// encode is op as an entry's data.
func (op QueueOp) encode() []byte {
	var b []byte
	switch op.Op {
	case "put":
		b = append(make([]byte, 0, 3*binary.MaxVarintLen64+len(op.Queue)+len(op.Body)+2), tagPut)
		b = appendQueuePut(b, op.Queue, op.Origin, op.Seq, op.Body)
	case "puts":
		size := binary.MaxVarintLen64 + 1
		for _, p := range op.Puts {
			size += 4*binary.MaxVarintLen64 + len(p.Queue) + len(p.Body)
		}
		b = binary.AppendUvarint(append(make([]byte, 0, size), tagPuts), uint64(len(op.Puts)))
		for _, p := range op.Puts {
			b = appendQueuePut(b, p.Queue, p.Origin, p.Seq, p.Body)
		}
	case "run":
		size := 6*binary.MaxVarintLen64 + len(op.Queue) + 1
		for _, body := range op.Bodies {
			size += binary.MaxVarintLen64 + len(body)
		}
		b = append(make([]byte, 0, size), tagRun)
		b = appendBytes(b, []byte(op.Queue))
		b = binary.AppendUvarint(b, op.Origin)
		b = binary.AppendUvarint(b, op.Seq)
		b = binary.AppendUvarint(b, op.After)
		b = binary.AppendUvarint(b, uint64(len(op.Bodies)))
		for _, body := range op.Bodies {
			b = appendBytes(b, body)
		}
	default:
		b, _ = json.Marshal(op)
	}
	return b
}

func appendQueuePut(b []byte, queue string, origin, seq uint64, body []byte) []byte {
	b = appendBytes(b, []byte(queue))
	b = binary.AppendUvarint(b, origin)
	b = binary.AppendUvarint(b, seq)
	return appendBytes(b, body)
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errQueueOp = errors.New("not a queue operation")

// decodeQueueOp decodes an entry's data. Bodies are copies: a message
// outlives its entry (the log is compacted) and must not hold it all.
// An empty body is nil in a put and empty in puts and runs, as JSON
// decoded them.
func decodeQueueOp(data []byte) (QueueOp, error) {
	var op QueueOp
	if len(data) == 0 {
		return op, errQueueOp
	}
	if data[0] == '{' {
		err := json.Unmarshal(data, &op)
		return op, err
	}
	d := opDecoder{b: data[1:]}
	switch data[0] {
	case tagPut:
		p := d.put()
		if p.Body != nil && len(p.Body) == 0 {
			p.Body = nil
		}
		op = QueueOp{Op: "put", Queue: p.Queue, Origin: p.Origin, Seq: p.Seq, Body: p.Body}
	case tagPuts:
		n := d.count()
		op = QueueOp{Op: "puts", Puts: make([]QueuePut, 0, n)}
		for range n {
			op.Puts = append(op.Puts, d.put())
		}
	case tagRun:
		op = QueueOp{Op: "run", Queue: string(d.bytes()), Origin: d.uvarint(), Seq: d.uvarint(), After: d.uvarint()}
		n := d.count()
		op.Bodies = make([][]byte, 0, n)
		for range n {
			op.Bodies = append(op.Bodies, d.body())
		}
	default:
		return QueueOp{}, errQueueOp
	}
	if d.bad || len(d.b) != 0 {
		return QueueOp{}, errQueueOp
	}
	return op, nil
}

// opDecoder reads the binary operations; once a read fails, bad is set
// and every later read returns zero.
type opDecoder struct {
	b   []byte
	bad bool
}

func (d *opDecoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

// count reads a number of items, each at least one byte: no more than
// the bytes left.
func (d *opDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return 0
	}
	return int(n)
}

// bytes reads a length and as many bytes, not copied.
func (d *opDecoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// body reads a body, copied.
func (d *opDecoder) body() []byte {
	s := d.bytes()
	if d.bad {
		return nil
	}
	return append([]byte{}, s...)
}

func (d *opDecoder) put() QueuePut {
	return QueuePut{Queue: string(d.bytes()), Origin: d.uvarint(), Seq: d.uvarint(), Body: d.body()}
}
