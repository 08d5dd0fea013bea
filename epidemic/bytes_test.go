package epidemic_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
	"github.com/cohort-go/cohort/wire"
)

// kindMeter counts the encoded bytes a run's processes send, by message
// kind, within a window of virtual time.
type kindMeter struct {
	codec    *wire.Codec
	from, to time.Duration
	bytes    map[string]int
	msgs     map[string]int
	stream   map[string]int // messages not proc.Lossy: a live host sends them on a connection
	buf      []byte
}

type meteredEnv struct {
	proc.Env
	m *kindMeter
}

func (e meteredEnv) Send(to proc.ID, msg proc.Message) {
	if now := e.Now(); now >= e.m.from && now < e.m.to {
		e.m.buf, _ = e.m.codec.Append(e.m.buf[:0], msg)
		e.m.bytes[msg.Kind()] += len(e.m.buf)
		e.m.msgs[msg.Kind()]++
		if _, lossy := msg.(proc.Lossy); !lossy {
			e.m.stream[msg.Kind()]++
		}
	}
	e.Env.Send(to, msg)
}

type metered struct {
	proc.Process
	m *kindMeter
}

func (p metered) Start(env proc.Env) { p.Process.Start(meteredEnv{env, p.m}) }
func (p metered) Receive(env proc.Env, from proc.ID, msg proc.Message) {
	p.Process.Receive(meteredEnv{env, p.m}, from, msg)
}
func (p metered) Timeout(env proc.Env, tag any) { p.Process.Timeout(meteredEnv{env, p.m}, tag) }
func (p metered) Input(env proc.Env, in proc.Input) {
	p.Process.Input(meteredEnv{env, p.m}, in)
}

// membersIdleBytes runs the members algorithm as the live benchmark does
// (n members with coordinates, each writing its address into the map,
// five 64-byte writes) and returns the bytes and messages each member
// sends per second, by kind, in a quiet window after the writes have
// spread: the payloads the codec makes, without the transport's frame
// header or the live host's service name.
func membersIdleBytes(t testing.TB, n int, period time.Duration) (bytes, msgs map[string]float64) {
	m := membersRun(t, n, period, 20*period, 120*period)
	secs := (m.to - m.from).Seconds() * float64(n)
	bytes, msgs = map[string]float64{}, map[string]float64{}
	for k, b := range m.bytes {
		bytes[k] = float64(b) / secs
		msgs[k] = float64(m.msgs[k]) / secs
	}
	return bytes, msgs
}

// membersRun runs the members algorithm as membersIdleBytes describes,
// until to, and meters what is sent from from on.
func membersRun(t testing.TB, n int, period, from, to time.Duration) *kindMeter {
	a := algorithm(t, "members", epidemic.Params{Period: period, Coordinates: true, ReapAfter: 10 * time.Minute})
	codec, err := wire.NewCodec(a.Messages)
	if err != nil {
		t.Fatal(err)
	}
	m := &kindMeter{codec: codec, from: from, to: to, bytes: map[string]int{}, msgs: map[string]int{}, stream: map[string]int{}}
	var script sim.Script
	for i := range proc.ID(n) {
		script = append(script, sim.TimedInput{At: period, Node: i, Input: epidemic.Put{Key: "cohort.addr." + strconv.Itoa(int(i)), Value: "127.0.0.1:" + strconv.Itoa(40000+int(i))}})
	}
	for k := range 5 {
		script = append(script, sim.TimedInput{At: 5 * period, Node: proc.ID(1 + k), Input: epidemic.Put{Key: "b" + strconv.Itoa(k), Value: strings.Repeat("\x00", 64)}})
	}
	s, err := sim.New(sim.Config{Nodes: n, Seed: 1, Workload: script, Deadline: m.to,
		New:     func(id proc.ID, n int) proc.Process { return metered{a.New(id, n), m} },
		Network: sim.Network{Latency: sim.Constant(100 * time.Microsecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMembersNewsNeedsNoConnection: a live host sends what is not
// proc.Lossy on a connection, which a member with lazy links first dials
// and authenticates. A write's rumors go to random members, so over
// connections n writes (each joining member writes its address) cost n·f
// dials: a thousand members in one process spent their CPU in handshakes.
// The rumors, and the checksums that open the periodic exchanges, may be
// lost (the next exchange repairs it): in a quiet cluster a member sends
// nothing that needs a connection, and while the writes spread only the
// exchanges' digests and differences do.
func TestMembersNewsNeedsNoConnection(t *testing.T) {
	const period = time.Second
	all := membersRun(t, 32, period, 0, 120*period)
	for k, c := range all.stream {
		if k != "digest" && k != "reply" {
			t.Errorf("%d %s messages need a connection: %v", c, k, all.stream)
		}
	}
	if all.msgs["update"] == 0 || all.msgs["checksum"] == 0 || all.msgs["list-checksum"] == 0 {
		t.Fatalf("no rumors or checksums sent: %v", all.msgs)
	}
	quiet := membersRun(t, 32, period, 20*period, 120*period)
	if len(quiet.stream) != 0 {
		t.Errorf("a quiet cluster sends messages that need a connection: %v", quiet.stream)
	}
}

// TestMembersIdleBytesByKind: where an idle member's bytes go. With
// coordinates on SWIM's acks the member sends no probe or echo; and once
// the maps and the member lists agree, the periodic exchanges are a
// checksum each, with no digest or list behind it — so SWIM's pings and
// acks are most of what a quiet member sends. With -v it prints the
// breakdown at the live service's 400 ms period and at memberlist's 1 s.
func TestMembersIdleBytesByKind(t *testing.T) {
	for _, period := range []time.Duration{400 * time.Millisecond, time.Second} {
		bytes, msgs := membersIdleBytes(t, 32, period)
		kinds := make([]string, 0, len(bytes))
		total := 0.0
		for k, b := range bytes {
			kinds = append(kinds, k)
			total += b
		}
		slices.SortFunc(kinds, func(a, b string) int { return int(bytes[b] - bytes[a]) })
		var lines []string
		for _, k := range kinds {
			lines = append(lines, fmt.Sprintf("%-13s %6.1f B/s %5.2f msgs/s", k, bytes[k], msgs[k]))
		}
		t.Logf("period %v, 32 members: %.0f payload bytes per member and second\n%s", period, total, strings.Join(lines, "\n"))
		if bytes["probe"]+bytes["echo"] != 0 {
			t.Errorf("period %v: probes and echoes sent: %v", period, bytes)
		}
		if bytes["ping"] == 0 || bytes["ack"] == 0 {
			t.Errorf("period %v: no pings or acks: %v", period, bytes)
		}
		if bytes["checksum"] == 0 || bytes["list-checksum"] == 0 {
			t.Errorf("period %v: no checksums: %v", period, bytes)
		}
		for _, k := range []string{"digest", "reply", "join-req", "join-ack"} {
			if bytes[k] != 0 {
				t.Errorf("period %v: %s sent in a quiet cluster, whose checksums agree: %v", period, k, bytes)
			}
		}
		if swim := bytes["ping"] + bytes["ack"]; swim < total/2 {
			t.Errorf("period %v: pings and acks %.0f of %.0f bytes: the exchanges cost more", period, swim, total)
		}
	}
}

// TestRumorsGoOutTogether: writes that reach a member together go on
// together. Twenty writes at one member at one instant go to f = ⌈ln 32⌉
// + 2 = 6 members in one Update each, not in twenty (120 Updates one by
// one before); the writes still reach every member.
func TestRumorsGoOutTogether(t *testing.T) {
	const n, writes, period = 32, 20, time.Second
	a := algorithm(t, "members", epidemic.Params{Period: period})
	codec, err := wire.NewCodec(a.Messages)
	if err != nil {
		t.Fatal(err)
	}
	at := 3*period + period/2 // between two periods: no other sends then
	m := &kindMeter{codec: codec, from: at, to: at + time.Microsecond, bytes: map[string]int{}, msgs: map[string]int{}, stream: map[string]int{}}
	var script sim.Script
	for k := range writes {
		script = append(script, sim.TimedInput{At: at, Node: 1, Input: epidemic.Put{Key: "k" + strconv.Itoa(k), Value: "v"}})
	}
	var procs []proc.Process
	s, err := sim.New(sim.Config{Nodes: n, Seed: 1, Workload: script, Deadline: 30 * period,
		New: func(id proc.ID, n int) proc.Process {
			p := a.New(id, n)
			procs = append(procs, p)
			return metered{p, m}
		},
		Network: sim.Network{Latency: sim.Constant(100 * time.Microsecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if got := m.msgs["update"]; got != 6 {
		t.Errorf("%d writes at once went out in %d Updates, want 6 (one to each of f members)", writes, got)
	}
	for i, p := range procs {
		if got := len(p.(interface{ Entries() []epidemic.Entry }).Entries()); got != writes {
			t.Errorf("member %d holds %d entries, want %d", i, got, writes)
		}
	}
}
