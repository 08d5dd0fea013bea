package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/trace"
)

// The snapshot checkers read the snapshot family's contract from a trace
// (package snapshot): a "cut" output {"snap", "state"} is a process's
// frontier event for snapshot snap — the events of its history before it
// are in the cut, the rest outside; a "recorded" output {"snap",
// "channels": [{"from", "messages": [{"kind", "label", "body"}]}]} is the
// state it recorded for each incoming channel. Messages of type "marker"
// are the snapshots' own; every other message is the application's.
//
// A process's cut output is recorded when it records its state; if it
// does so on the receipt of a message (a marker; a red message in
// Lai–Yang), before handing that message on, the receipt, which the trace
// shows just before the cut output and the snapshot's own bookkeeping
// (cut and recorded outputs, marker sends), is outside the cut.
//
//   - snapshot-consistent: every snapshot's cut is consistent (Coulouris
//     et al. §14.5): every process recorded its state, and no application
//     message is received inside the cut that was sent outside it.
//   - snapshot-channels: the state recorded for each channel is exactly
//     the application messages in flight across the cut on it — sent
//     inside the cut, received outside it (or never) — compared by label
//     as multisets; and every process that recorded its state finished
//     recording its channels.
//   - bank-conserved: on the bank workload, the balances recorded plus the
//     money in the recorded channels equal the money the accounts opened
//     with ("opened" outputs {"balance"}), in every complete snapshot.
//
// A snapshot not finished when the trace ends while messages were still
// in flight gives unknown (the run stopped early); with none in flight it
// never will be: violated.
var (
	snapshotConsistent = checker{
		name:  "snapshot-consistent",
		doc:   "every recorded snapshot is a consistent cut: no message received inside it was sent outside it",
		check: checkSnapshotConsistent,
	}
	snapshotChannels = checker{
		name:  "snapshot-channels",
		doc:   "every recorded channel state is exactly the application messages in flight across the snapshot's cut",
		check: checkSnapshotChannels,
	}
	bankConserved = checker{
		name:  "bank-conserved",
		doc:   "in every snapshot of the bank workload, recorded balances plus money in the recorded channels equal the money the accounts opened with",
		check: checkBankConserved,
	}
)

func init() {
	Register(snapshotConsistent)
	Register(snapshotChannels)
	Register(bankConserved)
}

// snapID names a snapshot as package snapshot does.
type snapID struct {
	Initiator int32 `json:"initiator"`
	Seq       int   `json:"seq"`
}

func (s snapID) String() string { return fmt.Sprintf("p%d#%d", s.Initiator, s.Seq) }

type recordedMessage struct {
	Kind  string          `json:"kind"`
	Label string          `json:"label"`
	Body  json.RawMessage `json:"body"`
}

type recordedChannel struct {
	From     int32             `json:"from"`
	Messages []recordedMessage `json:"messages"`
}

// snap is one snapshot as the trace shows it.
type snap struct {
	id       snapID
	cut      map[int32]int // process → index of its cut output
	front    map[int32]int // process → index of its first event outside the cut
	state    map[int32]json.RawMessage
	recorded map[int32]int // process → index of its recorded output
	channels map[int32][]recordedChannel
}

// snapRun is what the snapshot checkers read from a trace.
type snapRun struct {
	snaps    []*snap        // in the order of their first cut
	sendOf   map[uint64]int // message id → its send
	recvOf   map[uint64]int // message id → its first receipt
	recvs    []int          // the receipts of application messages, in order
	inFlight int            // messages sent and neither received nor lost at the end
}

func readSnapshots(t *trace.Trace) (*snapRun, *Result) {
	r := &snapRun{sendOf: map[uint64]int{}, recvOf: map[uint64]int{}}
	byID := map[snapID]*snap{}
	get := func(id snapID) *snap {
		s := byID[id]
		if s == nil {
			s = &snap{id: id, cut: map[int32]int{}, front: map[int32]int{}, state: map[int32]json.RawMessage{}, recorded: map[int32]int{}, channels: map[int32][]recordedChannel{}}
			byID[id] = s
			r.snaps = append(r.snaps, s)
		}
		return s
	}
	open := map[uint64]bool{}
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == trace.Send:
			if _, ok := r.sendOf[e.Msg]; !ok {
				r.sendOf[e.Msg] = i
			}
			open[e.Msg] = true
		case e.Kind == trace.Recv:
			if _, ok := r.recvOf[e.Msg]; !ok {
				r.recvOf[e.Msg] = i
			}
			if e.Type != "marker" {
				r.recvs = append(r.recvs, i)
			}
			delete(open, e.Msg)
		case e.Kind == trace.Drop:
			delete(open, e.Msg)
		case e.Kind == trace.Output && e.Type == "cut":
			var c struct {
				Snap  snapID          `json:"snap"`
				State json.RawMessage `json:"state"`
			}
			if err := json.Unmarshal(e.Data, &c); err != nil {
				return nil, &Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: cut %s: %v", i, e.Data, err), Events: []int{i}}
			}
			s := get(c.Snap)
			if _, dup := s.cut[e.Node]; dup {
				return nil, &Result{Status: Violated, Detail: fmt.Sprintf("p%d recorded its state for %s twice", e.Node, c.Snap), Events: []int{s.cut[e.Node], i}}
			}
			s.cut[e.Node], s.state[e.Node] = i, c.State
		case e.Kind == trace.Output && e.Type == "recorded":
			var rec struct {
				Snap     snapID            `json:"snap"`
				Channels []recordedChannel `json:"channels"`
			}
			if err := json.Unmarshal(e.Data, &rec); err != nil {
				return nil, &Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: recorded %s: %v", i, e.Data, err), Events: []int{i}}
			}
			s := get(rec.Snap)
			s.recorded[e.Node], s.channels[e.Node] = i, rec.Channels
		}
	}
	r.inFlight = len(open)
	// The frontier: a process records its state on the receipt of a
	// marker (or, in Lai–Yang, of a red message) before it handles it, so
	// that receipt, recorded in the trace just before the cut output and
	// the snapshot's own bookkeeping, is outside the cut.
	history := map[int32][]int{}
	for i := range t.Events {
		if t.Events[i].Kind.IsProcess() {
			history[t.Events[i].Node] = append(history[t.Events[i].Node], i)
		}
	}
	for _, s := range r.snaps {
		for p, c := range s.cut {
			s.front[p] = c
			h := history[p]
			k, _ := slices.BinarySearch(h, c)
			for k--; k >= 0; k-- {
				e := &t.Events[h[k]]
				bookkeeping := e.Kind == trace.Output && (e.Type == "cut" || e.Type == "recorded") || e.Kind == trace.Send && e.Type == "marker"
				if bookkeeping {
					continue
				}
				if e.Kind == trace.Recv {
					s.front[p] = h[k]
				}
				break
			}
		}
	}
	return r, nil
}

// incomplete reports, for a snapshot, the processes missing from what
// present says (cut or recorded), as a Result; nil if none is missing.
func (r *snapRun) incomplete(t *trace.Trace, s *snap, present map[int32]int, what string) *Result {
	count := t.Header.Nodes
	for p := range present {
		if p >= 0 && int(p) < t.Header.Nodes {
			count--
		}
	}
	if count == 0 {
		return nil
	}
	var missing []string // the first few
	for p := int32(0); len(missing) < min(count, 5); p++ {
		if _, ok := present[p]; !ok {
			missing = append(missing, fmt.Sprintf("p%d", p))
		}
	}
	if count > len(missing) {
		missing = append(missing, fmt.Sprintf("and %d more", count-len(missing)))
	}
	events := slices.Sorted(maps.Values(s.cut))
	detail := fmt.Sprintf("%s: %s never %s", s.id, strings.Join(missing, ", "), what)
	if r.inFlight > 0 {
		return &Result{Status: Unknown, Detail: fmt.Sprintf("%s, %d messages still in flight at the end", detail, r.inFlight), Events: events}
	}
	return &Result{Status: Violated, Detail: detail, Events: events}
}

// in reports whether event i of process p is inside the cut of s.
func (s *snap) in(p int32, i int) bool { return i < s.front[p] }

func checkSnapshotConsistent(t *trace.Trace) Result {
	r, bad := readSnapshots(t)
	if bad != nil {
		return *bad
	}
	var fs []finding
	var unknowns []Result
	for _, s := range r.snaps {
		if res := r.incomplete(t, s, s.cut, "recorded its state"); res != nil {
			if res.Status == Unknown {
				unknowns = append(unknowns, *res)
				continue
			}
			fs = append(fs, finding{res.Detail, res.Events})
			continue
		}
		for _, i := range r.recvs {
			e := &t.Events[i]
			if !s.in(e.Node, i) {
				continue
			}
			si, ok := r.sendOf[e.Msg]
			if !ok {
				continue // integrity's business
			}
			send := &t.Events[si]
			if !s.in(send.Node, si) {
				fs = append(fs, finding{fmt.Sprintf("%s is not consistent: %s %s from p%d to p%d is received inside the cut (before p%d recorded its state) but sent outside it (after p%d recorded its)",
					s.id, msgName(e.Msg), msgLabel(send), send.Node, e.Node, e.Node, send.Node),
					[]int{s.cut[send.Node], si, i, s.cut[e.Node]}})
				break
			}
		}
	}
	if len(fs) == 0 && len(unknowns) > 0 {
		return unknowns[0]
	}
	return verdict(fs)
}

// msgLabel is how a message is named in a channel state: its label, else its type.
func msgLabel(e *trace.Event) string { return cmp.Or(e.Label, e.Type) }

func checkSnapshotChannels(t *trace.Trace) Result {
	r, bad := readSnapshots(t)
	if bad != nil {
		return *bad
	}
	var fs []finding
	var unknowns []Result
	for _, s := range r.snaps {
		res := r.incomplete(t, s, s.cut, "recorded its state")
		if res == nil {
			res = r.incomplete(t, s, s.recorded, "finished recording its channels")
		}
		if res != nil {
			if res.Status == Unknown {
				unknowns = append(unknowns, *res)
			} else {
				fs = append(fs, finding{res.Detail, res.Events})
			}
			continue
		}
		// The application messages in flight across the cut, by channel.
		type channel struct{ from, to int32 }
		crossing := map[channel][]int{}
		for msg, si := range r.sendOf {
			send := &t.Events[si]
			if send.Type == "marker" || !s.in(send.Node, si) {
				continue
			}
			if ri, ok := r.recvOf[msg]; ok && s.in(send.Peer, ri) {
				continue
			}
			c := channel{send.Node, send.Peer}
			crossing[c] = append(crossing[c], si)
		}
		// Every channel with messages in flight or a recorded state.
		recorded := map[channel][]recordedMessage{}
		for to, chs := range s.channels {
			for _, ch := range chs {
				c := channel{ch.From, to}
				recorded[c] = append(recorded[c], ch.Messages...)
			}
		}
		all := slices.Collect(maps.Keys(crossing))
		for c := range recorded {
			if _, ok := crossing[c]; !ok {
				all = append(all, c)
			}
		}
		slices.SortFunc(all, func(a, b channel) int { return cmp.Or(cmp.Compare(a.to, b.to), cmp.Compare(a.from, b.from)) })
		for _, c := range all {
			sends := crossing[c]
			slices.Sort(sends)
			if f := compareChannel(t, s, c.from, c.to, sends, recorded[c]); f != nil {
				fs = append(fs, *f)
			}
		}
	}
	if len(fs) == 0 && len(unknowns) > 0 {
		return unknowns[0]
	}
	return verdict(fs)
}

// compareChannel compares, as multisets of labels, the messages in flight
// on from → to across s's cut (their sends) with those to recorded.
func compareChannel(t *trace.Trace, s *snap, from, to int32, sends []int, recorded []recordedMessage) *finding {
	want := map[string][]int{}
	for _, si := range sends {
		l := msgLabel(&t.Events[si])
		want[l] = append(want[l], si)
	}
	var extra []string
	for _, m := range recorded {
		l := cmp.Or(m.Label, m.Kind)
		if len(want[l]) == 0 {
			extra = append(extra, l)
			continue
		}
		want[l] = want[l][1:]
	}
	var missing []int
	for _, q := range want {
		missing = append(missing, q...)
	}
	slices.Sort(missing)
	if len(extra) == 0 && len(missing) == 0 {
		return nil
	}
	events := []int{s.cut[from], s.cut[to], s.recorded[to]}
	var why []string
	if len(missing) > 0 {
		var names []string
		for _, si := range missing {
			names = append(names, fmt.Sprintf("%s %s", msgName(t.Events[si].Msg), msgLabel(&t.Events[si])))
		}
		why = append(why, fmt.Sprintf("%d in flight across the cut not recorded (%s)", len(missing), strings.Join(names, ", ")))
		events = append(events, missing...)
	}
	if len(extra) > 0 {
		why = append(why, fmt.Sprintf("%d recorded that were not in flight (%s)", len(extra), strings.Join(extra, ", ")))
	}
	return &finding{fmt.Sprintf("%s: channel p%d→p%d: %s", s.id, from, to, strings.Join(why, "; ")), events}
}

func checkBankConserved(t *trace.Trace) Result {
	r, bad := readSnapshots(t)
	if bad != nil {
		return *bad
	}
	var total int64
	var opened []int
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind == trace.Output && e.Type == "opened" {
			var o struct {
				Balance int64 `json:"balance"`
			}
			if err := json.Unmarshal(e.Data, &o); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("event #%d: opened %s: %v", i, e.Data, err), Events: []int{i}}
			}
			total += o.Balance
			opened = append(opened, i)
		}
	}
	if len(opened) == 0 && len(r.snaps) > 0 {
		return Result{Status: Unknown, Detail: "no account opened: not a run of the bank workload"}
	}
	var fs []finding
	for _, s := range r.snaps {
		if len(s.recorded) < t.Header.Nodes || len(s.cut) < t.Header.Nodes {
			continue // incomplete: snapshot-channels says so
		}
		var balances, channels int64
		for p, st := range s.state {
			var b int64
			if err := json.Unmarshal(st, &b); err != nil {
				return Result{Status: Unknown, Detail: fmt.Sprintf("%s: p%d's state %s is not a balance: %v", s.id, p, st, err), Events: []int{s.cut[p]}}
			}
			balances += b
		}
		for p, chs := range s.channels {
			for _, ch := range chs {
				for _, m := range ch.Messages {
					if m.Kind != "money" {
						continue
					}
					var money struct {
						Amount int64 `json:"amount"`
					}
					if err := json.Unmarshal(m.Body, &money); err != nil {
						return Result{Status: Unknown, Detail: fmt.Sprintf("%s: p%d recorded money %s: %v", s.id, p, m.Body, err), Events: []int{s.recorded[p]}}
					}
					channels += money.Amount
				}
			}
		}
		if balances+channels != total {
			fs = append(fs, finding{fmt.Sprintf("%s: balances %d + money in the channels %d = %d, but the accounts opened with %d",
				s.id, balances, channels, balances+channels, total), slices.Sorted(maps.Values(s.recorded))})
		}
	}
	return verdict(fs)
}
