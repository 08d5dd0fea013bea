package consensus

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// A lock operation is JSON in the log (LockOp), and every server decodes
// every entry as it applies it: with encoding/json, a tenth of a busy
// lock service's time (five servers decoding each of a handoff's two
// entries). So the operations are written, and read back, by hand in the
// one spelling json.Marshal gives them — the fields in order, the empty
// ones left out, names within a plain set of characters — and anything
// else (an older version's entry, a name to escape) goes through
// encoding/json as before: the bytes in the log are those json.Marshal
// writes, and what is read is what json.Unmarshal reads.

// encode is op as an entry's data.
func (op LockOp) encode() []byte {
	if !plainJSON(op.Op) || !plainJSON(op.Lock) {
		b, _ := json.Marshal(op)
		return b
	}
	b := make([]byte, 0, 64+len(op.Lock))
	b = append(append(append(b, `{"op":"`...), op.Op...), '"')
	b = appendUintField(b, `,"tag":`, op.Tag)
	if op.Owner != 0 {
		b = strconv.AppendInt(append(b, `,"owner":`...), int64(op.Owner), 10)
	}
	if op.TTL != 0 {
		b = strconv.AppendInt(append(b, `,"ttl":`...), int64(op.TTL), 10)
	}
	b = appendUintField(b, `,"session":`, op.Session)
	b = appendUintField(b, `,"seq":`, op.Seq)
	if op.Lock != "" {
		b = append(append(append(b, `,"lock":"`...), op.Lock...), '"')
	}
	b = appendUintField(b, `,"based":`, op.Based)
	return append(b, '}')
}

func appendUintField(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

// plainJSON reports whether json.Marshal writes s as it is, between
// quotes: printable ASCII but for the quote, the backslash and the three
// characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// decodeLockOp reads an entry's data as json.Unmarshal would.
func decodeLockOp(data []byte) (LockOp, error) {
	if op, ok := readPlainLockOp(data); ok {
		return op, nil
	}
	var op LockOp
	err := json.Unmarshal(data, &op)
	return op, err
}

// readPlainLockOp reads data if it is spelled exactly as encode spells
// the operation it holds; ok false otherwise.
func readPlainLockOp(data []byte) (op LockOp, ok bool) {
	d := plainReader{b: data}
	if !d.lit(`{"op":`) {
		return op, false
	}
	op.Op = d.str()
	if d.lit(`,"tag":`) {
		op.Tag = d.uint()
	}
	if d.lit(`,"owner":`) {
		op.Owner = proc.ID(d.int(32))
	}
	if d.lit(`,"ttl":`) {
		op.TTL = time.Duration(d.int(64))
	}
	if d.lit(`,"session":`) {
		op.Session = d.uint()
	}
	if d.lit(`,"seq":`) {
		op.Seq = d.uint()
	}
	if d.lit(`,"lock":`) {
		if op.Lock = d.str(); op.Lock == "" {
			d.bad = true // encode leaves an empty name out
		}
	}
	if d.lit(`,"based":`) {
		op.Based = d.uint()
	}
	if !d.lit(`}`) || d.bad || len(d.b) != 0 {
		return LockOp{}, false
	}
	return op, true
}

// plainReader reads the spelling encode writes; bad once it meets
// another.
type plainReader struct {
	b   []byte
	bad bool
}

// lit consumes s if the input goes on with it.
func (d *plainReader) lit(s string) bool {
	if d.bad || len(d.b) < len(s) || string(d.b[:len(s)]) != s {
		return false
	}
	d.b = d.b[len(s):]
	return true
}

// str reads a quoted string of plain characters (plainJSON).
func (d *plainReader) str() string {
	if d.bad || len(d.b) == 0 || d.b[0] != '"' {
		d.bad = true
		return ""
	}
	for i := 1; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			s := string(d.b[1:i])
			d.b = d.b[i+1:]
			return s
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			d.bad = true
			return ""
		}
	}
	d.bad = true
	return ""
}

// digits takes the number in front, as json.Marshal writes a non-zero
// integer: an optional minus (if signed), then digits without a leading
// zero.
func (d *plainReader) digits(signed bool) string {
	i := 0
	if signed && i < len(d.b) && d.b[i] == '-' {
		i++
	}
	start := i
	for i < len(d.b) && d.b[i] >= '0' && d.b[i] <= '9' {
		i++
	}
	if d.bad || i == start || d.b[start] == '0' {
		d.bad = true // no digits, or a zero (left out), or a leading zero
		return ""
	}
	s := string(d.b[:i])
	d.b = d.b[i:]
	return s
}

func (d *plainReader) uint() uint64 {
	v, err := strconv.ParseUint(d.digits(false), 10, 64)
	if err != nil {
		d.bad = true
	}
	return v
}

func (d *plainReader) int(bits int) int64 {
	v, err := strconv.ParseInt(d.digits(true), 10, bits)
	if err != nil {
		d.bad = true
	}
	return v
}
