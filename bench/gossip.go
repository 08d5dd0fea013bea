package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/proc"
)

// GossipConfig configures a membership benchmark: Members members on
// loopback, every one but the first joining through the first, as the
// members of a memberlist or Serf cluster join a seed.
type GossipConfig struct {
	Members    int
	Period     time.Duration // SWIM's period; 0: members.DefaultPeriod
	Broadcasts int           // broadcasts timed; 0: 5
	Idle       time.Duration // the idle window whose traffic is counted; 0: 3 s
	Logger     *slog.Logger  // the members' logs; nil: errors only, to stderr
	// JoinEvery paces the joins: a member starts JoinEvery after the one
	// before it (a cluster grown at a given rate); 0: at once.
	JoinEvery time.Duration
	// Settle is a wait after the broadcasts, before the idle window:
	// a cluster just formed still sends the news of its joins for a
	// while (each a few times per member, λ·log n); 0: none.
	Settle time.Duration
	// FormOnly stops once the cluster has formed: only Formed is measured.
	FormOnly bool
	// Stagger spreads the members' periods over StaggerSlots phases
	// (epidemic.Params.Stagger) instead of lining them up.
	Stagger bool
	// InProc puts the members on one in-process network (transport.InProc:
	// the TCP transport's semantics without sockets) instead of a TCP
	// transport each — for memberships whose mesh of connections a machine
	// cannot hold (n members open up to n(n−1)/2 pairs, twice the file
	// descriptors in one process). Joins still go through the first member.
	InProc bool
	// LinkIdle, on TCP transports, makes their links lazy: a member is
	// dialed when there is something to send it, and a connection idle
	// for LinkIdle is closed (transport.Config.LinkIdle). 0: every pair
	// of members that learnt of each other holds a connection.
	LinkIdle time.Duration
	// MaxLinks, with LinkIdle, bounds the connections each member holds
	// at once (transport.Config.MaxLinks): a process of n members then
	// holds at most n·MaxLinks descriptors for them, plus those in their
	// handshake. 0: no bound.
	MaxLinks int
	// Datagrams, on TCP transports, sends SWIM's probes as authenticated
	// UDP datagrams (transport.Config.Datagrams) instead of on the links.
	Datagrams bool
}

// GossipResult is what a membership benchmark measured.
type GossipResult struct {
	Members int `json:"members"`
	// Formed: from the first join to every member listing every other
	// (alive, or suspected: on a loaded machine a member is suspected
	// now and then, and refutes it).
	Formed time.Duration `json:"formed_ns"`
	// Started: from the first member's start until the last had started
	// (and sent its join), within Formed.
	Started time.Duration `json:"started_ns"`
	// Broadcast: from a 64-byte write at one member until every member
	// has it, median of the broadcasts.
	Broadcast time.Duration   `json:"broadcast_ns"`
	All       []time.Duration `json:"broadcasts_ns"`
	// Detected: from a member's crash (stopped without a word) until
	// every other holds it dead.
	Detected time.Duration `json:"detected_ns"`
	// Per member and second, in the idle window: messages and bytes sent
	// — every byte written to the connections and datagram sockets: data
	// frames with their headers, the transport's acks, pings and
	// keepalives, handshakes — and the writes that carried them (data
	// frames, and writes that carried no data).
	MessagesPerSecond float64 `json:"messages_per_member_per_s"`
	BytesPerSecond    float64 `json:"bytes_per_member_per_s"`
	// CPUPerSecond: the process's CPU time (user and system) in the idle
	// window, per member and second of the window — the members share
	// the process, so this is what one member costs.
	CPUPerSecond time.Duration `json:"cpu_per_member_per_s_ns"`
	// FormCPU: the process's CPU time (user and system) from the first
	// start until the cluster formed, per member.
	FormCPU time.Duration `json:"form_cpu_per_member_ns"`
	// Suspicions and FalseDead: the times a member came to suspect,
	// or declared dead, a member that had not failed — every verdict
	// from the first start until the crash, when nobody has failed —
	// and IdleSuspicions those of the idle window.
	Suspicions     int64 `json:"suspicions"`
	FalseDead      int64 `json:"false_dead"`
	IdleSuspicions int64 `json:"idle_suspicions"`
	// Suspected and Dead: the distinct members that had not failed and
	// that some member suspected, or declared dead, in the same span —
	// how many were wronged, however many times and by however many.
	Suspected int `json:"suspected_members"`
	Dead      int `json:"dead_members"`
	// Why, in the same span: the suspicions by a member whose transport
	// did not know the suspect's address (its pings could not leave), by
	// one the suspect did not know (the answers could not come back,
	// beyond what a datagram's source tells), and the rest (both known:
	// pings or acks late or lost).
	Unaddressed int64 `json:"suspicions_unaddressed"`
	Unknown     int64 `json:"suspicions_unknown_back"`
	Addressed   int64 `json:"suspicions_addressed"`
	// PeakQueued: the longest inbox of a member seen while the cluster
	// formed (sampled as it is polled); Dropped: the messages the members
	// could not send (no address, a full queue), from the start to the
	// crash.
	PeakQueued int64 `json:"peak_queued"`
	Dropped    int64 `json:"dropped"`
	// FDs: the process's open file descriptors, the most seen while the
	// cluster formed (sampled as it is polled) and at the end of the idle
	// window; Links: the connections per member then (TCP; each is two
	// descriptors in this process, one at each end). 0 where unknown.
	PeakFDs int     `json:"peak_fds"`
	IdleFDs int     `json:"idle_fds"`
	Links   float64 `json:"links_per_member"`
}

// gossipSecret authenticates the benchmark's members to one another.
var gossipSecret = []byte("cohort gossip benchmark secret!!")

type gossipMember struct {
	id   proc.ID
	node *live.Node
	srv  *members.Server
	tr   transport.Transport
}

// Gossip runs Cohort's membership service (package members) with
// cfg.Members members in this process, each on its own TCP transport on
// loopback, and measures it.
func Gossip(ctx context.Context, cfg GossipConfig) (GossipResult, error) {
	if cfg.Members < 3 {
		return GossipResult{}, fmt.Errorf("members %d: want at least 3", cfg.Members)
	}
	if cfg.Broadcasts == 0 {
		cfg.Broadcasts = 5
	}
	if cfg.Idle == 0 {
		cfg.Idle = 3 * time.Second
	}
	params := epidemic.Params{Period: cfg.Period, Stagger: cfg.Stagger}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	res := GossipResult{Members: cfg.Members}
	var ms []*gossipMember
	defer func() {
		// At once: each Close flushes for up to its CloseTimeout, and a
		// thousand one after another would take minutes.
		var wg sync.WaitGroup
		for _, m := range ms {
			if m.node != nil {
				wg.Go(func() { m.node.Close() })
			}
		}
		wg.Wait()
	}()
	var seed string
	var inproc *transport.Network
	if cfg.InProc {
		var err error
		if inproc, err = transport.NewInProc(cfg.Members, transport.InProcConfig{}); err != nil {
			return res, err
		}
	}
	var msMu sync.Mutex // ms grows while the first members already judge
	memberAt := func(i int) *gossipMember {
		msMu.Lock()
		defer msMu.Unlock()
		if i < 0 || i >= len(ms) {
			return nil
		}
		return ms[i]
	}
	var suspicions, deaths atomic.Int64
	var unaddressed, unknown atomic.Int64
	var accused wronged
	verdicts := func(by *gossipMember, e members.Event) {
		switch e.Type {
		case "suspect":
			suspicions.Add(1)
			if e.Member != nil {
				if _, ok := by.node.MemberAddr(proc.ID(*e.Member)); !ok {
					unaddressed.Add(1)
				} else if t := memberAt(*e.Member); t != nil {
					if _, ok := t.node.MemberAddr(by.id); !ok {
						unknown.Add(1)
					}
				}
			}
		case "dead":
			deaths.Add(1)
		default:
			return
		}
		if e.Member != nil {
			accused.add(e.Type == "dead", strconv.Itoa(*e.Member))
		}
	}
	tally := func() {
		res.Suspicions, res.FalseDead = suspicions.Load(), deaths.Load()
		res.Suspected, res.Dead = accused.counts()
		res.Unaddressed, res.Unknown = unaddressed.Load(), unknown.Load()
		res.Addressed = res.Suspicions - res.Unaddressed - res.Unknown
		msMu.Lock()
		defer msMu.Unlock()
		res.Dropped = 0
		for _, m := range ms {
			res.Dropped += m.srv.Stats().Dropped
		}
	}
	var cancels []func()
	stopCounting := func() {
		for _, c := range cancels {
			c()
		}
		cancels = nil
	}
	defer stopCounting()
	start, cpu0 := time.Now(), processCPU()
	for i := range cfg.Members {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if i > 0 && cfg.JoinEvery > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * cfg.JoinEvery)))
		}
		contact := proc.None
		if i > 0 {
			contact = 0
		}
		var tr transport.Transport
		if inproc != nil {
			ep, err := inproc.Endpoint(proc.ID(i))
			if err != nil {
				return res, err
			}
			tr = ep
		} else {
			var ln net.Listener
			var pc net.PacketConn
			var err error
			if cfg.Datagrams {
				ln, pc, err = transport.ListenBoth("127.0.0.1:0")
			} else {
				ln, err = net.Listen("tcp", "127.0.0.1:0")
			}
			if err != nil {
				return res, err
			}
			peers := map[proc.ID]string{}
			if i > 0 {
				peers[0] = seed
			} else {
				seed = ln.Addr().String()
			}
			t, err := transport.NewTCP(transport.Config{Self: proc.ID(i), Listener: ln, Peers: peers, Secret: gossipSecret, Joins: true, LinkIdle: cfg.LinkIdle, MaxLinks: cfg.MaxLinks,
				Datagrams: cfg.Datagrams, DatagramConn: pc, Logger: log})
			if err != nil {
				return res, err
			}
			tr = t
		}
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: 1, IDs: 1 << 16, Transport: tr, Logger: log})
		if err != nil {
			return res, err
		}
		if err := node.Start(); err != nil {
			node.Close()
			return res, err
		}
		srv, err := members.NewServer(members.Config{Node: node, Params: params, Contact: contact, Logger: log})
		if err != nil {
			node.Close()
			return res, err
		}
		m := &gossipMember{id: proc.ID(i), node: node, srv: srv, tr: tr}
		msMu.Lock()
		ms = append(ms, m)
		msMu.Unlock()
		cancels = append(cancels, srv.Subscribe(func(e members.Event) { verdicts(m, e) }))
	}
	res.Started = time.Since(start)
	// Formed: every member lists every other. The members found complete
	// are not asked again until the last is, then all are asked once more
	// (a member may have lost one meanwhile): asking each of 1,000
	// members for its list of 1,000 every few milliseconds would cost more
	// than the members do.
	poll := 5 * time.Millisecond * time.Duration(max(1, cfg.Members/64))
	var sampled time.Time
	for next := 0; ; {
		if err := ctx.Err(); err != nil {
			tally()
			return res, fmt.Errorf("not formed: member %d does not list every other: %w", next, err)
		}
		res.PeakFDs = max(res.PeakFDs, openFDs())
		if time.Since(sampled) >= time.Second {
			sampled = time.Now()
			for _, m := range ms {
				res.PeakQueued = max(res.PeakQueued, m.srv.Stats().Queued)
			}
		}
		if next = formedFrom(ctx, ms, next); next == len(ms) {
			if next = formedFrom(ctx, ms, 0); next == len(ms) {
				break
			}
		}
		time.Sleep(poll)
	}
	res.Formed = time.Since(start)
	res.FormCPU = (processCPU() - cpu0) / time.Duration(cfg.Members)
	if cfg.FormOnly {
		tally()
		return res, nil
	}

	// Broadcasts: a write at member 1 + k, timed until all have it.
	for k := range cfg.Broadcasts {
		key := "b" + strconv.Itoa(k)
		d, err := timeUntilAll(ctx, ms, func(e members.Event) bool { return e.Type == "put" && e.Key == key }, func() error {
			_, err := ms[1+k%(len(ms)-1)].srv.Put(key, string(make([]byte, 64)))
			return err
		})
		if err != nil {
			return res, err
		}
		res.All = append(res.All, d)
	}
	res.Broadcast = median(res.All)

	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(cfg.Settle):
	}
	// Idle traffic and CPU.
	before, cpu, idleSusp := sent(ms), processCPU(), suspicions.Load()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(cfg.Idle):
	}
	after := sent(ms)
	res.IdleFDs, res.Links = openFDs(), links(ms)
	stopCounting()
	tally()
	res.IdleSuspicions = res.Suspicions - idleSusp
	secs := cfg.Idle.Seconds() * float64(len(ms))
	res.MessagesPerSecond = float64(after[0]-before[0]) / secs
	res.BytesPerSecond = float64(after[1]-before[1]) / secs
	res.CPUPerSecond = time.Duration(float64(processCPU()-cpu) / secs)

	// A crash: the last member stops without a word.
	victim := ms[len(ms)-1]
	rest := ms[:len(ms)-1]
	d, err := timeUntilAll(ctx, rest, func(e members.Event) bool {
		return e.Type == "dead" && e.Member != nil && proc.ID(*e.Member) == victim.id
	}, func() error {
		victim.node.Close()
		victim.node = nil
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Detected = d
	return res, nil
}

// wronged collects the distinct members suspected, and declared dead, by
// anyone. Safe for concurrent use.
type wronged struct {
	mu              sync.Mutex
	suspected, dead map[string]bool
}

func (w *wronged) add(dead bool, member string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.suspected == nil {
		w.suspected, w.dead = map[string]bool{}, map[string]bool{}
	}
	if dead {
		w.dead[member] = true
	} else {
		w.suspected[member] = true
	}
}

func (w *wronged) counts() (suspected, dead int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.suspected), len(w.dead)
}

// formedFrom is the first member of ms from i on that does not list
// every member alive (or suspected: on a loaded machine a member is
// suspected now and then, and refutes it), or len(ms). It stops asking
// once ctx ends: a starved member answers a list only behind its inbox.
func formedFrom(ctx context.Context, ms []*gossipMember, i int) int {
	for ; i < len(ms); i++ {
		if ctx.Err() != nil {
			return i
		}
		list, err := ms[i].srv.Members()
		if err != nil || len(list) != len(ms) {
			return i
		}
		for _, x := range list {
			if x.State != "alive" && x.State != "suspect" {
				return i
			}
		}
	}
	return i
}

// timeUntilAll runs act and returns the time until every member of ms has
// observed an event that match accepts.
func timeUntilAll(ctx context.Context, ms []*gossipMember, match func(members.Event) bool, act func() error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var mu sync.Mutex
	left := len(ms)
	var last time.Time
	all := make(chan struct{})
	for _, m := range ms {
		seen := false
		cancel := m.srv.Subscribe(func(e members.Event) {
			if seen || !match(e) {
				return
			}
			seen = true
			mu.Lock()
			defer mu.Unlock()
			last = time.Now()
			if left--; left == 0 {
				close(all)
			}
		})
		defer cancel()
	}
	start := time.Now()
	if err := act(); err != nil {
		return 0, err
	}
	select {
	case <-all:
		mu.Lock()
		defer mu.Unlock()
		return last.Sub(start), nil
	case <-ctx.Done():
		return 0, errors.New("not every member saw it within a minute")
	}
}

// openFDs is the number of file descriptors this process has open (0
// where /proc does not tell).
func openFDs() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(fds)
}

// fdLimits is the process's limit on open descriptors (RLIMIT_NOFILE),
// soft and hard.
func fdLimits() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	err = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Cur, l.Max, err
}

// links is the connections per member (each counted at both ends).
func links(ms []*gossipMember) float64 {
	n := 0
	for _, m := range ms {
		if m.node == nil {
			continue
		}
		for _, p := range m.tr.Stats().Peers {
			if p.Connected {
				n++
			}
		}
	}
	return float64(n) / float64(len(ms))
}

// sent is the frames and datagrams, and their bytes, every member has
// sent so far.
func sent(ms []*gossipMember) [2]uint64 {
	var t [2]uint64
	for _, m := range ms {
		if m.node == nil {
			continue
		}
		st := m.tr.Stats()
		for _, p := range st.Peers {
			t[0] += p.Sent + p.ControlWrites
			t[1] += p.SentBytes + p.ControlBytes
		}
		t[1] += st.HandshakeBytes
		t[0] += st.Datagrams.Sent
		t[1] += st.Datagrams.SentBytes
	}
	return t
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
