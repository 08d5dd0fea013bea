package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/proc"
)

// The group benchmark measures totally ordered multicast on a cluster of
// GroupNodes live nodes in this process, connected by the TCP transport on
// loopback with the wire codec, through the Go API (group.Group). Every
// node multicasts in a closed loop, keeping Window of its own messages in
// flight (multicast and not yet delivered back to itself). Measured per
// algorithm and window:
//
//   - throughput: messages delivered at every member, per second;
//   - latency: from the Multicast call to the delivery at the last member,
//     p50 and p99;
//   - CPU: the process's CPU time (user and system, all five nodes and the
//     benchmark's own bookkeeping) per message delivered at every member,
//     and the heap allocations (count and bytes) per such message.
//
// With Rate set, the senders together offer Rate messages per second
// (open loop, spread evenly over the nodes), still within the window: a
// send due while a node's window is full is not made (counted as
// missed), so the latencies are those of the load offered, not of a
// queue that grows without bound.

// GroupNodes is the size of the benchmark's cluster.
const GroupNodes = 5

// stallAfter is how long past its Duration a run waits for a first
// message to reach every member before it calls the group stalled.
const stallAfter = 10 * time.Second

// GroupConfig configures RunGroup.
type GroupConfig struct {
	Algorithms []proc.Algorithm
	Windows    []int         // messages in flight per sender, one configuration each
	Duration   time.Duration // the measuring window; longer if no message has reached every member by its end
	Size       int           // payload bytes; default 64
	Rate       float64       // messages per second offered by all the senders together; 0: as many as the window allows
	Stages     bool          // the replicated group: follow each message through the log's stages (see StagePoint)
	Logger     *slog.Logger
	Progress   io.Writer
}

// GroupPoint is one algorithm's figures at one window.
type GroupPoint struct {
	Algorithm    string       `json:"algorithm"`
	Window       int          `json:"window"`
	Rate         float64      `json:"rate,omitempty"`   // offered, messages per second (0: closed loop)
	Missed       int          `json:"missed,omitempty"` // sends due at Rate while the window was full, not made
	Delivered    int          `json:"delivered"`        // messages delivered at every member
	PerSecond    float64      `json:"per_second"`       // of those
	LatencyP50Ms float64      `json:"latency_p50_ms"`   // multicast to the last member's delivery
	LatencyP99Ms float64      `json:"latency_p99_ms"`
	CPUPerMsgUs  float64      `json:"cpu_per_msg_us,omitempty"` // process CPU per message delivered at every member
	AllocsPerMsg float64      `json:"allocs_per_msg,omitempty"` // heap allocations in the process, per message
	BytesPerMsg  float64      `json:"bytes_per_msg,omitempty"`  // bytes allocated in the process, per message
	Stages       []StagePoint `json:"stages,omitempty"`         // with GroupConfig.Stages: where the latency goes
	// StagesLeftOut counts the measured messages in no stage: each one's
	// log index was appended by more than one leader (an election
	// meanwhile), whose times cannot be told apart.
	StagesLeftOut int `json:"stages_left_out,omitempty"`
}

// RunGroup runs every algorithm at every window, one after the other, each
// on a fresh cluster.
func RunGroup(ctx context.Context, cfg GroupConfig) ([]GroupPoint, error) {
	if cfg.Size == 0 {
		cfg.Size = 64
	}
	switch {
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("duration %v: want more than 0", cfg.Duration)
	case cfg.Size < 0 || cfg.Size > group.MaxBody:
		return nil, fmt.Errorf("size %d: want 0 to %d bytes", cfg.Size, group.MaxBody)
	case len(cfg.Algorithms) == 0 || len(cfg.Windows) == 0:
		return nil, errors.New("no algorithm or no window")
	case cfg.Rate < 0:
		return nil, fmt.Errorf("rate %v: want 0 (closed loop) or more", cfg.Rate)
	}
	var out []GroupPoint
	for _, a := range cfg.Algorithms {
		for _, w := range cfg.Windows {
			if w < 1 {
				return out, fmt.Errorf("window %d: want at least 1", w)
			}
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "%s: window %d for %v\n", a.Name, w, cfg.Duration)
			}
			p, err := runGroupOnce(ctx, cfg, a, w)
			if err != nil {
				return out, fmt.Errorf("%s, window %d: %w", a.Name, w, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func runGroupOnce(ctx context.Context, cfg GroupConfig, a proc.Algorithm, window int) (GroupPoint, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	trs, err := loopbackTransports(GroupNodes, secret, log)
	if err != nil {
		return GroupPoint{}, err
	}
	var nodes []*live.Node
	var dir string
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
		if dir != "" { // once no node writes there
			os.RemoveAll(dir)
		}
	}()
	replicated := a.Family == "consensus"
	if replicated {
		if dir, err = os.MkdirTemp("", "cohort-bench-group-"); err != nil {
			return GroupPoint{}, err
		}
	}
	var groups []member
	var stages *stageRecorder
	rcfg := consensus.DefaultConfig
	if replicated && cfg.Stages {
		stages = newStageRecorder()
		rcfg.Probe = stages.probe
	}
	for i, tr := range trs {
		lc := live.Config{Self: proc.ID(i), N: GroupNodes, Transport: tr, Logger: log,
			Resolve: group.Resolver(a), InboxLen: 1 << 16}
		if replicated {
			lc.DataDir = filepath.Join(dir, fmt.Sprintf("node%d", i))
			lc.Resolve = func(service string) (proc.Algorithm, bool) { return a, service == group.ServiceName }
		}
		node, err := live.NewNode(lc)
		if err != nil {
			tr.Close()
			return GroupPoint{}, err
		}
		nodes = append(nodes, node)
		if err := node.Start(); err != nil {
			return GroupPoint{}, err
		}
		if replicated {
			r, err := group.NewReplicated(node, rcfg)
			if err != nil {
				return GroupPoint{}, err
			}
			if stages != nil && i == 0 {
				r.Service().OnOutput(stages.output)
			}
			groups = append(groups, logMember{r})
			continue
		}
		g, err := group.New(node, "bench", a)
		if err != nil {
			return GroupPoint{}, err
		}
		groups = append(groups, g)
	}

	if replicated {
		// The log needs a leader first: one message through it.
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := groups[0].(logMember).r.Multicast(wctx, "warm-up", []byte("x"))
		wcancel()
		if err != nil {
			return GroupPoint{}, fmt.Errorf("the replicated group did not start: %w", err)
		}
	}

	// Bookkeeping, one shard per origin (the senders and the members'
	// listeners would otherwise queue on one lock): when each message was
	// multicast, how many members have delivered it, and the latencies of
	// those that reached every member while measuring.
	type msg struct {
		sent  time.Time
		count int
	}
	type shard struct {
		mu        sync.Mutex
		msgs      map[uint64]msg // by the origin's number for it
		latencies []time.Duration
		complete  int
	}
	shards := make([]shard, GroupNodes)
	for i := range shards {
		shards[i].msgs = map[uint64]msg{}
	}
	var measuring atomic.Bool
	// reached is closed when the first message reaches every member
	// while measuring.
	reached := make(chan struct{})
	var reachedOnce sync.Once

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each sender's window: a slot is taken at Multicast and given back
	// when the sender delivers its own message.
	slots := make([]chan struct{}, GroupNodes)
	for i := range slots {
		slots[i] = make(chan struct{}, window)
	}
	var wg sync.WaitGroup
	errc := make(chan error, (window+1)*GroupNodes)
	for i, g := range groups {
		ds, wait := g.Deliveries(rctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range ds {
				sh := &shards[d.Origin]
				sh.mu.Lock()
				m := sh.msgs[d.Seq] // zero: delivered before Multicast returned its identity
				m.count++
				if m.count < GroupNodes {
					sh.msgs[d.Seq] = m
				} else {
					if measuring.Load() {
						sh.complete++
						reachedOnce.Do(func() { close(reached) })
						if !m.sent.IsZero() {
							now := time.Now()
							sh.latencies = append(sh.latencies, now.Sub(m.sent))
							if stages != nil {
								stages.sample(d.Origin, d.Seq, m.sent, now)
							}
						}
					}
					delete(sh.msgs, d.Seq)
				}
				sh.mu.Unlock()
				if d.Origin == proc.ID(i) {
					<-slots[i]
				}
			}
			if err := wait(); err != nil {
				errc <- fmt.Errorf("node %d's deliveries: %w", i, err)
			}
		}()
	}
	// At a rate, a pacer hands each node's senders their sends as they
	// fall due, in turn, every millisecond.
	var permits []chan struct{}
	var missed atomic.Int64
	if cfg.Rate > 0 {
		permits = make([]chan struct{}, GroupNodes)
		for i := range permits {
			permits[i] = make(chan struct{}, window)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			start, issued := time.Now(), 0
			for {
				select {
				case now := <-tick.C:
					due := int(cfg.Rate*now.Sub(start).Seconds()) - issued
					for range due {
						select {
						case permits[issued%GroupNodes] <- struct{}{}:
						default:
							missed.Add(1) // the node's window is full
						}
						issued++
					}
				case <-rctx.Done():
					return
				}
			}
		}()
	}
	body := make([]byte, cfg.Size)
	// A send returns once committed (the log) or delivered here (the
	// textbook groups): window senders per node keep the window's sends
	// under way at once, each in a loop, with a context of its own, as
	// an application's requests have (a context every sender waits on
	// would be a lock they all take).
	for i, g := range groups {
		for range window {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithCancel(rctx)
				defer cancel()
				for {
					if permits != nil {
						select {
						case <-permits[i]:
						case <-rctx.Done():
							return
						}
					}
					select {
					case slots[i] <- struct{}{}: // room: no need to watch ctx (a cheaper send)
					default:
						select {
						case slots[i] <- struct{}{}:
						case <-rctx.Done():
							return
						}
					}
					// The message is registered before it can be
					// delivered: the identity comes back only from
					// Multicast, so the time is taken just before the
					// call.
					sent := time.Now()
					id, err := g.Multicast(rctx, body)
					if err != nil {
						if rctx.Err() == nil {
							errc <- fmt.Errorf("node %d: %w", i, err)
						}
						return
					}
					sh := &shards[id.Origin]
					sh.mu.Lock()
					if m, ok := sh.msgs[id.Seq]; ok { // deliveries overtook the bookkeeping
						m.sent = sent
						sh.msgs[id.Seq] = m
					} else {
						sh.msgs[id.Seq] = msg{sent: sent}
					}
					sh.mu.Unlock()
				}
			}()
		}
	}
	// Warm up, then measure.
	warm := min(cfg.Duration/5, time.Second)
	select {
	case <-time.After(warm):
	case <-ctx.Done():
		return GroupPoint{}, ctx.Err()
	}
	measuring.Store(true)
	missed0 := missed.Load()
	start := time.Now()
	cpu0 := processCPU()
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
		return GroupPoint{}, ctx.Err()
	case err := <-errc:
		return GroupPoint{}, err
	}
	// A window no message has crossed yet is held open until one does,
	// for up to stallAfter: on a loaded machine a message's way to every
	// member can outlast a short window (a p99 of 700 ms under -race), and
	// a rate needs one. Only a group that delivers nothing everywhere for
	// that long has stalled. The rate divides by the whole window.
	select {
	case <-reached:
	case <-time.After(stallAfter):
	case <-ctx.Done():
		return GroupPoint{}, ctx.Err()
	case err := <-errc:
		return GroupPoint{}, err
	}
	measuring.Store(false)
	nmissed := missed.Load() - missed0
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&mem1)
	elapsed := time.Since(start)
	n := 0
	var lat []time.Duration
	for i := range shards {
		sh := &shards[i]
		sh.mu.Lock()
		n += sh.complete
		lat = append(lat, sh.latencies...)
		sh.mu.Unlock()
	}
	cancel()
	wg.Wait()
	if n == 0 {
		return GroupPoint{}, fmt.Errorf("no message reached every member in %v", (cfg.Duration + stallAfter).Round(time.Millisecond))
	}
	slices.Sort(lat)
	var sp []StagePoint
	var leftOut int
	if stages != nil {
		sp, leftOut = stages.figures()
	}
	return GroupPoint{Stages: sp, StagesLeftOut: leftOut, Algorithm: a.Name, Window: window, Rate: cfg.Rate, Missed: int(nmissed), Delivered: n, PerSecond: float64(n) / elapsed.Seconds(),
		LatencyP50Ms: millis(percentile(lat, 50)), LatencyP99Ms: millis(percentile(lat, 99)),
		CPUPerMsgUs:  float64(cpu.Nanoseconds()) / 1e3 / float64(n),
		AllocsPerMsg: float64(mem1.Mallocs-mem0.Mallocs) / float64(n),
		BytesPerMsg:  float64(mem1.TotalAlloc-mem0.TotalAlloc) / float64(n)}, nil
}

// processCPU is the CPU time the process has used, user and system (0
// where the platform does not say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// member is a node's side of the benchmark's group.
type member interface {
	Multicast(ctx context.Context, body []byte) (group.ID, error)
	Deliveries(ctx context.Context) (<-chan group.Delivery, func() error)
}

// logMember is a node of the replicated group service, in group "bench".
type logMember struct{ r *group.Replicated }

func (m logMember) Multicast(ctx context.Context, body []byte) (group.ID, error) {
	d, err := m.r.Multicast(ctx, "bench", body)
	return d.ID, err
}

func (m logMember) Deliveries(ctx context.Context) (<-chan group.Delivery, func() error) {
	ds, wait, err := m.r.Deliveries(ctx, "bench", 0)
	if err != nil {
		ch := make(chan group.Delivery)
		close(ch)
		return ch, func() error { return err }
	}
	return ds, wait
}
