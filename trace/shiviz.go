package trace

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShiVizRegexp is the parser regular expression for the logs WriteShiViz
// writes: GoVector's log format, which ShiViz also offers as a preset. Each
// entry is two lines, the host and its vector clock as a JSON object, then
// the event's description.
const ShiVizRegexp = `(?<host>\S*) (?<clock>{.*})\n(?<event>.*)`

// shivizMaxHosts bounds the processes of a ShiViz log: a vector clock per
// event over that many hosts is as much as the visualizer can handle.
const shivizMaxHosts = 4096

// WriteShiViz writes t as a log for ShiViz, the vector-clock visualizer
// (https://bestchai.bitbucket.io/shiviz/). The file can be loaded as is: its
// first line is ShiVizRegexp and its second line is empty (no delimiter
// between executions), which is how ShiViz expects a log file to carry its
// parser. Then comes one entry per process event, in trace order:
//
//	p1 {"p0":2,"p1":3}
//	send REQ(ts=4) to p2 (t=1.500ms, msg 7)
//
// Hosts are named p0, p1, ... Drop and Dup are network events the processes
// never saw, so they have no entry: they are folded into the description of
// the send ("duplicated", "dropped: partition").
//
// The clocks are the trace's recorded vector timestamps if every process
// event has one and they follow ShiViz's rules (a host's own component is 1
// at its first event and grows by exactly 1 per event; other components only
// name events that exist). Otherwise they are computed from the trace itself:
// process order plus each send before its receipts, matched by message id.
// Only non-zero components are written.
func WriteShiViz(w io.Writer, t *Trace) error {
	_, err := WriteShiVizExecutions(w, t)
	return err
}

// ShiVizDelimiter is the regular expression that separates the executions
// of a log WriteShiVizExecutions writes: a line "=== name ===", whose name
// ShiViz shows as the execution's label (its "trace" group).
const ShiVizDelimiter = `^=== (?<trace>.*) ===$`

// WriteShiVizExecutions writes one ShiViz log of several runs, so that
// ShiViz shows them side by side and can diff them pairwise (its
// "multiple executions"): the second line of the file is ShiVizDelimiter,
// and each run's entries follow a line "=== algo ===" naming it (the
// header's algorithm, or "run k"; made unique). With one trace it writes
// what WriteShiViz writes. It returns the number of entries written.
func WriteShiVizExecutions(w io.Writer, ts ...*Trace) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(ShiVizRegexp)
	bw.WriteString("\n")
	if len(ts) > 1 {
		bw.WriteString(ShiVizDelimiter)
	}
	bw.WriteString("\n")
	total := 0
	seen := map[string]bool{}
	for k, t := range ts {
		if len(ts) > 1 {
			name := strings.TrimSpace(t.Header.Algo)
			if name == "" || seen[name] {
				name = fmt.Sprintf("run %d", k+1)
			}
			seen[name] = true
			bw.WriteString("=== ")
			bw.Write(shivizAppendLine(nil, name))
			bw.WriteString(" ===\n")
		}
		n, err := shivizEntries(bw, t)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, bw.Flush()
}

// shivizEntries writes the entries of one trace and returns how many.
func shivizEntries(bw *bufio.Writer, t *Trace) (int, error) {
	hosts, err := shivizHosts(t)
	if err != nil {
		return 0, err
	}
	fates := shivizFates(t)
	clocks := shivizRecorded(t, hosts)
	if clocks == nil {
		clocks = shivizComputed(t, hosts)
	}
	n := 0
	var buf []byte
	for i := range t.Events {
		e := &t.Events[i]
		if !e.Kind.IsProcess() {
			continue
		}
		buf = append(buf[:0], 'p')
		buf = strconv.AppendInt(buf, int64(e.Node), 10)
		buf = append(buf, " {"...)
		first := true
		for d, v := range clocks(i) {
			if v == 0 {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = append(buf, `"p`...)
			buf = strconv.AppendInt(buf, int64(hosts.ids[d]), 10)
			buf = append(buf, `":`...)
			buf = strconv.AppendUint(buf, v, 10)
		}
		buf = append(buf, "}\n"...)
		buf = shivizAppendLine(buf, shivizText(e, fates[e.Msg]))
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// shivizHostSet maps the processes that have events to dense indices, in
// increasing order of process number.
type shivizHostSet struct {
	ids   []int32       // dense index -> process
	dense map[int32]int // process -> dense index
	count []uint64      // events per dense index
}

func shivizHosts(t *Trace) (*shivizHostSet, error) {
	h := &shivizHostSet{dense: map[int32]int{}}
	for i := range t.Events {
		e := &t.Events[i]
		if !e.Kind.IsProcess() {
			continue
		}
		if e.Node < 0 {
			return nil, fmt.Errorf("trace: event %d: node %d out of range", i, e.Node)
		}
		if _, ok := h.dense[e.Node]; !ok {
			if len(h.dense) == shivizMaxHosts {
				return nil, fmt.Errorf("trace: more than %d processes for a ShiViz log", shivizMaxHosts)
			}
			h.dense[e.Node] = 0
			h.ids = append(h.ids, e.Node)
		}
	}
	slices.Sort(h.ids)
	for d, id := range h.ids {
		h.dense[id] = d
	}
	h.count = make([]uint64, len(h.ids))
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind.IsProcess() {
			h.count[h.dense[e.Node]]++
		}
	}
	return h, nil
}

// shivizRecorded returns the recorded vector timestamps, re-indexed densely,
// if they are usable as they are; nil if not.
func shivizRecorded(t *Trace, h *shivizHostSet) func(i int) []uint64 {
	seen := make([]uint64, len(h.ids))
	for i := range t.Events {
		e := &t.Events[i]
		if !e.Kind.IsProcess() {
			continue
		}
		if e.VC.IsZero() {
			return nil
		}
		d := h.dense[e.Node]
		seen[d]++
		for id, v := range e.VC.Entries() {
			od, ok := h.dense[int32(id)]
			if !ok || v > h.count[od] {
				return nil // a host without events, or an event that does not exist
			}
		}
		if e.VC.At(int(e.Node)) != seen[d] {
			return nil
		}
	}
	vc := make([]uint64, len(h.ids))
	return func(i int) []uint64 {
		src := t.Events[i].VC
		for d, id := range h.ids {
			vc[d] = src.At(int(id))
		}
		return vc
	}
}

// shivizComputed computes vector clocks from the structure of the trace. The
// returned function must be called for the process events in trace order.
func shivizComputed(t *Trace, h *shivizHostSet) func(i int) []uint64 {
	n := len(h.ids)
	cur := make([][]uint64, n)
	for d := range cur {
		cur[d] = make([]uint64, n)
	}
	// Receipts still to come per message, so a send's clock can be freed
	// after its last receipt.
	pending := map[uint64]int{}
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == Recv {
			pending[e.Msg]++
		}
	}
	sent := map[uint64][]uint64{}
	return func(i int) []uint64 {
		e := &t.Events[i]
		d := h.dense[e.Node]
		vc := cur[d]
		if e.Kind == Recv {
			if s, ok := sent[e.Msg]; ok {
				for k, v := range s {
					vc[k] = max(vc[k], v)
				}
				if pending[e.Msg]--; pending[e.Msg] <= 0 {
					delete(sent, e.Msg)
				}
			}
		}
		vc[d]++
		if e.Kind == Send && pending[e.Msg] > 0 {
			sent[e.Msg] = slices.Clone(vc)
		}
		return vc
	}
}

// shivizFate is what the network did to a message besides delivering it.
type shivizFate struct {
	dups    int
	drops   int
	reasons []string
}

func shivizFates(t *Trace) map[uint64]*shivizFate {
	m := map[uint64]*shivizFate{}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != Drop && e.Kind != Dup {
			continue
		}
		f := m[e.Msg]
		if f == nil {
			f = &shivizFate{}
			m[e.Msg] = f
		}
		if e.Kind == Dup {
			f.dups++
			continue
		}
		f.drops++
		if e.Reason != "" && !slices.Contains(f.reasons, e.Reason) {
			f.reasons = append(f.reasons, e.Reason)
		}
	}
	return m
}

// shivizText describes a process event on one line.
func shivizText(e *Event, f *shivizFate) string {
	what := e.Label
	if what == "" {
		what = e.Type
	}
	var b strings.Builder
	b.WriteString(e.Kind.String())
	if what != "" {
		b.WriteByte(' ')
		b.WriteString(what)
	}
	switch e.Kind {
	case Send:
		fmt.Fprintf(&b, " to p%d", e.Peer)
	case Recv:
		fmt.Fprintf(&b, " from p%d", e.Peer)
	}
	b.WriteString(" (t=")
	b.WriteString(FormatNS(e.Time))
	if e.Msg != 0 {
		fmt.Fprintf(&b, ", msg %d", e.Msg)
	}
	if e.Kind == Send && f != nil {
		switch f.dups {
		case 0:
		case 1:
			b.WriteString(", duplicated")
		default:
			fmt.Fprintf(&b, ", duplicated %d times", f.dups)
		}
		if f.drops > 0 {
			b.WriteString(", dropped")
			if f.drops > 1 {
				fmt.Fprintf(&b, " %d times", f.drops)
			}
			if len(f.reasons) > 0 {
				b.WriteString(": ")
				b.WriteString(strings.Join(f.reasons, ", "))
			}
		}
	}
	b.WriteByte(')')
	return b.String()
}

// shivizAppendLine appends s so that it stays on one line for both the
// JavaScript regular expression ShiViz uses (where '.' stops at \n, \r,
// U+2028 and U+2029) and Go's: line breaks and other control characters
// become \uXXXX escapes and invalid UTF-8 becomes U+FFFD.
func shivizAppendLine(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}
