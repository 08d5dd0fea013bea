package trace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// txGen produces random but well-formed traces: what a simulated run of a
// message-passing algorithm looks like, with losses, duplicates, crashes,
// timers, inputs and outputs.
type txGen struct {
	rng      *rand.Rand
	tr       Trace
	now      int64
	lamport  []uint64
	vc       [][]uint64
	up       []bool
	inflight []txCopy
	sent     map[uint64]txSent
	nextMsg  uint64
	recordVC bool
}

type txCopy struct {
	msg      uint64
	from, to int32
}

type txSent struct {
	typ, label string
	lamport    uint64
	vc         []uint64
}

var txTypes = []string{"REQ", "ACK", "REL", "TOKEN"}

// txRandomTrace returns a random trace over nodes processes with about
// steps events. With recordVC, process events carry vector timestamps that
// tick on every process event (as the simulator records them).
func txRandomTrace(seed uint64, nodes, steps int, recordVC bool) *Trace {
	g := &txGen{
		rng:      rand.New(rand.NewPCG(seed, 0x636f686f7274)),
		lamport:  make([]uint64, nodes),
		vc:       make([][]uint64, nodes),
		up:       make([]bool, nodes),
		sent:     map[uint64]txSent{},
		recordVC: recordVC,
	}
	g.tr.Header = Header{Format: FormatName, Nodes: nodes, Family: "mutex", Algo: "random", Seed: seed}
	for p := range nodes {
		g.vc[p] = make([]uint64, nodes)
		g.up[p] = true
		g.process(Event{Node: int32(p), Kind: Start, Peer: -1}, nil)
	}
	for range steps {
		g.step()
	}
	return &g.tr
}

func (g *txGen) emit(e Event) {
	e.Index = len(g.tr.Events)
	e.Time = g.now
	e.Local = g.now + int64(e.Node)*1000
	g.tr.Events = append(g.tr.Events, e)
}

// process records a process event, ticking the clocks; from is the send a
// receipt merges, if any.
func (g *txGen) process(e Event, from *txSent) {
	p := e.Node
	if from != nil {
		g.lamport[p] = max(g.lamport[p], from.lamport)
		for k, v := range from.vc {
			g.vc[p][k] = max(g.vc[p][k], v)
		}
	}
	g.lamport[p]++
	g.vc[p][p]++
	e.Lamport = g.lamport[p]
	if g.recordVC {
		e.VC = DenseVC(append([]uint64(nil), g.vc[p]...))
	}
	g.emit(e)
}

func (g *txGen) upNode() (int32, bool) {
	var live []int32
	for p, ok := range g.up {
		if ok {
			live = append(live, int32(p))
		}
	}
	if len(live) == 0 {
		return 0, false
	}
	return live[g.rng.IntN(len(live))], true
}

func (g *txGen) step() {
	if g.rng.IntN(4) > 0 {
		g.now += int64(g.rng.IntN(3000)) * 1000
	}
	n := len(g.up)
	switch r := g.rng.IntN(100); {
	case r < 35: // send
		p, ok := g.upNode()
		if !ok {
			break
		}
		to := int32(g.rng.IntN(n))
		g.nextMsg++
		id := g.nextMsg
		typ := txTypes[g.rng.IntN(len(txTypes))]
		label := fmt.Sprintf("%s(ts=%d)", typ, g.lamport[p]+1)
		g.process(Event{Node: p, Kind: Send, Msg: id, Peer: to, Type: typ, Label: label}, nil)
		g.sent[id] = txSent{typ: typ, label: label, lamport: g.lamport[p], vc: append([]uint64(nil), g.vc[p]...)}
		g.inflight = append(g.inflight, txCopy{id, p, to})
		if g.rng.IntN(10) == 0 {
			g.emit(Event{Node: p, Kind: Dup, Msg: id, Peer: to, Type: typ})
			g.inflight = append(g.inflight, txCopy{id, p, to})
		}
	case r < 75: // deliver, or lose, a message in flight
		if len(g.inflight) == 0 {
			break
		}
		k := g.rng.IntN(len(g.inflight))
		c := g.inflight[k]
		g.inflight = append(g.inflight[:k], g.inflight[k+1:]...)
		s := g.sent[c.msg]
		switch {
		case !g.up[c.to]:
			g.emit(Event{Node: c.to, Kind: Drop, Msg: c.msg, Peer: c.from, Type: s.typ, Reason: "receiver crashed"})
		case g.rng.IntN(12) == 0:
			g.emit(Event{Node: c.to, Kind: Drop, Msg: c.msg, Peer: c.from, Type: s.typ, Reason: "loss"})
		default:
			g.process(Event{Node: c.to, Kind: Recv, Msg: c.msg, Peer: c.from, Type: s.typ, Label: s.label}, &s)
		}
	case r < 83:
		if p, ok := g.upNode(); ok {
			g.process(Event{Node: p, Kind: Timer, Peer: -1, Type: "tick"}, nil)
		}
	case r < 88:
		if p, ok := g.upNode(); ok {
			g.process(Event{Node: p, Kind: Input, Peer: -1, Type: "request", Data: json.RawMessage(`{"n":1}`)}, nil)
		}
	case r < 95:
		if p, ok := g.upNode(); ok {
			out := []string{"enter", "exit", fmt.Sprintf("elected p%d", p)}[g.rng.IntN(3)]
			g.process(Event{Node: p, Kind: Output, Peer: -1, Type: strings.Fields(out)[0], Label: out}, nil)
		}
	case r < 97:
		if p, ok := g.upNode(); ok {
			g.process(Event{Node: p, Kind: Crash, Peer: -1}, nil)
			g.up[p] = false
		}
	default:
		for p, ok := range g.up {
			if !ok {
				g.process(Event{Node: int32(p), Kind: Recover, Peer: -1}, nil)
				g.up[p] = true
				break
			}
		}
	}
}

// txNasty are strings that must survive the JSON encoding.
var txNasty = []string{
	`say "hi"`,
	`back\slash`,
	"nul\x00bell\x07esc\x1bdel\x7f",
	"tab\tnewline\nreturn\r",
	"bad utf-8 \xff\xfe end",
	"truncated \xe2\x82",
	"surrogate \xed\xa0\x80",
	"héllo wörld ☃ 日本語 🙂",
	"line sep \u2028 para sep \u2029",
	"<script>&amp;</script>",
	"\ufffd already replaced",
	"",
}

// txValidUTF8 is what a string becomes through JSON: every byte that is not
// part of valid UTF-8 turns into U+FFFD.
func txValidUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

func txWrite(t testing.TB, tr *Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, tr); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.Bytes()
}

// txNormalize makes the in-memory forms of equal traces comparable: an
// empty VC, Data or State is the same as none.
func txNormalize(tr *Trace) *Trace {
	c := &Trace{Header: tr.Header, Events: append([]Event(nil), tr.Events...)}
	c.Header.Format = FormatName
	for i := range c.Events {
		e := &c.Events[i]
		if e.VC.IsZero() {
			e.VC = VC{}
		}
		if len(e.Data) == 0 {
			e.Data = nil
		}
		if len(e.State) == 0 {
			e.State = nil
		}
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		for _, vc := range []bool{false, true} {
			tr := txRandomTrace(seed, 1+int(seed%7), 300, vc)
			b := txWrite(t, tr)
			got, err := Read(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("seed %d: Read: %v", seed, err)
			}
			if !reflect.DeepEqual(txNormalize(got), txNormalize(tr)) {
				t.Fatalf("seed %d vc=%v: round trip changed the trace", seed, vc)
			}
			if again := txWrite(t, got); !bytes.Equal(again, b) {
				t.Fatalf("seed %d: second Write differs from the first", seed)
			}
		}
	}
}

func TestRoundTripStrings(t *testing.T) {
	tr := &Trace{Header: Header{Format: FormatName, Nodes: 2, Family: "fam \"q\" \n", Algo: "a\xffb"}}
	for i, s := range txNasty {
		tr.Events = append(tr.Events, Event{
			Index: i, Time: int64(i), Node: int32(i % 2), Kind: Output, Peer: -1,
			Type: s, Label: s + "!", Reason: "r" + s,
			Data: json.RawMessage(`{"s":"x"}`),
		})
	}
	b := txWrite(t, tr)
	if !utf8.Valid(b) {
		t.Errorf("Write produced invalid UTF-8")
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("line %d is not valid JSON: %q", n+1, line)
		}
	}
	got, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if got.Header.Family != tr.Header.Family || got.Header.Algo != txValidUTF8(tr.Header.Algo) {
		t.Errorf("header strings: got %q %q", got.Header.Family, got.Header.Algo)
	}
	for i, s := range txNasty {
		e := got.Events[i]
		want := txValidUTF8(s)
		if e.Type != want || e.Label != want+"!" || e.Reason != "r"+want {
			t.Errorf("string %q: read back type=%q label=%q reason=%q", s, e.Type, e.Label, e.Reason)
		}
	}
}

// TestCanonicalEncoding checks AppendJSON against encoding/json: decoding
// the canonical form with encoding/json and re-encoding it gives the same
// bytes, and for plain strings encoding/json's own encoding is identical.
func TestCanonicalEncoding(t *testing.T) {
	var events []Event
	for seed := range uint64(5) {
		events = append(events, txRandomTrace(seed, 4, 100, seed%2 == 0).Events...)
	}
	for i, s := range txNasty {
		events = append(events, Event{Index: i, Time: -5, Node: 1, Kind: Recv, Local: -7, Lamport: 1<<64 - 1,
			VC: DenseVC([]uint64{0, 1<<64 - 1}), Msg: 1<<64 - 1, Peer: 0, Type: s, Label: s, Reason: s,
			Data: json.RawMessage(`[1,"two",{"three":null}]`)})
	}
	plain := regexp.MustCompile("^[^\x00-\x1f\x7f<>&\u2028\u2029]*$")
	for _, e := range events {
		canon := e.AppendJSON(nil)
		if !json.Valid(canon) || !utf8.Valid(canon) {
			t.Fatalf("invalid JSON for %v: %q", &e, canon)
		}
		var back Event
		if err := json.Unmarshal(canon, &back); err != nil {
			t.Fatalf("encoding/json cannot decode %q: %v", canon, err)
		}
		again := back.AppendJSON(nil)
		if valid := utf8.ValidString(e.Type + e.Label + e.Reason); valid && !bytes.Equal(again, canon) {
			t.Fatalf("decode and re-encode changed the bytes:\n%s\n%s", canon, again)
		} else if !valid {
			// Invalid UTF-8 is replaced on the first encoding; from then on
			// the encoding is a fixed point.
			var third Event
			if err := json.Unmarshal(again, &third); err != nil {
				t.Fatal(err)
			}
			if b := third.AppendJSON(nil); !bytes.Equal(b, again) {
				t.Fatalf("decode and re-encode changed the bytes:\n%s\n%s", again, b)
			}
		}

		// Same value as encoding/json's encoding of the event.
		std, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(canon, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(std, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical and encoding/json encodings differ in value:\n%s\n%s", canon, std)
		}
		if plain.MatchString(e.Type+e.Label+e.Reason) && utf8.ValidString(e.Type+e.Label+e.Reason) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&e); err != nil {
				t.Fatal(err)
			}
			if got := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, canon) {
				t.Fatalf("canonical encoding differs from encoding/json:\n%s\n%s", canon, got)
			}
		}
	}
}

func TestHasherMatchesWrite(t *testing.T) {
	tr := txRandomTrace(7, 3, 200, true)
	h := NewHasher(tr.Header)
	var buf bytes.Buffer
	w := NewWriter(&buf, tr.Header)
	rec := &Recorder{}
	sink := Tee(nil, h, w, rec)
	for i := range tr.Events {
		sink.Record(&tr.Events[i])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(buf.Bytes()); h.Sum() != hex.EncodeToString(sum[:]) {
		t.Errorf("Hasher and Writer disagree")
	}
	if !bytes.Equal(buf.Bytes(), txWrite(t, tr)) {
		t.Errorf("Writer and Write disagree")
	}
	if !reflect.DeepEqual(rec.Trace.Events, tr.Events) {
		t.Errorf("Recorder lost events")
	}
	if Tee() != nil || Tee(nil, nil) != nil || Tee(rec) != Sink(rec) {
		t.Errorf("Tee of fewer than two sinks")
	}
}

type txFailWriter struct{ n int }

func (w *txFailWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	tr := txRandomTrace(1, 3, 3000, true)
	if err := Write(&txFailWriter{n: 100000}, tr); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write to a failing writer: %v", err)
	}
}

func TestReadAcceptsBlankLinesAndCRLF(t *testing.T) {
	in := "{\"format\":\"cohort-trace/1\",\"nodes\":2,\"seed\":9}\r\n" +
		"\r\n" +
		"  {\"i\":0,\"t\":0,\"node\":1,\"kind\":\"start\",\"local\":0,\"lamport\":1,\"peer\":-1}  \r\n" +
		"\n" +
		"{\"i\":1,\"t\":5,\"node\":0,\"kind\":\"send\",\"local\":5,\"lamport\":1,\"msg\":3,\"peer\":1,\"type\":\"PING\"}"
	tr, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Seed != 9 || len(tr.Events) != 2 || tr.Events[1].Msg != 3 || tr.Events[0].Peer != -1 {
		t.Errorf("got %+v", tr)
	}
}

func TestReadRejects(t *testing.T) {
	const hdr = `{"format":"cohort-trace/1","nodes":2,"seed":1}` + "\n"
	const ev0 = `{"i":0,"t":10,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1}` + "\n"
	tests := []struct {
		name, in string
		line     int
		want     string
	}{
		{"empty", "", 0, "empty input"},
		{"header not JSON", "cohort-trace/1\n", 1, "line 1"},
		{"wrong format", `{"format":"cohort-trace/2","nodes":2,"seed":1}` + "\n", 1, `format "cohort-trace/2"`},
		{"no format", `{"nodes":2,"seed":1}` + "\n", 1, "format"},
		{"no nodes", `{"format":"cohort-trace/1","seed":1}` + "\n", 1, "nodes = 0"},
		{"negative nodes", `{"format":"cohort-trace/1","nodes":-3,"seed":1}` + "\n", 1, "nodes = -3"},
		{"header unknown field", `{"format":"cohort-trace/1","nodes":2,"seed":1,"color":"red"}` + "\n", 1, `unknown field "color"`},
		{"event as header", ev0, 1, "unknown field"},
		{"first index", hdr + `{"i":1,"t":10,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1}`, 2, "index 1, want 0"},
		{"index out of order", hdr + ev0 + `{"i":2,"t":10,"node":0,"kind":"timer","local":0,"lamport":2,"peer":-1}`, 3, "index 2, want 1"},
		{"index repeated", hdr + ev0 + ev0, 3, "index 0, want 1"},
		{"node out of range", hdr + `{"i":0,"t":10,"node":2,"kind":"start","local":0,"lamport":1,"peer":-1}`, 2, "node 2 out of range 0..1"},
		{"negative node", hdr + `{"i":0,"t":10,"node":-1,"kind":"start","local":0,"lamport":1,"peer":-1}`, 2, "node -1 out of range"},
		{"peer out of range", hdr + `{"i":0,"t":10,"node":0,"kind":"send","local":0,"lamport":1,"msg":1,"peer":5}`, 2, "peer 5 out of range"},
		{"unknown kind", hdr + `{"i":0,"t":10,"node":0,"kind":"teleport","local":0,"lamport":1,"peer":-1}`, 2, `unknown event kind "teleport"`},
		{"kind as number", hdr + `{"i":0,"t":10,"node":0,"kind":1,"local":0,"lamport":1,"peer":-1}`, 2, "event kind"},
		{"missing kind", hdr + `{"i":0,"t":10,"node":0,"local":0,"lamport":1,"peer":-1}`, 2, `missing field "kind"`},
		{"vc too short", hdr + `{"i":0,"t":10,"node":0,"kind":"start","local":0,"lamport":1,"vc":[1],"peer":-1}`, 2, "vector timestamp has 1 entries, want 2"},
		{"vc too long", hdr + `{"i":0,"t":10,"node":0,"kind":"start","local":0,"lamport":1,"vc":[1,0,0],"peer":-1}`, 2, "vector timestamp has 3 entries, want 2"},
		{"time goes back", hdr + ev0 + "\n" + `{"i":1,"t":9,"node":1,"kind":"start","local":0,"lamport":1,"peer":-1}`, 4, "time 9 goes back from 10"},
		{"unknown field", hdr + `{"i":0,"t":10,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1,"color":"red"}`, 2, `unknown field "color"`},
		{"send without msg", hdr + `{"i":0,"t":10,"node":0,"kind":"send","local":0,"lamport":1,"peer":1}`, 2, "send event without a message id"},
		{"recv without peer", hdr + `{"i":0,"t":10,"node":0,"kind":"recv","local":0,"lamport":1,"msg":4}`, 2, "recv event without a peer"},
		{"drop without msg", hdr + `{"i":0,"t":10,"node":0,"kind":"drop","local":0,"lamport":0,"peer":1}`, 2, "drop event without a message id"},
		{"wrong type", hdr + `{"i":0,"t":"10","node":0,"kind":"start","local":0,"lamport":1,"peer":-1}`, 2, "line 2"},
		{"fractional time", hdr + `{"i":0,"t":1.5,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1}`, 2, "line 2"},
		{"negative lamport", hdr + `{"i":0,"t":1,"node":0,"kind":"start","local":0,"lamport":-1,"peer":-1}`, 2, "line 2"},
		{"truncated", hdr + `{"i":0,"t":10,"node":0,"kind":"sta`, 2, "line 2"},
		{"trailing data", hdr + ev0[:len(ev0)-1] + ` {"i":1}`, 2, "trailing data"},
		{"not an object", hdr + `[1,2,3]`, 2, "line 2"},
		{"bad data", hdr + `{"i":0,"t":10,"node":0,"kind":"input","local":0,"lamport":1,"peer":-1,"data":{"a":}}`, 2, "line 2"},
		{"blank lines count", hdr + "\n\n" + `{"i":0,"t":10,"node":9,"kind":"start","local":0,"lamport":1,"peer":-1}`, 4, "node 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("Read accepted %q: %+v", tc.in, tr)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", err)
			}
			if tc.line > 0 && !regexp.MustCompile(fmt.Sprintf(`\bline %d\b`, tc.line)).MatchString(err.Error()) {
				t.Errorf("error %q does not name line %d", err, tc.line)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestReadLineTooLong(t *testing.T) {
	const hdr = `{"format":"cohort-trace/1","nodes":2,"seed":1}` + "\n"
	long := `{"i":0,"t":10,"node":0,"kind":"output","local":0,"lamport":1,"peer":-1,"label":"` +
		strings.Repeat("x", MaxLine) + `"}` + "\n"
	_, err := Read(strings.NewReader(hdr + long))
	if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "line 2:") {
		t.Errorf("over-long line: %v", err)
	}
}

func TestKindNames(t *testing.T) {
	for k := Send; k <= Start; k++ {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
		b, _ := json.Marshal(k)
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("JSON round trip of %v: %v, %v", k, back, err)
		}
		if k.IsProcess() == (k == Drop || k == Dup) {
			t.Errorf("%v.IsProcess() = %v", k, k.IsProcess())
		}
	}
	if Kind(0).String() != "kind(0)" || Kind(42).String() != "kind(42)" {
		t.Errorf("unknown kinds: %s %s", Kind(0), Kind(42))
	}
	for _, s := range []string{"", "kind(0)", "Send", "crashed"} {
		if _, err := ParseKind(s); err == nil {
			t.Errorf("ParseKind(%q) succeeded", s)
		}
	}
}

func TestEventString(t *testing.T) {
	e := Event{Index: 12, Time: 3e6, Node: 2, Kind: Recv, Lamport: 7, VC: DenseVC([]uint64{2, 3, 0}), Msg: 5, Peer: 1, Type: "REQ", Label: "REQ(ts=4,p1)"}
	if got, want := e.String(), "#12 t=3.000ms p2 recv REQ(ts=4,p1) from p1 msg=5 L=7 VC=[2,3,0]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	d := Event{Index: 3, Time: 1500, Node: 0, Kind: Drop, Msg: 9, Peer: 2, Type: "ACK", Reason: "partition"}
	if got, want := d.String(), "#3 t=1.500µs p0 drop ACK from p2 msg=9 (partition)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestFormatNS(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0ns", 350: "350ns", -999: "-999ns", 1000: "1.000µs", 1500000: "1.500ms",
		-2500000: "-2.500ms", 20e9: "20.000s", 999999: "999.999µs",
	} {
		if got := FormatNS(ns); got != want {
			t.Errorf("FormatNS(%d) = %q, want %q", ns, got, want)
		}
	}
}

// TestHeaderCannotClaimMoreThanTheTraceHolds: a small trace whose header
// claims billions of processes is refused, naming the value, before any
// reader allocates for them.
func TestHeaderCannotClaimMoreThanTheTraceHolds(t *testing.T) {
	for _, nodes := range []int{math.MaxInt32, 1_000_000_000, MaxIdleNodes + 2} {
		in := fmt.Sprintf(`{"format":"cohort-trace/1","nodes":%d,"family":"clocks","algo":"lamport","seed":1}`+"\n"+
			`{"i":0,"t":0,"node":0,"kind":"start","peer":-1}`+"\n", nodes)
		_, err := Read(strings.NewReader(in))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), fmt.Sprintf("nodes = %d", nodes)) {
			t.Errorf("nodes %d: %v, want ErrFormat naming the value", nodes, err)
		}
	}
	in := fmt.Sprintf(`{"format":"cohort-trace/1","nodes":%d,"family":"clocks","algo":"lamport","seed":1}`+"\n", MaxIdleNodes)
	if _, err := Read(strings.NewReader(in)); err != nil {
		t.Errorf("%d idle processes: %v", MaxIdleNodes, err)
	}
}

// TestStateRoundTrip: a described state is kept compact, written after
// every other field, and read back to the same bytes; a trace without
// states encodes as it always did.
func TestStateRoundTrip(t *testing.T) {
	in := `{"format":"cohort-trace/1","nodes":1}
{"i":0,"t":0,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1,"state": {"state": "WANTED", "replies": ["p1"]}}
{"i":1,"t":1,"node":0,"kind":"timer","local":1,"lamport":2,"peer":-1,"type":"t"}
`
	tr, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(tr.Events[0].State), `{"state":"WANTED","replies":["p1"]}`; got != want {
		t.Errorf("state read as %s, want %s", got, want)
	}
	if tr.Events[1].State != nil {
		t.Errorf("an event without a state read with %s", tr.Events[1].State)
	}
	out := string(txWrite(t, tr))
	want := `{"format":"cohort-trace/1","nodes":1,"seed":0}
{"i":0,"t":0,"node":0,"kind":"start","local":0,"lamport":1,"peer":-1,"state":{"state":"WANTED","replies":["p1"]}}
{"i":1,"t":1,"node":0,"kind":"timer","local":1,"lamport":2,"peer":-1,"type":"t"}
`
	if out != want {
		t.Errorf("written as\n%s\nwant\n%s", out, want)
	}
}
