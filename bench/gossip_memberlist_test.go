package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/members"
	"github.com/hashicorp/memberlist"
)

// The same measurements as Gossip, of hashicorp/memberlist with its LAN
// defaults (probe every 1 s, gossip every 200 ms to 3 members, push/pull
// every 30 s), members on loopback in this process, every one joining
// the first. A broadcast goes through memberlist's TransmitLimitedQueue
// (as Serf's user events do); a crash is Shutdown without Leave. With
// broadcasts < 0 it stops once the cluster has formed.
//
// Its verdicts are counted as Gossip's are, until the crash: a death at
// every member that declares it (NotifyLeave), a suspicion only at the
// member whose probe raised it (memberlist logs "Suspect X has failed";
// it tells its user nothing of suspicions learnt from others), so its
// Suspicions are fewer than Gossip's for the same wrongs — Suspected,
// the distinct members suspected, compares alike.
func memberlistGossip(ctx context.Context, n, broadcasts int, idle time.Duration) (GossipResult, error) {
	return memberlistGossipSettled(ctx, n, broadcasts, 0, idle)
}

// memberlistGossipSettled is memberlistGossip with a wait after
// the broadcasts, before the idle window (as GossipConfig.Settle).
func memberlistGossipSettled(ctx context.Context, n, broadcasts int, wait, idle time.Duration) (GossipResult, error) {
	res := GossipResult{Members: n}
	ms := make([]*mlMember, n)
	var counting atomic.Bool
	counting.Store(true)
	verdicts := &mlVerdicts{counting: &counting}
	defer func() {
		for _, m := range ms {
			if m != nil && !m.down {
				m.list.Shutdown()
			}
		}
	}()
	settle := func() {
		counting.Store(false)
		res.Suspicions, res.FalseDead = verdicts.suspicions.Load(), verdicts.deaths.Load()
		res.Suspected, res.Dead = verdicts.accused.counts()
	}
	start, cpu0 := time.Now(), processCPU()
	for i := range n {
		m, err := newMLMemberWith(i, n, verdicts, false)
		if err != nil {
			return res, err
		}
		m.verdicts = verdicts
		ms[i] = m
		if i > 0 {
			if _, err := m.list.Join([]string{ms[0].list.LocalNode().Address()}); err != nil {
				return res, err
			}
		}
	}
	for {
		least := n
		for _, m := range ms {
			least = min(least, m.list.NumMembers())
		}
		if least == n {
			break
		}
		if err := ctx.Err(); err != nil {
			settle()
			return res, fmt.Errorf("not formed: a member lists %d of %d: %w", least, n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.Formed = time.Since(start)
	res.FormCPU = (processCPU() - cpu0) / time.Duration(n)
	if broadcasts < 0 {
		settle()
		return res, nil
	}

	for k := range broadcasts {
		id := fmt.Sprintf("b%d", k)
		sender := ms[1+k%(n-1)]
		d, err := mlUntilAll(ctx, ms, sender, func(m *mlMember) *sync.Map { return &m.got }, id, func() {
			msg := make([]byte, 64)
			copy(msg, id)
			sender.queue.QueueBroadcast(mlBroadcast(msg))
		})
		if err != nil {
			settle() // what memberlist suspected meanwhile says why
			return res, err
		}
		res.All = append(res.All, d)
	}
	res.Broadcast = median(res.All)

	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(wait):
	}
	var before, after [2]uint64
	for _, m := range ms {
		before[0] += m.tr.msgs.Load()
		before[1] += m.tr.bytes.Load()
	}
	cpu, idleSusp := processCPU(), verdicts.suspicions.Load()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(idle):
	}
	settle()
	res.IdleSuspicions = res.Suspicions - idleSusp
	for _, m := range ms {
		after[0] += m.tr.msgs.Load()
		after[1] += m.tr.bytes.Load()
	}
	secs := idle.Seconds() * float64(n)
	res.MessagesPerSecond = float64(after[0]-before[0]) / secs
	res.BytesPerSecond = float64(after[1]-before[1]) / secs
	res.CPUPerSecond = time.Duration(float64(processCPU()-cpu) / secs)

	victim := ms[n-1]
	d, err := mlUntilAll(ctx, ms[:n-1], nil, func(m *mlMember) *sync.Map { return &m.left }, victim.name, func() {
		victim.down = true
		victim.list.Shutdown()
	})
	if err != nil {
		return res, err
	}
	res.Detected = d
	return res, nil
}

type mlMember struct {
	name  string
	list  *memberlist.Memberlist
	queue *memberlist.TransmitLimitedQueue
	tr    *countingTransport
	got   sync.Map // broadcast id → time received
	left  sync.Map // member name → time declared dead or left
	down  bool
	stall *stallTransport // nil: not stallable
	// verdicts counts the deaths this member declares; nil: none.
	verdicts *mlVerdicts
}

// mlVerdicts counts memberlist's verdicts while counting is set: deaths
// as members declare them (NotifyLeave), suspicions from its log.
type mlVerdicts struct {
	counting           *atomic.Bool
	suspicions, deaths atomic.Int64
	accused            wronged
}

func (v *mlVerdicts) Write(b []byte) (int, error) {
	if !v.counting.Load() {
		return len(b), nil
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m := serfLine.FindStringSubmatch(l); m != nil && m[1] == "memberlist: Suspect" {
			v.suspicions.Add(1)
			v.accused.add(false, m[2])
		}
	}
	return len(b), nil
}

func (v *mlVerdicts) dead(name string) {
	if v.counting.Load() {
		v.deaths.Add(1)
		v.accused.add(true, name)
	}
}

// mlLabel marks this test process's memberlist packets: members of
// another process on the machine (a second test run), which may be given
// a port one of these members just gave up, and have the same names,
// drop them rather than merge the two clusters.
var mlLabel = fmt.Sprintf("cohort-bench-%d-%d", os.Getpid(), time.Now().UnixNano())

func newMLMember(i, n int) (*mlMember, error) { return newMLMemberWith(i, n, io.Discard, false) }

// newMLMemberWith is newMLMember with memberlist's log written to logw,
// and, if stallable, a transport that m.stall can hold.
func newMLMemberWith(i, n int, logw io.Writer, stallable bool) (*mlMember, error) {
	m := &mlMember{name: fmt.Sprintf("m%d", i)}
	quiet := log.New(io.Discard, "", 0)
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: 0, Logger: quiet})
	if err != nil {
		return nil, err
	}
	m.tr = &countingTransport{NetTransport: nt}
	conf := memberlist.DefaultLANConfig()
	conf.Name, conf.Transport, conf.Logger = m.name, m.tr, log.New(logw, "", 0)
	conf.Label = mlLabel
	if stallable {
		m.stall = newStallTransport(m.tr)
		conf.Transport = m.stall
	}
	conf.BindAddr, conf.AdvertiseAddr = "127.0.0.1", "127.0.0.1"
	conf.AdvertisePort = nt.GetAutoBindPort()
	conf.Delegate, conf.Events = (*mlDelegate)(m), (*mlEvents)(m)
	m.queue = &memberlist.TransmitLimitedQueue{NumNodes: func() int { return n }, RetransmitMult: conf.RetransmitMult}
	if m.list, err = memberlist.Create(conf); err != nil {
		return nil, err
	}
	return m, nil
}

// mlUntilAll runs act and waits until every member of ms but skip has an
// entry key in the map field picks; the time to the last. An entry made
// before act counts as made at act: a member that already declared the
// victim dead (falsely, under load, and has not seen it alive since)
// took no time to.
func mlUntilAll(ctx context.Context, ms []*mlMember, skip *mlMember, field func(*mlMember) *sync.Map, key string, act func()) (time.Duration, error) {
	start := time.Now()
	act()
	deadline := time.Now().Add(time.Minute)
	for {
		var last time.Time
		all := true
		for _, m := range ms {
			if m == skip {
				continue
			}
			v, ok := field(m).Load(key)
			if !ok {
				all = false
				break
			}
			if t := v.(time.Time); t.After(last) {
				last = t
			}
		}
		if all {
			return max(last.Sub(start), 0), nil
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("not every member saw %s: %w", key, err)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not every member saw %s within a minute", key)
		}
		time.Sleep(time.Millisecond)
	}
}

type mlBroadcast []byte

func (b mlBroadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (b mlBroadcast) Message() []byte                       { return b }
func (b mlBroadcast) Finished()                             {}

type mlDelegate mlMember

func (d *mlDelegate) NodeMeta(int) []byte { return nil }

// NotifyMsg records a broadcast and, the first time, queues it to gossip
// on (memberlist leaves rebroadcasting to its user; Serf does this).
func (d *mlDelegate) NotifyMsg(b []byte) {
	id := string(b[:clen(b)])
	if _, seen := d.got.LoadOrStore(id, time.Now()); !seen {
		d.queue.QueueBroadcast(mlBroadcast(append([]byte(nil), b...)))
	}
}
func (d *mlDelegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.queue.GetBroadcasts(overhead, limit)
}
func (d *mlDelegate) LocalState(bool) []byte        { return nil }
func (d *mlDelegate) MergeRemoteState([]byte, bool) {}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

type mlEvents mlMember

// NotifyJoin forgets that n was dead: memberlist declares members dead
// that are merely slow (a loaded machine, during formation), and brings
// them back alive when they refute it. A death kept from then would be
// taken for the detection of the crash, minutes before it.
func (e *mlEvents) NotifyJoin(n *memberlist.Node) { e.left.Delete(n.Name) }
func (e *mlEvents) NotifyUpdate(*memberlist.Node) {}

// NotifyLeave records when n was declared dead (or left), the first time
// since it was last alive.
func (e *mlEvents) NotifyLeave(n *memberlist.Node) {
	e.left.LoadOrStore(n.Name, time.Now())
	if e.verdicts != nil {
		e.verdicts.dead(n.Name)
	}
}

// countingTransport counts what a member sends: every UDP packet and
// every stream opened as a message, and their bytes.
type countingTransport struct {
	*memberlist.NetTransport
	msgs, bytes atomic.Uint64
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.msgs.Add(1)
	t.bytes.Add(uint64(len(b)))
	return t.NetTransport.WriteTo(b, addr)
}

func (t *countingTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	t.msgs.Add(1)
	t.bytes.Add(uint64(len(b)))
	return t.NetTransport.WriteToAddress(b, addr)
}

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *countingTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.NetTransport.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	t.msgs.Add(1)
	return &countingConn{Conn: c, t: t}, nil
}

type countingConn struct {
	net.Conn
	t *countingTransport
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.t.bytes.Add(uint64(len(b)))
	return c.Conn.Write(b)
}

// TestGossipBesideMemberlist runs Cohort's membership service and
// memberlist side by side, 16 members each, and checks what both must
// do: form, carry every broadcast to every member, declare a crashed
// member dead everywhere. With -v it prints the figures; for the
// README's, run BenchmarkGossipBesideMemberlist.
//
// Cohort's are asserted whatever the machine's load. memberlist's are
// judged only where this process was scheduled in time throughout its
// run: its failure detector takes a probe unanswered within ProbeTimeout
// (500 ms) for a failure, and an answer needs two goroutines to run (the
// member probed reads the ping and acks, the prober reads the ack). Under
// CPU starvation (load 10–26 on two cores, with the race detector) its
// members declared one another dead as they formed and never all listed
// each other, or did not declare the crashed member within a minute.
// Where a goroutine of this process waited longer than half of
// ProbeTimeout to run, memberlist ran outside what it assumes: its
// result is reported as a figure (not formed within the bound, 2
// minutes; not every member saw the crash within a minute), with the
// worst wait, not failed.
func TestGossipBesideMemberlist(t *testing.T) {
	ctx := context.Background()
	c, err := Gossip(ctx, GossipConfig{Members: 16, Broadcasts: 3, Idle: time.Second})
	if err != nil {
		t.Fatalf("cohort: %v", err)
	}
	rs := []struct {
		name string
		GossipResult
	}{{"cohort", c}}
	late := watchScheduling(10 * time.Millisecond)
	mctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	m, err := memberlistGossip(mctx, 16, 3, time.Second)
	cancel()
	worst, probe := late(), memberlist.DefaultLANConfig().ProbeTimeout
	t.Logf("memberlist ran with goroutines waiting up to %v to run", worst.Round(time.Millisecond))
	switch {
	case err == nil:
		rs = append(rs, struct {
			name string
			GossipResult
		}{"memberlist", m})
	case 2*worst <= probe && m.Suspicions == 0:
		t.Fatalf("memberlist: %v (no goroutine waited longer than %v to run, within half its probe timeout %v, and it suspected no member)", err, worst.Round(time.Millisecond), probe)
	default:
		// The machine, not the harness: this process waited too long to
		// run, or memberlist's own failure detector suspected a live
		// member (a loaded machine delays its UDP probes and their acks;
		// a member others believe dead is sent no gossip).
		t.Logf("memberlist not judged: %v, with goroutines waiting up to %v to run (half its probe timeout: %v) and %d suspicions of live members", err, worst.Round(time.Millisecond), probe, m.Suspicions)
	}
	for _, r := range rs {
		t.Logf("%-10s formed %v, broadcast %v %v, crash to dead everywhere %v, idle %.1f msgs %.0f bytes per member and second",
			r.name, r.Formed.Round(time.Millisecond), r.Broadcast.Round(100*time.Microsecond), r.All, r.Detected.Round(time.Millisecond), r.MessagesPerSecond, r.BytesPerSecond)
		if r.Detected <= 0 || r.Broadcast <= 0 || r.BytesPerSecond <= 0 {
			t.Errorf("%s: %+v", r.name, r.GossipResult)
		}
	}
}

// watchScheduling ticks every period until the returned function is
// called, which returns the most any tick came late: how long a
// goroutine of this process waited to run, at worst.
func watchScheduling(period time.Duration) func() time.Duration {
	done, worst := make(chan struct{}), make(chan time.Duration)
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		var most time.Duration
		last := time.Now()
		for {
			select {
			case <-t.C:
				now := time.Now()
				most, last = max(most, now.Sub(last)-period), now
			case <-done:
				worst <- most
				return
			}
		}
	}()
	return func() time.Duration {
		close(done)
		return <-worst
	}
}

// A member memberlist declared dead before the crash — falsely, under
// load, during formation — and alive again since is not counted as
// detected at that earlier death: crash to dead everywhere was once
// negative (-10m15s at load 38, under the race detector). One still dead
// in some member's view when it crashes counts as detected there at
// once.
func TestMemberlistDeathBeforeTheCrashIsNotItsDetection(t *testing.T) {
	left := func(m *mlMember) *sync.Map { return &m.left }
	victim := &memberlist.Node{Name: "m2"}
	ms := []*mlMember{{name: "m0"}, {name: "m1"}}
	for _, m := range ms {
		(*mlEvents)(m).NotifyLeave(victim) // declared dead, falsely
		(*mlEvents)(m).NotifyJoin(victim)  // refuted: alive again
	}
	crash := time.Now()
	d, err := mlUntilAll(context.Background(), ms, nil, left, victim.Name, func() {
		for _, m := range ms {
			(*mlEvents)(m).NotifyLeave(victim)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if v, _ := m.left.Load(victim.Name); v.(time.Time).Before(crash) {
			t.Errorf("%s: the crash detected at %v, before the crash", m.name, v.(time.Time).Sub(crash))
		}
	}
	if d < 0 {
		t.Errorf("crash to dead everywhere %v, want ≥ 0", d)
	}

	// Still dead in m0's view at the crash: detected there at once.
	(*mlEvents)(ms[1]).NotifyJoin(victim)
	(*mlEvents)(ms[0]).NotifyLeave(victim)
	d, err = mlUntilAll(context.Background(), ms, nil, left, victim.Name, func() {
		(*mlEvents)(ms[1]).NotifyLeave(victim)
	})
	if err != nil || d < 0 {
		t.Errorf("with one member seeing it dead already: %v, %v; want ≥ 0", d, err)
	}
}

// TestGossipInProcess: the benchmark's members on one in-process network
// form, spread every broadcast and declare a crashed member dead, as on
// TCP; and FormOnly stops after the first of those.
func TestGossipInProcess(t *testing.T) {
	ctx := context.Background()
	r, err := Gossip(ctx, GossipConfig{Members: 12, Broadcasts: 2, Idle: 500 * time.Millisecond, InProc: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Formed <= 0 || len(r.All) != 2 || r.Detected <= 0 || r.BytesPerSecond <= 0 {
		t.Fatalf("%+v", r)
	}
	f, err := Gossip(ctx, GossipConfig{Members: 12, InProc: true, FormOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.Formed <= 0 || len(f.All) != 0 || f.Detected != 0 {
		t.Fatalf("form only: %+v", f)
	}
}

// BenchmarkGossipBesideMemberlist: 32 and 64 members, Cohort (with its
// default 400 ms period, and with memberlist's 1 s probe interval) and
// memberlist alternated in one run; the figures are reported as metrics
// (ms and bytes).
//
//	go test -run '^$' -bench GossipBesideMemberlist -benchtime 1x -count 3 ./bench
//
// gossipSizes are the memberships the side-by-side benchmarks measure:
// 32 and 64, or 4 with -short (a check that they run).
func gossipSizes() []int {
	if testing.Short() {
		return []int{4}
	}
	return []int{32, 64}
}

// gossipIdle is the idle window of the side-by-side benchmarks: a member
// list or map exchange comes every 10 periods, so a longer window than
// the default 3 s averages them out (-gossip.idle=20s).
// gossipLarge is the in-process membership BenchmarkGossipFormation
// forms beside the 64s (-gossip.large=256).
var gossipLarge = flag.Int("gossip.large", 1000, "the in-process membership BenchmarkGossipFormation also forms")

var gossipIdle = flag.Duration("gossip.idle", 3*time.Second, "the idle window whose traffic BenchmarkGossipBesideMemberlist counts")

// gossipSettle is a wait after the broadcasts, before the idle window of
// BenchmarkGossipBesideMemberlist, for both systems: a cluster just formed
// still spreads the news of its joins for a while (each a few times per
// member), and a cluster that forms sooner has more of it left when the
// window opens (-gossip.settle=20s).
var gossipSettle = flag.Duration("gossip.settle", 0, "a wait after the broadcasts, before BenchmarkGossipBesideMemberlist's idle window")

// gossipPeriods are the SWIM periods at which BenchmarkGossipBesideMemberlist
// runs Cohort beside memberlist's defaults: its own default (named
// "cohort") and memberlist's probe interval (named "cohort-1s") unless told
// otherwise (-gossip.periods=200ms,400ms,1s).
var gossipPeriods = flag.String("gossip.periods", "400ms,1s", "the SWIM periods BenchmarkGossipBesideMemberlist runs Cohort at, comma-separated")

func BenchmarkGossipBesideMemberlist(b *testing.B) {
	var whos []string
	periods := map[string]time.Duration{}
	for _, f := range strings.Split(*gossipPeriods, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			b.Fatalf("-gossip.periods: %q is not a positive duration", f)
		}
		who := "cohort-" + d.String()
		if d == members.DefaultPeriod {
			who = "cohort"
		}
		whos, periods[who] = append(whos, who), d
	}
	for _, n := range gossipSizes() {
		for _, who := range append(whos, "memberlist") {
			b.Run(fmt.Sprintf("%s/members=%d", who, n), func(b *testing.B) {
				for range b.N {
					var r GossipResult
					var err error
					if d, ok := periods[who]; ok {
						r, err = Gossip(context.Background(), GossipConfig{Members: n, Broadcasts: 5, Period: d, Settle: *gossipSettle, Idle: *gossipIdle})
					} else {
						r, err = memberlistGossipSettled(context.Background(), n, 5, *gossipSettle, *gossipIdle)
					}
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(r.Formed.Milliseconds()), "formed-ms")
					b.ReportMetric(float64(r.Broadcast.Microseconds())/1000, "broadcast-ms")
					b.ReportMetric(float64(r.Detected.Milliseconds()), "detected-ms")
					b.ReportMetric(r.BytesPerSecond, "idle-bytes/member/s")
					b.ReportMetric(r.MessagesPerSecond, "idle-msgs/member/s")
				}
			})
		}
	}
}

// gossipPeriod is SWIM's period in BenchmarkGossipLarge, and
// gossipJoinEvery the time between two members' starts there.
var (
	gossipPeriod    = flag.Duration("gossip.period", time.Second, "SWIM's period in BenchmarkGossipLarge")
	gossipJoinEvery = flag.Duration("gossip.joinevery", 0, "the time between two members' starts in BenchmarkGossipLarge")
	gossipStagger   = flag.Bool("gossip.stagger", false, "BenchmarkGossipLarge's members probe in 8 slots of the period (epidemic.Params.Stagger)")
	gossipTimeout   = flag.Duration("gossip.timeout", 15*time.Minute, "how long BenchmarkGossipLarge waits for its run before it fails")
	gossipTCP       = flag.Bool("gossip.tcp", false, "BenchmarkGossipLarge's members each on a TCP transport on loopback, instead of one in-process network")
	gossipLinkIdle  = flag.Duration("gossip.linkidle", 0, "with -gossip.tcp, lazy links closed after this idle time (transport.Config.LinkIdle); 0: a connection per pair, kept")
	gossipUDP       = flag.Bool("gossip.udp", false, "with -gossip.tcp, SWIM's probes as authenticated UDP datagrams (transport.Config.Datagrams)")
	gossipMaxLinks  = flag.Int("gossip.maxlinks", 0, "with -gossip.linkidle, the most connections each member holds at once (transport.Config.MaxLinks); 0: no bound")
	gossipML        = flag.Bool("gossip.memberlist", false, "BenchmarkGossipLarge also runs memberlist's LAN defaults at the same size, after Cohort's")
)

// BenchmarkGossipLarge: Cohort's membership service with -gossip.large
// members (1,000) on one in-process network — or, with -gossip.tcp, each
// on its own TCP transport (-gossip.linkidle: with lazy links; -gossip.udp:
// the probes as datagrams) — at SWIM's period
// -gossip.period (1 s, memberlist's probe interval): the time to form,
// a 64-byte broadcast until every member has it (median of 5), the CPU
// and bytes per member and second while idle (-gossip.idle, after 30
// periods that let the news of the joins die down), and a crash until
// every member holds it dead.
//
//	go test -run '^$' -bench GossipLarge -benchtime 1x -count 3 ./bench
func BenchmarkGossipLarge(b *testing.B) {
	n := *gossipLarge
	if testing.Short() {
		n = 16
	}
	name := fmt.Sprintf("cohort-inproc/members=%d/period=%v", n, *gossipPeriod)
	if *gossipTCP {
		name = fmt.Sprintf("cohort-tcp/members=%d/period=%v/linkidle=%v/maxlinks=%d/udp=%v", n, *gossipPeriod, *gossipLinkIdle, *gossipMaxLinks, *gossipUDP)
		// Go raises the soft limit on descriptors to the hard one at
		// start (package syscall, since Go 1.19): say what they are.
		if soft, hard, err := fdLimits(); err == nil {
			b.Logf("RLIMIT_NOFILE: soft %d, hard %d", soft, hard)
		}
	}
	b.Run(name, func(b *testing.B) {
		for range b.N {
			ctx, cancel := context.WithTimeout(context.Background(), *gossipTimeout)
			r, err := Gossip(ctx, GossipConfig{Members: n, Period: *gossipPeriod, JoinEvery: *gossipJoinEvery, Stagger: *gossipStagger, Broadcasts: 5, Settle: 30 * *gossipPeriod, Idle: *gossipIdle,
				InProc: !*gossipTCP, LinkIdle: *gossipLinkIdle, MaxLinks: *gossipMaxLinks, Datagrams: *gossipUDP})
			cancel()
			if err != nil {
				b.Logf("so far: %+v", r)
				b.Fatal(err)
			}
			reportLarge(b, r)
		}
	})
	if !*gossipML {
		return
	}
	// memberlist's settle is its own: 30 of its 1 s probe intervals.
	b.Run(fmt.Sprintf("memberlist/members=%d", n), func(b *testing.B) {
		for range b.N {
			ctx, cancel := context.WithTimeout(context.Background(), *gossipTimeout)
			r, err := memberlistGossip(ctx, n, 5, *gossipIdle)
			cancel()
			if err != nil {
				b.Logf("so far: %+v", r)
				b.Fatal(err)
			}
			reportLarge(b, r)
		}
	})
}

// reportLarge reports what BenchmarkGossipLarge measured.
func reportLarge(b *testing.B, r GossipResult) {
	b.ReportMetric(float64(r.Formed.Milliseconds()), "formed-ms")
	b.ReportMetric(float64(r.Broadcast.Microseconds())/1000, "broadcast-ms")
	b.ReportMetric(float64(r.Detected.Milliseconds()), "detected-ms")
	b.ReportMetric(float64(r.CPUPerSecond.Microseconds()), "idle-cpu-us/member/s")
	b.ReportMetric(r.BytesPerSecond, "idle-bytes/member/s")
	b.ReportMetric(r.MessagesPerSecond, "idle-msgs/member/s")
	b.ReportMetric(float64(r.FormCPU.Microseconds())/1000, "form-cpu-ms/member")
	b.ReportMetric(float64(r.Suspicions), "false-suspicions")
	b.ReportMetric(float64(r.IdleSuspicions), "idle-false-suspicions")
	b.ReportMetric(float64(r.FalseDead), "false-dead")
	b.ReportMetric(float64(r.Suspected), "suspected-members")
	b.ReportMetric(float64(r.Dead), "dead-members")
	b.ReportMetric(float64(r.Unaddressed), "suspicions-unaddressed")
	b.ReportMetric(float64(r.Unknown), "suspicions-unknown-back")
	b.ReportMetric(float64(r.PeakQueued), "peak-inbox")
	b.ReportMetric(float64(r.Dropped), "dropped")
	if r.PeakFDs > 0 {
		b.ReportMetric(float64(r.PeakFDs), "peak-fds")
		b.ReportMetric(float64(r.IdleFDs), "idle-fds")
		b.ReportMetric(r.Links, "idle-links/member")
	}
}

// BenchmarkGossipFormation: the time from the first member's start until
// every member lists every other, members started one after another and
// each joining through the first — Cohort's service on a TCP transport
// per member (every pair of members then holds a connection), the same
// on one in-process network (no sockets: what the protocol costs,
// without the kernel), and memberlist (UDP probes, a TCP push/pull per
// join); and Cohort's in-process at 1,000 members (-gossip.large), a
// mesh of TCP connections a 2-core machine does not hold in one process.
//
//	go test -run '^$' -bench GossipFormation -benchtime 1x -count 3 ./bench
func BenchmarkGossipFormation(b *testing.B) {
	type run struct {
		who string
		n   int
	}
	runs := []run{{"cohort", 64}, {"cohort-inproc", 64}, {"memberlist", 64}, {"cohort-inproc", *gossipLarge}}
	if testing.Short() {
		runs = []run{{"cohort", 4}, {"cohort-inproc", 4}, {"memberlist", 4}}
	}
	for _, r := range runs {
		b.Run(fmt.Sprintf("%s/members=%d", r.who, r.n), func(b *testing.B) {
			for range b.N {
				var res GossipResult
				var err error
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				switch r.who {
				case "cohort":
					res, err = Gossip(ctx, GossipConfig{Members: r.n, FormOnly: true})
				case "cohort-inproc":
					res, err = Gossip(ctx, GossipConfig{Members: r.n, FormOnly: true, InProc: true})
				default:
					res, err = memberlistGossip(ctx, r.n, -1, 0)
				}
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Formed.Milliseconds()), "formed-ms")
				b.ReportMetric(float64(res.Started.Milliseconds()), "started-ms")
			}
		})
	}
}
