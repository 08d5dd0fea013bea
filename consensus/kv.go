package consensus

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/cohort-go/cohort/proc"
)

// KV is a replicated key-value store on the log: every operation, reads
// included, is an entry, so each takes effect at one point between its
// proposal and its result, the same on every server — the store is
// linearizable (Herlihy and Wing 1990) by construction, and the checker
// "linearizable-kv" verifies it on the clients' recorded histories.
//
// A client retries an operation it got no answer for, and a retry may
// reach the log twice. Each client numbers its operations; the store
// keeps, per client, the number and result of its last operation and
// answers a duplicate with the result of the first (Ongaro's thesis §6.3,
// "implementing linearizable semantics"). Clients must not have two
// operations outstanding, and the session table keeps one entry per
// client that ever wrote (a live service would expire them).
//
// Every entry is also digested and output as Log does ("applied"), so the
// Raft checkers judge a KV run too.
type KV struct {
	log      Log
	data     map[string]string
	sessions map[uint64]KVResult // client → its last operation's result
}

// KVOp is an operation, proposed as an entry's data (JSON).
type KVOp struct {
	Client uint64 `json:"client"`
	Seq    uint64 `json:"seq"`              // 1, 2, … per client
	Op     string `json:"op"`               // "get", "put" or "cas"
	Key    string `json:"key"`              //
	Value  string `json:"value,omitempty"`  // put, cas: the new value
	Expect string `json:"expect,omitempty"` // cas: the value required ("" also matches a missing key)
}

// Encode is the entry data that proposes op.
func (op KVOp) Encode() []byte {
	b, _ := json.Marshal(op)
	return b
}

// KVResult is output when an operation takes effect (and again, with the
// same contents, for a duplicate or when a server re-applies the entry
// after a restart): the value read or replaced, and for a cas whether it
// swapped.
type KVResult struct {
	Client uint64 `json:"client"`
	Seq    uint64 `json:"seq"`
	Index  uint64 `json:"index"` // the entry that carried the first copy
	Value  string `json:"value"` // get: the value; put, cas: the previous value
	Found  bool   `json:"found"` // the key existed (before a put or cas)
	OK     bool   `json:"ok"`    // cas: swapped; get, put: true
}

func (KVResult) Kind() string { return "kv-result" }

func (r KVResult) String() string {
	return fmt.Sprintf("kv-result c%d#%d %q ok=%v", r.Client, r.Seq, r.Value, r.OK)
}

// NewKV returns an empty store.
func NewKV() *KV { return &KV{data: map[string]string{}, sessions: map[uint64]KVResult{}} }

func (kv *KV) Apply(env proc.Env, index uint64, data []byte) error {
	var op KVOp
	if len(data) > 0 {
		if err := json.Unmarshal(data, &op); err != nil {
			return fmt.Errorf("kv: entry %d (%d bytes): %w", index, len(data), err) // the server halts
		}
	}
	kv.log.Apply(env, index, data)
	if op.Client == 0 || op.Seq == 0 {
		return nil // a leader's no-op, or not an operation
	}
	if last, ok := kv.sessions[op.Client]; ok && op.Seq <= last.Seq {
		if op.Seq == last.Seq {
			env.Output(last) // a duplicate: the first copy's result
		}
		return nil // (older than the last: the client has its answer)
	}
	old, found := kv.data[op.Key]
	res := KVResult{Client: op.Client, Seq: op.Seq, Index: index, Value: old, Found: found, OK: true}
	switch op.Op {
	case "put":
		kv.data[op.Key] = op.Value
	case "cas":
		if res.OK = old == op.Expect; res.OK {
			kv.data[op.Key] = op.Value
		}
	case "get":
	default:
		res.OK = false
	}
	kv.sessions[op.Client] = res
	env.Output(res)
	return nil
}

// Get reads key from this server's copy, without the log: what this
// server has applied, which may be stale (a follower behind, or a deposed
// leader). Linearizable reads go through the log as "get" operations.
func (kv *KV) Get(key string) (string, bool) {
	v, ok := kv.data[key]
	return v, ok
}

type kvSnapshot struct {
	Log      []byte              `json:"log"`
	Data     map[string]string   `json:"data"`
	Sessions map[uint64]KVResult `json:"sessions"`
}

func (kv *KV) Snapshot() []byte {
	b, _ := json.Marshal(kvSnapshot{Log: kv.log.Snapshot(), Data: kv.data, Sessions: kv.sessions})
	return b
}

func (kv *KV) Restore(env proc.Env, b []byte) error {
	*kv = *NewKV()
	var s kvSnapshot
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("kv: snapshot of %d bytes: %w", len(b), err) // the server halts
	}
	if err := kv.log.Restore(env, s.Log); err != nil {
		return fmt.Errorf("kv: snapshot: %w", err)
	}
	maps.Copy(kv.data, s.Data)
	maps.Copy(kv.sessions, s.Sessions)
	return nil
}
