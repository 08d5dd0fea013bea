package check_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/trace"
)

type kb struct{ *checktest.Builder }

// call records client c's operation op (seq s) proposed at server p.
func (b kb) call(p int32, op consensus.KVOp) int {
	data, _ := json.Marshal(consensus.Propose{Data: op.Encode()})
	return b.Add(trace.Event{Node: p, Kind: trace.Input, Peer: -1, Type: "propose", Data: data})
}

func (b kb) ret(p int32, r consensus.KVResult) int { return b.Output(p, r) }

func put(c, s uint64, k, v string) consensus.KVOp {
	return consensus.KVOp{Client: c, Seq: s, Op: "put", Key: k, Value: v}
}
func get(c, s uint64, k string) consensus.KVOp {
	return consensus.KVOp{Client: c, Seq: s, Op: "get", Key: k}
}
func cas(c, s uint64, k, from, to string) consensus.KVOp {
	return consensus.KVOp{Client: c, Seq: s, Op: "cas", Key: k, Expect: from, Value: to}
}
func res(c, s uint64, v string, found, ok bool) consensus.KVResult {
	return consensus.KVResult{Client: c, Seq: s, Value: v, Found: found, OK: ok}
}

func TestLinearizableKV(t *testing.T) {
	cases := []struct {
		name   string
		build  func(b kb) (cite []int)
		detail string // "": the history is linearizable
	}{
		{"sequential put then get", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.ret(0, res(1, 1, "", false, true))
			b.call(1, get(2, 1, "x"))
			b.ret(1, res(2, 1, "a", true, true))
			return nil
		}, ""},
		{"a get overlapping a put may see either value", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.call(1, get(2, 1, "x"))
			b.ret(1, res(2, 1, "", false, true))
			b.call(2, get(3, 1, "x"))
			b.ret(2, res(3, 1, "a", true, true))
			b.ret(0, res(1, 1, "", false, true))
			return nil
		}, ""},
		{"a put never answered may have taken effect", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.call(1, get(2, 1, "x"))
			b.ret(1, res(2, 1, "a", true, true))
			return nil
		}, ""},
		{"a retry answered twice, by two servers, counts once", func(b kb) []int {
			b.call(0, cas(1, 1, "x", "", "a"))
			b.call(1, cas(1, 1, "x", "", "a"))
			b.ret(1, res(1, 1, "", false, true))
			b.ret(0, res(1, 1, "", false, true))
			return nil
		}, ""},
		{"a stale read after a completed put", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.ret(0, res(1, 1, "", false, true))
			c := b.call(1, get(2, 1, "x"))
			r := b.ret(1, res(2, 1, "", false, true))
			return []int{0, 1, c, r}
		}, `c2#1 get x → "" cannot come next`},
		{"two cas from the same value both succeed", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.ret(0, res(1, 1, "", false, true))
			c1 := b.call(1, cas(2, 1, "x", "a", "b"))
			r1 := b.ret(1, res(2, 1, "a", true, true))
			c2 := b.call(2, cas(3, 1, "x", "a", "c"))
			r2 := b.ret(2, res(3, 1, "a", true, true))
			return []int{0, 1, c1, r1, c2, r2}
		}, `c3#1 cas x "a"→"c" (was "a") cannot come next`},
		{"keys are independent", func(b kb) []int {
			b.call(0, put(1, 1, "x", "a"))
			b.ret(0, res(1, 1, "", false, true))
			b.call(1, get(2, 1, "y"))
			b.ret(1, res(2, 1, "", false, true))
			return nil
		}, ""},
	}
	for _, c := range cases {
		b := kb{checktest.New(3)}
		want := c.build(b)
		got, err := check.Run(&b.Trace, "linearizable-kv")
		if err != nil {
			t.Fatal(err)
		}
		if c.detail == "" {
			want = nil // linearizable
		}
		expectVerdict(t, c.name, "linearizable-kv", got[0], want, c.detail)
	}
}

// A result nobody asked for is a violation; a malformed one, Unknown.
func TestLinearizableKVMalformed(t *testing.T) {
	b := kb{checktest.New(2)}
	r := b.ret(0, res(7, 1, "", false, true))
	got, _ := check.Run(&b.Trace, "linearizable-kv")
	if got[0].Status != check.Violated || !slices.Equal(got[0].Events, []int{r}) {
		t.Errorf("an unasked result: %+v", got[0])
	}
	b = kb{checktest.New(2)}
	b.Add(trace.Event{Node: 0, Kind: trace.Output, Peer: -1, Type: "kv-result", Data: []byte(`{"client":"x"}`)})
	if got, _ := check.Run(&b.Trace, "linearizable-kv"); got[0].Status != check.Unknown {
		t.Errorf("a malformed result: %+v", got[0])
	}
}
