package check

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cohort-go/cohort/trace"
)

// lockLeases reads a lease-based lock service's contract from a trace
// (consensus.Locks; Chubby's and etcd's locks work alike): a client that
// sent a "keepalive" input ({"session","seq"}) at time s and got a
// "kept-alive" output with the same session and seq, {"ok": true,
// "valid": V}, may count on its session until s + V; an "open-session"
// input ({"tag"}) answered by an "opened" output ({"tag","session",
// "valid"}) counts the same way from the first such input. A session
// holds a lock from the first "granted" output ({"lock","session",
// "token"}) until its client sends a "release" input for it (or a
// "close-session"), or its reckoning runs out without a renewal — a
// client that stops there never overlaps another if the service keeps its
// promise. The checker computes every such holding and reports two that
// overlap on one lock, or a grant whose token is not above those of the
// grants before it.
var lockLeases = checker{
	name:  "lock-leases",
	doc:   "lock leases: no two sessions hold a lock at once by their clients' reckoning (from the grant until the release, or until the last renewal's validity runs out), and each grant of a lock carries a larger fencing token than the grants before it",
	check: checkLockLeases,
}

func init() { Register(lockLeases) }

type leaseRenewal struct {
	at, until int64 // when the answer came; until when it counts
	ev        int   // the answer's event
}

type lockHolding struct {
	lock          string
	session       uint64
	token         uint64
	start, end    int64
	grant, reason int // events: the grant, and what ended the holding (-1: the trace's end)
}

func checkLockLeases(t *trace.Trace) Result {
	type sessSeq struct{ session, seq uint64 }
	type lockSess struct {
		lock    string
		session uint64
	}
	kaSent := map[sessSeq]int64{}
	openSent := map[uint64]int64{}
	renewals := map[uint64][]leaseRenewal{}
	type grant struct {
		lock           string
		session, token uint64
	}
	granted := map[grant]bool{} // a grant is output by every server; the first counts
	var holdings []lockHolding
	releases := map[lockSess][]int{} // release input events
	closes := map[uint64][]int{}
	var fs []finding
	for i, e := range t.Events {
		var x struct {
			Tag     uint64        `json:"tag"`
			Session uint64        `json:"session"`
			Seq     uint64        `json:"seq"`
			Lock    string        `json:"lock"`
			Token   uint64        `json:"token"`
			OK      bool          `json:"ok"`
			Valid   time.Duration `json:"valid"`
		}
		switch {
		case e.Kind == trace.Input && (e.Type == "keepalive" || e.Type == "open-session" || e.Type == "release" || e.Type == "close-session"):
		case e.Kind == trace.Output && (e.Type == "kept-alive" || e.Type == "opened" || e.Type == "granted"):
		default:
			continue
		}
		if err := json.Unmarshal(e.Data, &x); err != nil {
			return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: %s %s: %v", i, e.Type, e.Data, err), Events: []int{i}}
		}
		switch e.Type {
		case "keepalive":
			if _, ok := kaSent[sessSeq{x.Session, x.Seq}]; !ok {
				kaSent[sessSeq{x.Session, x.Seq}] = e.Time
			}
		case "open-session":
			if _, ok := openSent[x.Tag]; !ok {
				openSent[x.Tag] = e.Time
			}
		case "kept-alive":
			if s, ok := kaSent[sessSeq{x.Session, x.Seq}]; ok && x.OK {
				renewals[x.Session] = append(renewals[x.Session], leaseRenewal{at: e.Time, until: s + int64(x.Valid), ev: i})
			}
		case "opened":
			if s, ok := openSent[x.Tag]; ok {
				renewals[x.Session] = append(renewals[x.Session], leaseRenewal{at: e.Time, until: s + int64(x.Valid), ev: i})
			}
		case "release":
			k := lockSess{x.Lock, x.Session}
			releases[k] = append(releases[k], i)
		case "close-session":
			closes[x.Session] = append(closes[x.Session], i)
		case "granted":
			if k := (grant{x.Lock, x.Session, x.Token}); !granted[k] {
				granted[k] = true
				holdings = append(holdings, lockHolding{lock: x.Lock, session: x.Session, token: x.Token, start: e.Time, grant: i})
			}
		}
	}

	// Where each holding ends.
	for h := range holdings {
		hd := &holdings[h]
		hd.end, hd.reason = math.MaxInt64, -1 // past the trace, unless its reckoning ends
		var deadline int64 = -1
		rs := renewals[hd.session]
		for _, r := range rs {
			if r.at <= hd.start {
				deadline = max(deadline, r.until)
			}
		}
		for _, r := range rs { // renewals answered before the reckoning ran out
			if r.at > hd.start && r.at < deadline {
				deadline = max(deadline, r.until)
			}
		}
		hd.end = min(hd.end, deadline)
		for _, ev := range releases[lockSess{hd.lock, hd.session}] {
			if at := t.Events[ev].Time; at >= hd.start && at < hd.end {
				hd.end, hd.reason = at, ev
				break
			}
		}
		for _, ev := range closes[hd.session] {
			if at := t.Events[ev].Time; at >= hd.start && at < hd.end {
				hd.end, hd.reason = at, ev
				break
			}
		}
	}

	byLock := map[string][]lockHolding{}
	for _, h := range holdings {
		byLock[h.lock] = append(byLock[h.lock], h)
	}
	names := make([]string, 0, len(byLock))
	for name := range byLock {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		hs := byLock[name]
		slices.SortStableFunc(hs, func(a, b lockHolding) int { return a.grant - b.grant })
		last, top := hs[0], hs[0] // of the holdings so far, the one that ends last, and the one with the largest token
		for _, cur := range hs[1:] {
			if cur.token <= top.token {
				fs = append(fs, finding{
					detail: fmt.Sprintf("lock %q: session %d was granted token %d after session %d had token %d", name, cur.session, cur.token, top.session, top.token),
					events: []int{top.grant, cur.grant}})
			} else {
				top = cur
			}
			if last.end > cur.start && last.session != cur.session {
				ev, ended := []int{last.grant, cur.grant}, "its client's reckoning runs out"
				if last.reason >= 0 {
					ev, ended = append(ev, last.reason), "its client lets it go"
				}
				fs = append(fs, finding{
					detail: fmt.Sprintf("lock %q: session %d (token %d) is granted it at %v while session %d (token %d) may still hold it: %s at %v",
						name, cur.session, cur.token, time.Duration(cur.start), last.session, last.token, ended, time.Duration(last.end)),
					events: ev})
			}
			if cur.end >= last.end {
				last = cur
			}
		}
	}
	return verdict(fs)
}
