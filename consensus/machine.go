package consensus

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// Log is the state machine of the registered algorithm: the sequence of
// applied entries, kept as a running digest. Every Apply outputs Applied.
type Log struct {
	index  uint64
	digest uint64
}

// Applied is output for every entry a server applies: its index, its data
// and the digest of every entry's data up to it. Two servers that applied
// different sequences have different digests at some index.
type Applied struct {
	Index  uint64 `json:"index"`
	Digest uint64 `json:"digest"`
	Data   string `json:"data,omitempty"`
}

func (Applied) Kind() string { return "applied" }

func (a Applied) String() string { return fmt.Sprintf("applied %d %q", a.Index, a.Data) }

func (l *Log) Apply(env proc.Env, index uint64, data []byte) error {
	l.step(index, data)
	env.Output(Applied{Index: index, Digest: l.digest, Data: string(data)})
	return nil
}

// applyDigest is Apply with an output that leaves the data out (for
// machines whose entries carry bulk).
func (l *Log) applyDigest(env proc.Env, index uint64, data []byte) {
	l.step(index, data)
	env.Output(Applied{Index: index, Digest: l.digest})
}

func (l *Log) step(index uint64, data []byte) {
	if index != l.index+1 {
		panic(fmt.Sprintf("applied entry %d after %d", index, l.index))
	}
	// FNV-1a over the previous digest (8 bytes, little-endian), the
	// length (a uvarint) and the data's CRC-32C (4 bytes, little-endian),
	// without a hash.Hash to allocate. FNV-1a takes a multiplication a
	// byte, and every server digests every entry: over the data itself it
	// was a twentieth of a busy group service's time, where CRC-32C runs
	// in the processor's instruction for it. A different entry of the same
	// length escapes the digest with probability 2⁻³² at most.
	var head [8 + binary.MaxVarintLen64 + 4]byte
	binary.LittleEndian.PutUint64(head[:], l.digest)
	k := 8 + binary.PutUvarint(head[8:], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[k:], crc32.Checksum(data, castagnoli))
	l.index, l.digest = index, fnv1a(fnvOffset, head[:k+4])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FNV-1a, 64 bits (Fowler, Noll, Vo), as hash/fnv's New64a.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func (l *Log) Snapshot() []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, l.index), l.digest)
}

func (l *Log) Restore(env proc.Env, b []byte) error {
	*l = Log{}
	switch len(b) {
	case 0:
		return nil
	case 16:
		l.index, l.digest = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		env.Output(Restored{Index: l.index, Digest: l.digest})
		return nil
	}
	return fmt.Errorf("the log's digest: %d bytes, want 16", len(b))
}

// Restored is output when a server's state machine is restored from a
// snapshot: the last entry it covers and the digest up to it. The next
// entry applied follows it.
type Restored struct {
	Index  uint64 `json:"index"`
	Digest uint64 `json:"digest"`
}

func (Restored) Kind() string { return "restored" }

// Algorithms lists the family's algorithms.
var Algorithms = []proc.Algorithm{raftAlgorithm(DefaultConfig), raftKVAlgorithm(DefaultConfig), raftLockAlgorithm(DefaultConfig),
	RaftGroupAlgorithm(DefaultConfig, DefaultRetain)}

// raftMessages are Raft's messages, and reconfigureMessages those added
// for changes forwarded to the leader; an algorithm on Raft lists its own
// between them (wire tags are positions in the list, kept for old peers).
var (
	raftMessages        = []proc.Message{RequestVote{}, Vote{}, AppendEntries{}, AppendReply{}, InstallSnapshot{}, Forward{}}
	reconfigureMessages = []proc.Message{Reconfigure{}, Refused{}, TimeoutNow{}}
)

func raftAlgorithm(cfg Config) proc.Algorithm {
	return proc.Algorithm{
		Family:  "consensus",
		Name:    "raft",
		Summary: "Raft with PreVote, CheckQuorum, pipelining, snapshots and leader leases, on stable storage",
		Source:  "Ongaro & Ousterhout 2014; Ongaro's thesis 2014",
		Assumes: proc.Assumptions{Failures: "crash-recover", Reconfigures: true},
		New: func(id proc.ID, n int) proc.Process {
			return New(id, n, cfg, &Log{})
		},
		Checks:   []string{"raft-election-safety", "raft-state-machine-safety", "raft-leader-completeness"},
		Messages: append(slices.Clone(raftMessages), reconfigureMessages...),
		Scenario: raftScenario,
		Inputs:   raftInputs,
	}
}

// raftInputs builds inputs for scenario files: "propose TEXT",
// "add-server N", "remove-server N".
func raftInputs(name string, args []string) (proc.Input, error) {
	switch name {
	case "propose":
		if len(args) == 0 {
			return nil, fmt.Errorf("input \"propose\" needs the data to propose")
		}
		return Propose{Data: []byte(strings.Join(args, " "))}, nil
	case "add-server", "remove-server":
		if len(args) != 1 {
			return nil, fmt.Errorf("input %q takes one server id, got %q", name, strings.Join(args, " "))
		}
		id, err := strconv.Atoi(args[0])
		if err != nil || id < 0 {
			return nil, fmt.Errorf("input %q: server id %q is not a process id", name, args[0])
		}
		if name == "add-server" {
			return AddServer{ID: proc.ID(id)}, nil
		}
		return RemoveServer{ID: proc.ID(id)}, nil
	}
	return nil, fmt.Errorf("unknown input %q (known: propose, add-server, remove-server)", name)
}

func raftKVAlgorithm(cfg Config) proc.Algorithm {
	a := raftAlgorithm(cfg)
	a.Name = "raft-kv"
	a.Summary = "a linearizable key-value store on Raft: every operation an entry, retries answered once per client"
	a.Source = "Ongaro's thesis 2014, §6.3 (client sessions); Herlihy & Wing 1990 (linearizability)"
	a.New = func(id proc.ID, n int) proc.Process { return New(id, n, cfg, NewKV()) }
	a.Checks = append(a.Checks, "linearizable-kv")
	return a
}

// raftScenario: five servers on a lossy network; one crashes at 400 ms,
// losing what it had not synced, and comes back at 700 ms to catch up.
// (Whichever server leads, the other four go on committing.)
const raftScenario = `nodes: 5
stop:
  deadline: 1200ms
network:
  latency: uniform:200us,2ms
  loss: 0.01
faults:
  - crash 2 at 400ms
  - recover 2 at 700ms
`

func raftLockAlgorithm(cfg Config) proc.Algorithm {
	a := raftAlgorithm(cfg)
	a.Name = "raft-lock"
	a.Summary = "a lock service on Raft: sessions kept alive at the leader, fencing tokens that are log indexes"
	a.Source = "Burrows 2006 (Chubby: locks, sessions, sequencers); Ongaro's thesis 2014, §6.4 (leases)"
	a.New = func(id proc.ID, n int) proc.Process { return NewLocks(id, n, cfg) }
	a.Checks = append(a.Checks, "lock-leases")
	// Wire tags are positions in the list: new messages go at the end.
	a.Messages = slices.Concat(raftMessages, []proc.Message{Touch{}, Touched{}}, reconfigureMessages)
	a.Inputs = nil
	return a
}

// DefaultRetain is how many messages per group a raft-group snapshot
// keeps for members that catch up.
const DefaultRetain = 1024

// RaftGroupAlgorithm is totally ordered group multicast on the log
// (Groups) with cfg, keeping retain messages per group in snapshots.
func RaftGroupAlgorithm(cfg Config, retain int) proc.Algorithm {
	a := raftAlgorithm(cfg)
	a.Name = "raft-group"
	a.Summary = "totally ordered group multicast on Raft: every message an entry, acknowledged once committed, positions to resume from"
	a.Source = "Birman's virtual synchrony and Spread compared; Ongaro's thesis 2014"
	a.New = func(id proc.ID, n int) proc.Process { return NewGroups(id, n, cfg, retain) }
	a.Checks = append(a.Checks, "group-order")
	a.Inputs = nil
	return a
}
