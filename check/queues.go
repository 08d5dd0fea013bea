package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/trace"
)

// queueDelivery reads a replicated queue service's contract from a trace
// (consensus.Queues): "queue-put-done" outputs {"queue","id"} acknowledge
// puts (id > 0); a "queue-get" input {"origin","seq"} sent at time s and
// answered by a "queue-got" output {"queue","origin","seq","token",
// "valid","messages":[{"id"}]} leases those messages to that consumer
// from the answer until s + valid, or until the consumer acks or
// releases them ("queue-ack", "queue-release" inputs {"origin","ids"}, a
// "queue-tx" input {"origin","acks":[{"id"}]}); "queue-acked" outputs
// {"index","ids"} (not "released") and "queue-tx-done" outputs
// {"index","acked"} drop messages at log index "index". Tokens are log
// indexes, so the checker orders leases and acks without clocks. The
// properties:
//   - no two consumers hold a message at once, by their own reckoning;
//   - no message is leased again by an entry after the one that acked it;
//   - FIFO, and nothing acknowledged lost: a queue first leases its
//     messages in the order of their ids, and never leases a message
//     before one of a lower id that was acknowledged and not yet leased.
var queueDelivery = checker{
	name:  "queue-delivery",
	doc:   "replicated queues: no message leased to two consumers at once by their reckoning (from the answer to the get until its validity runs out or the consumer acks or releases it), none leased again after it was acked, and each queue first leases its acknowledged messages in the order of their ids (FIFO, none skipped)",
	check: checkQueueDelivery,
}

func init() { Register(queueDelivery) }

type queueHolding struct {
	id, token, origin uint64
	queue             string
	start, end        int64
	got, reason       int // events: the answer, and what ended the holding (-1: its reckoning)
}

func checkQueueDelivery(t *trace.Trace) Result {
	type opKey struct{ origin, seq uint64 }
	type msgRef struct {
		ID uint64 `json:"id"`
	}
	var x struct {
		Queue    string        `json:"queue"`
		Origin   uint64        `json:"origin"`
		Seq      uint64        `json:"seq"`
		ID       uint64        `json:"id"`
		Token    uint64        `json:"token"`
		Index    uint64        `json:"index"`
		Valid    time.Duration `json:"valid"`
		Released bool          `json:"released"`
		IDs      []uint64      `json:"ids"`
		Acked    []uint64      `json:"acked"`
		Acks     []msgRef      `json:"acks"`
		Messages []msgRef      `json:"messages"`
	}
	getSent := map[opKey]int64{}
	type leaseKey struct{ id, token uint64 }
	seen := map[leaseKey]bool{}
	var holdings []queueHolding
	type stop struct {
		at int64
		ev int
	}
	stops := map[[2]uint64][]stop{} // (origin, id) → its acks and releases
	ackedAt := map[uint64]uint64{}  // id → the first entry that acked it
	putQueue := map[uint64]string{} // acknowledged puts: id → queue
	putEv := map[uint64]int{}
	var fs []finding
	for i, e := range t.Events {
		switch {
		case e.Kind == trace.Input && (e.Type == "queue-get" || e.Type == "queue-ack" || e.Type == "queue-release" || e.Type == "queue-tx"):
		case e.Kind == trace.Output && (e.Type == "queue-got" || e.Type == "queue-put-done" || e.Type == "queue-acked" || e.Type == "queue-tx-done"):
		default:
			continue
		}
		x.IDs, x.Acked, x.Acks, x.Messages = nil, nil, nil, nil
		x.Released, x.Token, x.Index, x.ID = false, 0, 0, 0
		if err := json.Unmarshal(e.Data, &x); err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s %s: %v", i, e.Type, e.Data, err), Events: []int{i}}
		}
		switch e.Type {
		case "queue-get":
			if _, ok := getSent[opKey{x.Origin, x.Seq}]; !ok {
				getSent[opKey{x.Origin, x.Seq}] = e.Time
			}
		case "queue-ack", "queue-release":
			for _, id := range x.IDs {
				stops[[2]uint64{x.Origin, id}] = append(stops[[2]uint64{x.Origin, id}], stop{e.Time, i})
			}
		case "queue-tx":
			for _, r := range x.Acks {
				stops[[2]uint64{x.Origin, r.ID}] = append(stops[[2]uint64{x.Origin, r.ID}], stop{e.Time, i})
			}
		case "queue-put-done":
			if x.ID > 0 {
				if _, ok := putQueue[x.ID]; !ok {
					putQueue[x.ID], putEv[x.ID] = x.Queue, i
				}
			}
		case "queue-acked", "queue-tx-done":
			if x.Index == 0 {
				continue // a copy's answer, of an operation acked before
			}
			ids := x.Acked
			if e.Type == "queue-acked" {
				if x.Released {
					continue
				}
				ids = x.IDs
			}
			for _, id := range ids {
				if at, ok := ackedAt[id]; !ok || x.Index < at {
					ackedAt[id] = x.Index
				}
			}
		case "queue-got":
			s, asked := getSent[opKey{x.Origin, x.Seq}]
			for _, m := range x.Messages {
				k := leaseKey{m.ID, x.Token}
				if seen[k] {
					continue
				}
				seen[k] = true
				h := queueHolding{id: m.ID, token: x.Token, origin: x.Origin, queue: x.Queue, start: e.Time, end: math.MaxInt64, got: i, reason: -1}
				if asked {
					h.end = s + int64(x.Valid)
				}
				holdings = append(holdings, h)
			}
		}
	}
	for i := range holdings {
		h := &holdings[i]
		for _, st := range stops[[2]uint64{h.origin, h.id}] {
			if st.at >= h.start && st.at < h.end {
				h.end, h.reason = st.at, st.ev
				break
			}
		}
	}

	// Acked, then leased again.
	for _, h := range holdings {
		if at, ok := ackedAt[h.id]; ok && h.token > at {
			fs = append(fs, finding{detail: fmt.Sprintf("message %d of queue %q was acked at entry %d and leased again at entry %d", h.id, h.queue, at, h.token),
				events: []int{h.got}})
		}
	}

	// Two consumers at once.
	byID := map[uint64][]queueHolding{}
	for _, h := range holdings {
		byID[h.id] = append(byID[h.id], h)
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		hs := byID[id]
		slices.SortStableFunc(hs, func(a, b queueHolding) int { return cmp.Compare(a.token, b.token) })
		last := hs[0]
		for _, cur := range hs[1:] {
			if last.end > cur.start {
				ev, ended := []int{last.got, cur.got}, "its consumer's reckoning runs out"
				if last.reason >= 0 {
					ev, ended = append(ev, last.reason), "its consumer lets it go"
				}
				fs = append(fs, finding{detail: fmt.Sprintf("message %d of queue %q is leased (entry %d) at %v while an earlier lease (entry %d) may still hold it: %s at %v",
					id, cur.queue, cur.token, time.Duration(cur.start), last.token, ended, time.Duration(last.end)), events: ev})
			}
			if cur.end >= last.end {
				last = cur
			}
		}
	}

	// FIFO: first leases in the order of ids, none acknowledged skipped.
	first := map[uint64]queueHolding{}
	for _, h := range holdings {
		if f, ok := first[h.id]; !ok || h.token < f.token {
			first[h.id] = h
		}
	}
	firsts := slices.Collect(maps.Values(first))
	slices.SortFunc(firsts, func(a, b queueHolding) int { return cmp.Or(cmp.Compare(a.token, b.token), cmp.Compare(a.id, b.id)) })
	byQueue := map[string][]uint64{} // acknowledged puts, by queue, ascending
	for _, id := range slices.Sorted(maps.Keys(putQueue)) {
		byQueue[putQueue[id]] = append(byQueue[putQueue[id]], id)
	}
	top := map[string]queueHolding{}
	next := map[string]int{} // per queue, the acknowledged puts passed so far
	leased := map[uint64]bool{}
	for _, h := range firsts {
		if p, ok := top[h.queue]; ok && h.id < p.id {
			fs = append(fs, finding{detail: fmt.Sprintf("queue %q: message %d was first leased (entry %d) after message %d (entry %d)", h.queue, h.id, h.token, p.id, p.token),
				events: []int{p.got, h.got}})
		}
		if p, ok := top[h.queue]; !ok || h.id > p.id {
			top[h.queue] = h
		}
		leased[h.id] = true
		ids := byQueue[h.queue]
		for ; next[h.queue] < len(ids) && ids[next[h.queue]] < h.id; next[h.queue]++ {
			if id := ids[next[h.queue]]; !leased[id] {
				fs = append(fs, finding{detail: fmt.Sprintf("queue %q: message %d, acknowledged, was skipped: message %d was leased (entry %d) before it ever was", h.queue, id, h.id, h.token),
					events: []int{putEv[id], h.got}})
			}
		}
	}
	return verdict(fs)
}
