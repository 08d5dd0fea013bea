package consensus

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The lock operations' hand-made JSON is json.Marshal's, byte for byte,
// and reads back as json.Unmarshal reads it.

var lockOpSamples = []LockOp{
	{Op: "open", Tag: 7, Owner: 2, TTL: 10 * time.Second},
	{Op: "acquire", Session: 5, Seq: 1764000000000000001, Lock: "x"},
	{Op: "release", Session: math.MaxUint64, Seq: 1, Lock: "election/leader-1"},
	{Op: "close", Session: 9, Seq: 3},
	{Op: "expire", Session: 9, Based: 12},
	{Op: "renew", Session: 9, Seq: 4, Owner: proc.None},
	{Op: "open", TTL: math.MinInt64, Owner: math.MinInt32},
	{Op: ""},
	{Op: "acquire", Session: 1, Seq: 2, Lock: `a "quoted" <name> & \ back`},
	{Op: "acquire", Session: 1, Seq: 2, Lock: "naïve\u2028\x01"},
}

func TestLockOpIsJSON(t *testing.T) {
	for _, op := range lockOpSamples {
		checkLockOp(t, op)
	}
}

func checkLockOp(t *testing.T, op LockOp) {
	t.Helper()
	want, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	got := op.encode()
	if string(got) != string(want) {
		t.Fatalf("%+v encoded as %s, json.Marshal writes %s", op, got, want)
	}
	var std LockOp
	if err := json.Unmarshal(got, &std); err != nil {
		t.Fatal(err)
	}
	back, err := decodeLockOp(got)
	if err != nil || back != std {
		t.Fatalf("%s read as %+v (%v), json.Unmarshal reads %+v", got, back, err, std)
	}
	if _, plain := readPlainLockOp(got); plain != (plainJSON(op.Op) && plainJSON(op.Lock)) {
		t.Fatalf("%s: read by hand %v, want %v", got, plain, !plain)
	}
}

func FuzzLockOpEncode(f *testing.F) {
	for _, op := range lockOpSamples {
		f.Add(op.Op, op.Tag, int32(op.Owner), int64(op.TTL), op.Session, op.Seq, op.Lock, op.Based)
	}
	f.Fuzz(func(t *testing.T, name string, tag uint64, owner int32, ttl int64, session, seq uint64, lock string, based uint64) {
		checkLockOp(t, LockOp{Op: name, Tag: tag, Owner: proc.ID(owner), TTL: time.Duration(ttl), Session: session, Seq: seq, Lock: lock, Based: based})
	})
}

// FuzzLockOpDecode: whatever bytes it is given, decodeLockOp reads what
// json.Unmarshal reads, and fails where it fails.
func FuzzLockOpDecode(f *testing.F) {
	for _, op := range lockOpSamples {
		f.Add(op.encode())
	}
	for _, s := range []string{`{"op":"acquire","seq":01}`, `{"op":"acquire","lock":""}`, `{"op":"open","owner":2147483648}`,
		`{"op":"open","ttl":-0}`, `{"op":"x","session":0}`, `{"op":"x"} `, `{"seq":1,"op":"x"}`, `{"op":"x","seq":18446744073709551616}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var std LockOp
		stdErr := json.Unmarshal(data, &std)
		op, err := decodeLockOp(data)
		if (err != nil) != (stdErr != nil) || err == nil && op != std {
			t.Fatalf("%q read as %+v (%v), json.Unmarshal reads %+v (%v)", data, op, err, std, stdErr)
		}
		if plain, ok := readPlainLockOp(data); ok && (stdErr != nil || plain != std) {
			t.Fatalf("%q read by hand as %+v, json.Unmarshal reads %+v (%v)", data, plain, std, stdErr)
		}
	})
}
