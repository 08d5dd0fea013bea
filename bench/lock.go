package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

// The lock benchmark measures lock handoffs through Cohort's HTTP lock API
// and, in the same run and with the same workload, through etcd's:
//
//   - Cohort: LockNodes live nodes in this process, connected by the TCP
//     transport on loopback with the wire codec, each serving the lock API
//     on its own loopback HTTP server; client i talks to node i mod
//     LockNodes.
//   - etcd: a single-node etcd started for the run, driven through its v3
//     JSON gateway (lease/grant, lock/lock, lock/unlock).
//
// C clients loop on the same lock name: acquire, release at once (a hold
// of zero), repeat. The handoff latency of a grant is the time from the
// previous holder starting its release call to this holder's acquire call
// returning, both as the clients see them; with one client it is a release
// followed by a re-acquire.
//
// Beside it, without HTTP, the benchmark measures Ricart–Agrawala's
// node-to-node handoff (one node's Unlock to a waiting node's Lock
// returning) and the one-way message latency of the same TCP transport
// (half a ping-pong round trip): the floor the handoff is compared with.
// Both are measured back to back (the next message, or Unlock, as soon as
// the previous step is done) and to a node left idle for a millisecond,
// which costs the time to wake it.

// LockNodes is the size of the benchmark's Cohort cluster.
const LockNodes = 5

// EtcdPath is where Debian's etcd-server package installs etcd.
const EtcdPath = "/usr/bin/etcd"

// LockConfig configures RunLock.
type LockConfig struct {
	// Clients lists the numbers of contending clients, one configuration
	// each.
	Clients []int
	// Duration is how long each configuration runs.
	Duration time.Duration
	// Algorithm is behind Cohort's locks: the replicated lock service
	// (lock.ReplicatedAlgorithm, family consensus; its nodes keep their
	// logs in temporary directories, fsync on) or a mutex algorithm.
	Algorithm proc.Algorithm
	// Etcd is the etcd binary to compare with; "" leaves etcd out.
	Etcd string
	// Logger receives the nodes' and transports' log; nil discards it.
	Logger *slog.Logger
	// Progress, if not nil, gets a line as each measurement starts.
	Progress io.Writer
}

// LockPoint is one system's figures with one number of clients.
type LockPoint struct {
	Clients          int     `json:"clients"`
	AcquisitionsPerS float64 `json:"acquisitions_per_s"`
	HandoffP50Ms     float64 `json:"handoff_p50_ms"`
	HandoffP99Ms     float64 `json:"handoff_p99_ms"`
}

// LockRatio compares Cohort with etcd at one number of clients.
type LockRatio struct {
	Clients  int     `json:"clients"`
	AcqRatio float64 `json:"acq_ratio"` // Cohort's acquisitions/s over etcd's
}

// LockResult is the JSON contract of `cohort bench lock`. Etcd and Ratio
// are empty when etcd was left out.
type LockResult struct {
	Cohort []LockPoint `json:"cohort"`
	Etcd   []LockPoint `json:"etcd"`
	Ratio  []LockRatio `json:"ratio"`
	// On the replicated backend: the disk under the nodes' logs, measured
	// in the same run (DiskSync, one writer per node): the floor of a
	// commit. DiskSyncOneP50us is the same disk with one writer alone:
	// how much of the first is the five nodes' syncs queuing on it.
	DiskSyncP50us    float64 `json:"disk_sync_p50_us,omitempty"`
	DiskSyncOneP50us float64 `json:"disk_sync_one_p50_us,omitempty"`
	// Ricart–Agrawala's node-to-node handoff, the holder unlocking as soon
	// as the waiter waits for it alone, and the one-way latency of the
	// transport measured back to back.
	RAHandoffP50us    float64 `json:"ra_handoff_p50_us"`
	OneWayP50us       float64 `json:"one_way_p50_us"`
	HandoffOverOneWay float64 `json:"handoff_over_one_way"`
	// The same one-way latency with the receiver idle before each message
	// (1 ms apart), as a waiting node is when the lock comes to it after a
	// long critical section; HandoffOverIdleOneWay compares the handoff
	// above with it.
	OneWayIdleP50us       float64 `json:"one_way_idle_p50_us"`
	HandoffOverIdleOneWay float64 `json:"handoff_over_idle_one_way"`
	// The handoff when the holder unlocks 1 ms after the waiter started
	// waiting for it alone (the waiter idle meanwhile), over the idle
	// one-way latency: the two measured alike.
	RAIdleHandoffP50us        float64 `json:"ra_idle_handoff_p50_us"`
	IdleHandoffOverIdleOneWay float64 `json:"idle_handoff_over_idle_one_way"`
}

// Rounds of the node-to-node measurements, after a few of warm-up; those
// with a pause of idleGap before each message run fewer.
const (
	raRounds     = 1000
	oneWayRounds = 2000
	idleRounds   = 500
	warmRounds   = 20
	idleGap      = time.Millisecond
)

// RunLock runs the lock benchmark.
func RunLock(ctx context.Context, cfg LockConfig) (LockResult, error) {
	if len(cfg.Clients) == 0 || slices.Min(cfg.Clients) < 1 {
		return LockResult{}, fmt.Errorf("clients %v: want at least one configuration, each of at least 1 client", cfg.Clients)
	}
	if cfg.Duration <= 0 {
		return LockResult{}, fmt.Errorf("duration %v: want more than 0", cfg.Duration)
	}
	if cfg.Algorithm.Family != "mutex" && cfg.Algorithm.Name != "raft-lock" {
		return LockResult{}, fmt.Errorf("%s is not a mutual exclusion algorithm", cfg.Algorithm.Name)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	res := LockResult{Cohort: []LockPoint{}, Etcd: []LockPoint{}, Ratio: []LockRatio{}}

	// etcd starts first, so that a problem with it shows at once; it idles
	// while Cohort is measured, and Cohort while etcd is.
	var e *etcdServer
	if cfg.Etcd != "" {
		say("starting etcd (%s)", cfg.Etcd)
		var err error
		if e, err = startEtcd(ctx, cfg.Etcd); err != nil {
			return res, err
		}
		defer e.stop()
	}
	say("starting %d Cohort nodes (%s)", LockNodes, cfg.Algorithm.Name)
	cl, err := startLockCluster(LockNodes, cfg.Algorithm, log)
	if err != nil {
		return res, err
	}
	defer cl.close()
	if cl.replicated {
		say("the disk: %d writers syncing at once, then one alone", LockNodes)
		d, err := DiskSync(cl.dir, LockNodes, 200)
		if err != nil {
			return res, err
		}
		one, err := DiskSync(cl.dir, 1, 200)
		if err != nil {
			return res, err
		}
		res.DiskSyncP50us, res.DiskSyncOneP50us = micros(d), micros(one)
	}
	for _, c := range cfg.Clients {
		say("cohort: %d clients for %v", c, cfg.Duration)
		cs, err := cl.contenders(ctx, c, fmt.Sprintf("bench-c%d", c))
		if err != nil {
			return res, fmt.Errorf("cohort with %d clients: %w", c, err)
		}
		run, err := contend(ctx, cs, cfg.Duration)
		if err != nil {
			return res, fmt.Errorf("cohort with %d clients: %w", c, err)
		}
		res.Cohort = append(res.Cohort, run.point(c))
	}

	say("Ricart–Agrawala node-to-node handoff, %d rounds back to back and %d after %v idle", raRounds, idleRounds, idleGap)
	ra, err := raHandoffs(ctx, cl.nodes, raRounds, 0)
	if err != nil {
		return res, fmt.Errorf("ricart-agrawala handoff: %w", err)
	}
	raIdle, err := raHandoffs(ctx, cl.nodes, idleRounds, idleGap)
	if err != nil {
		return res, fmt.Errorf("ricart-agrawala handoff to an idle node: %w", err)
	}
	say("TCP transport one-way latency, %d round trips back to back and %d after %v idle", oneWayRounds, idleRounds, idleGap)
	ow, err := oneWayLatencies(ctx, cl.secret, log, oneWayRounds, 0)
	if err != nil {
		return res, fmt.Errorf("one-way latency: %w", err)
	}
	idle, err := oneWayLatencies(ctx, cl.secret, log, idleRounds, idleGap)
	if err != nil {
		return res, fmt.Errorf("idle one-way latency: %w", err)
	}
	for _, s := range [][]time.Duration{ra, raIdle, ow, idle} {
		slices.Sort(s)
	}
	raP50, raIdleP50, owP50, idleP50 := percentile(ra, 50), percentile(raIdle, 50), percentile(ow, 50), percentile(idle, 50)
	res.RAHandoffP50us, res.OneWayP50us, res.OneWayIdleP50us = micros(raP50), micros(owP50), micros(idleP50)
	res.RAIdleHandoffP50us = micros(raIdleP50)
	if owP50 > 0 {
		res.HandoffOverOneWay = float64(raP50) / float64(owP50)
	}
	if idleP50 > 0 {
		res.HandoffOverIdleOneWay = float64(raP50) / float64(idleP50)
		res.IdleHandoffOverIdleOneWay = float64(raIdleP50) / float64(idleP50)
	}

	if e == nil {
		return res, nil
	}
	for i, c := range cfg.Clients {
		say("etcd: %d clients for %v", c, cfg.Duration)
		cs, err := e.contenders(ctx, c, fmt.Sprintf("bench-c%d", c), etcdTTL(cfg.Duration))
		if err != nil {
			return res, fmt.Errorf("etcd with %d clients: %w", c, err)
		}
		run, err := contend(ctx, cs, cfg.Duration)
		if err != nil {
			return res, fmt.Errorf("etcd with %d clients: %w", c, err)
		}
		p := run.point(c)
		res.Etcd = append(res.Etcd, p)
		ratio := LockRatio{Clients: c}
		if p.AcquisitionsPerS > 0 {
			ratio.AcqRatio = res.Cohort[i].AcquisitionsPerS / p.AcquisitionsPerS
		}
		res.Ratio = append(res.Ratio, ratio)
	}
	return res, nil
}

// etcdTTL is the lease of an etcd client: 10s, or longer for long runs, so
// that it outlives the configuration without keep-alives.
func etcdTTL(run time.Duration) int64 {
	return max(10, int64(math.Ceil(2*run.Seconds())))
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of a
// sorted sample: its smallest value with at least p% of the sample at or
// below it. It is 0 for an empty sample.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted)) / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// --- The workload ---

// A contender is one client of a lock service, used by one goroutine.
type contender interface {
	// acquire waits for the lock and returns its fencing token.
	acquire(ctx context.Context) (uint64, error)
	// release gives back the lock acquire took.
	release(ctx context.Context) error
	// close frees the client's resources.
	close()
}

// A grant is one acquisition, as its client saw it.
type grant struct {
	client   int
	token    uint64
	acquired time.Time // acquire returned
	released time.Time // release is about to be called
}

// contention is the record of one configuration.
type contention struct {
	start, end time.Time
	// grants in the order the lock was granted. Mutual exclusion makes
	// that the order in which the clients recorded them: a client records
	// its grant before it starts its release, and the next grant cannot
	// return before that release.
	grants []grant
}

// contend runs the workload: every contender takes the lock once to warm
// up (connections, the lock's state on every node), then all loop on it
// for d. It closes the contenders.
func contend(ctx context.Context, cs []contender, d time.Duration) (*contention, error) {
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	// The run stops taking the lock at its end; this bounds the stragglers.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	for i, c := range cs {
		if _, err := c.acquire(ctx); err != nil {
			return nil, fmt.Errorf("client %d: warm-up acquire: %w", i, err)
		}
		if err := c.release(ctx); err != nil {
			return nil, fmt.Errorf("client %d: warm-up release: %w", i, err)
		}
	}

	r := &contention{start: time.Now()}
	r.end = r.start.Add(d)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel() // a holder that failed may keep the others waiting
	}
	for i, c := range cs {
		wg.Go(func() {
			// Every client asks at least once, however late its
			// goroutine starts: on a loaded machine one may start after
			// the run's end. point counts only what returned within it.
			for first := true; first || time.Now().Before(r.end); first = false {
				token, err := c.acquire(ctx)
				acquired := time.Now()
				if err != nil {
					fail(fmt.Errorf("client %d: acquire: %w", i, err))
					return
				}
				mu.Lock()
				r.grants = append(r.grants, grant{client: i, token: token, acquired: acquired, released: time.Now()})
				mu.Unlock()
				if err := c.release(ctx); err != nil {
					fail(fmt.Errorf("client %d: release: %w", i, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return r, nil
}

// point sums up a configuration: the grants that returned within it, per
// second, and the handoffs into them.
func (r *contention) point(clients int) LockPoint {
	n := 0
	var handoffs []time.Duration
	for i, g := range r.grants {
		if g.acquired.After(r.end) {
			continue
		}
		n++
		if i > 0 {
			handoffs = append(handoffs, g.acquired.Sub(r.grants[i-1].released))
		}
	}
	slices.Sort(handoffs)
	return LockPoint{
		Clients:          clients,
		AcquisitionsPerS: float64(n) / r.end.Sub(r.start).Seconds(),
		HandoffP50Ms:     millis(percentile(handoffs, 50)),
		HandoffP99Ms:     millis(percentile(handoffs, 99)),
	}
}

// --- Cohort ---

// lockCluster is a Cohort cluster inside this process: live nodes connected
// by the TCP transport on loopback, each serving the lock HTTP API on its
// own loopback port.
type lockCluster struct {
	nodes      []*live.Node
	servers    []*httpapi.Server
	endpoints  []string // the nodes' API addresses, host:port
	secret     []byte
	replicated bool   // sessions, not leases
	dir        string // the replicated nodes' data, removed at close
}

// startLockCluster starts n nodes whose locks run algorithm a; log nil
// discards their log.
func startLockCluster(n int, a proc.Algorithm, log *slog.Logger) (_ *lockCluster, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &lockCluster{secret: make([]byte, 32), replicated: a.Family == "consensus"}
	_, _ = rand.Read(c.secret)
	if c.replicated {
		if c.dir, err = os.MkdirTemp("", "cohort-bench-lock-"); err != nil {
			return nil, err
		}
	}
	trs, err := loopbackTransports(n, c.secret, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, tr := range trs[len(c.nodes):] { // those no node owns
				tr.Close()
			}
			c.close()
		}
	}()
	seq, err := group.Algorithm(group.DefaultAlgorithm)
	if err != nil {
		return nil, err
	}
	for i, tr := range trs {
		nc := node.Config{ID: proc.ID(i), N: n, Transport: tr, Lock: a, Group: seq, Logger: log,
			FoundersWait: -1} // one configuration: nothing to check
		if c.replicated {
			nc.DataDir = filepath.Join(c.dir, fmt.Sprintf("node%d", i))
		}
		nd, err := node.New(nc)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, nd.Live())
		api, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		srv := httpapi.NewServer(nd.Handler(), httpapi.Limits{})
		c.servers = append(c.servers, srv)
		c.endpoints = append(c.endpoints, api.Addr().String())
		go func() { _ = srv.Serve(api) }()
	}
	return c, nil
}

// loopbackTransports creates the TCP transports of n members on 127.0.0.1,
// authenticated by secret. All listen before any is created, so that each
// knows every address.
func loopbackTransports(n int, secret []byte, log *slog.Logger) (_ []*transport.TCP, err error) {
	lns := make([]net.Listener, n)
	var trs []*transport.TCP
	defer func() {
		if err != nil {
			for _, ln := range lns {
				if ln != nil {
					ln.Close()
				}
			}
			for _, tr := range trs {
				tr.Close()
			}
		}
	}()
	addrs := make([]string, n)
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		addrs[i] = lns[i].Addr().String()
	}
	for i := range n {
		peers := map[proc.ID]string{}
		for j, addr := range addrs {
			if j != i {
				peers[proc.ID(j)] = addr
			}
		}
		tr, err := transport.NewTCP(transport.Config{Self: proc.ID(i), Listener: lns[i], Peers: peers, Secret: secret, Logger: log})
		if err != nil {
			return nil, err
		}
		lns[i] = nil // the transport owns it now
		trs = append(trs, tr)
	}
	return trs, nil
}

// close stops the API servers and the nodes.
func (c *lockCluster) close() {
	for _, s := range c.servers {
		_ = s.Close()
	}
	for _, n := range c.nodes {
		_ = n.Close()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// contenders returns k HTTP clients of lock name, each with its own
// keep-alive connections. A textbook client i talks to node i mod n. On
// the replicated service each is given every node's endpoint, as a user
// is (COHORT_ENDPOINTS), client i's list starting at node i mod n — where
// it first opens a session (as etcd's clients grant a lease) — and goes
// where lock.Client goes.
func (c *lockCluster) contenders(ctx context.Context, k int, name string) ([]contender, error) {
	cs := make([]contender, k)
	n := len(c.endpoints)
	for i := range cs {
		lc := &lock.Client{Endpoints: []string{c.endpoints[i%n]}, HTTP: newHTTPClient()}
		if !c.replicated {
			cs[i] = &cohortClient{c: lc, name: name}
			continue
		}
		lc.Endpoints = append(slices.Clone(c.endpoints[i%n:]), c.endpoints[:i%n]...)
		s, err := lc.OpenSession(ctx, lock.MaxTTL)
		if err != nil {
			return nil, err
		}
		cs[i] = &sessionClient{c: lc, s: s, name: name}
	}
	return cs, nil
}

// sessionClient takes the lock under its session.
type sessionClient struct {
	c    *lock.Client
	s    *lock.ClientSession
	name string
}

func (k *sessionClient) acquire(ctx context.Context) (uint64, error) { return k.s.Lock(ctx, k.name) }
func (k *sessionClient) release(ctx context.Context) error           { return k.s.Unlock(ctx, k.name) }
func (k *sessionClient) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = k.s.Close(ctx)
	k.c.HTTP.CloseIdleConnections()
}

func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}
}

// cohortClient takes the lock through a node's HTTP API.
type cohortClient struct {
	c    *lock.Client
	name string
	held *lock.Held
}

func (k *cohortClient) acquire(ctx context.Context) (uint64, error) {
	h, err := k.c.Acquire(ctx, k.name, 10*time.Second)
	if err != nil {
		return 0, err
	}
	k.held = h
	return h.Token, nil
}

func (k *cohortClient) release(ctx context.Context) error { return k.held.Release(ctx) }
func (k *cohortClient) close()                            { k.c.HTTP.CloseIdleConnections() }

// --- Cohort without HTTP ---

// raHandoffs measures Ricart–Agrawala's handoff between the first two
// nodes of a cluster (every node of which answers requests): one holds the
// lock, the other asks for it. Once the holder has received that request
// (and so deferred its reply) and the waiter has the replies of all the
// other nodes (it reports that it waits for the holder alone), the holder
// pauses for pause and unlocks. The sample is the time from the Unlock
// call to the waiter's Lock returning: one reply message, plus the work of
// both nodes around it. The roles alternate.
//
// With no pause the holder unlocks at once, while both nodes are busy,
// as the one-way latency is measured back to back; with a pause of a
// millisecond, the waiter has been idle, as the receiver of the idle
// one-way latency has.
func raHandoffs(ctx context.Context, nodes []*live.Node, rounds int, pause time.Duration) ([]time.Duration, error) {
	ra, err := registry.Find("mutex", "ricart-agrawala")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// The lock must run on every node before the first request, whatever
	// algorithm the cluster resolves unknown locks to.
	const name = "ra-handoff"
	var locks [2]*lock.Lock
	var svcs [2]*live.Service // their services: counters show a request arrived, outputs whom the waiter waits for
	for i, n := range nodes {
		l, err := lock.New(n, name, ra)
		if err != nil {
			return nil, err
		}
		if i < len(locks) {
			locks[i] = l
			if svcs[i], err = n.Service("lock/"+name, ra); err != nil {
				return nil, err
			}
		}
	}
	type granted struct {
		at  time.Time
		err error
	}
	got := make(chan granted, 1)
	holder := 0
	if _, err := locks[holder].Lock(ctx); err != nil {
		return nil, err
	}
	var samples []time.Duration
	for i := range warmRounds + rounds {
		waiter := 1 - holder
		alone := make(chan struct{}, 1) // the waiter waits for the holder alone
		stop := svcs[waiter].OnOutput(func(o proc.Output) {
			if w, ok := o.(mutex.Waiting); ok && len(w.For) == 1 && w.For[0] == proc.ID(holder) {
				select {
				case alone <- struct{}{}:
				default:
				}
			}
		})
		received := svcs[holder].Stats().Received
		go func() {
			_, err := locks[waiter].Lock(ctx)
			got <- granted{time.Now(), err}
		}()
		select {
		case <-alone:
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("the waiter never waited for the holder alone: %w", ctx.Err())
		}
		stop()
		// The holder has the request too, unless it is still on its way
		// (it was sent first, so it is rarely).
		for svcs[holder].Stats().Received == received {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("the request did not reach the holder: %w", ctx.Err())
			}
			runtime.Gosched()
		}
		if pause > 0 {
			time.Sleep(pause)
		}
		start := time.Now()
		if err := locks[holder].Unlock(); err != nil {
			return nil, err
		}
		g := <-got
		if g.err != nil {
			return nil, g.err
		}
		if i >= warmRounds {
			samples = append(samples, g.at.Sub(start))
		}
		holder = waiter
	}
	return samples, locks[holder].Unlock()
}

// oneWayLatencies measures half the round trip of a 32-byte payload between
// two TCP transports set up as the cluster's are: back to back, or with gap
// between round trips so that both ends are idle when a message comes.
func oneWayLatencies(ctx context.Context, secret []byte, log *slog.Logger, rounds int, gap time.Duration) ([]time.Duration, error) {
	trs, err := loopbackTransports(2, secret, log)
	if err != nil {
		return nil, err
	}
	defer trs[0].Close()
	defer trs[1].Close()

	pong := make(chan struct{}, 1)
	if err := trs[0].Start(func(proc.ID, []byte) { pong <- struct{}{} }); err != nil {
		return nil, err
	}
	if err := trs[1].Start(func(from proc.ID, p []byte) { _ = trs[1].Send(from, p) }); err != nil {
		return nil, err
	}
	payload := make([]byte, 32)
	var samples []time.Duration
	for i := range warmRounds + rounds {
		if gap > 0 {
			time.Sleep(gap)
		}
		start := time.Now()
		if err := trs[0].Send(1, payload); err != nil {
			return nil, err
		}
		select {
		case <-pong:
		case <-time.After(10 * time.Second):
			return nil, errors.New("no answer within 10s")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if i >= warmRounds {
			samples = append(samples, time.Since(start)/2)
		}
	}
	return samples, nil
}

// --- etcd ---

// FindEtcd returns the etcd binary to compare with: EtcdPath, or else etcd
// on the PATH. The error says how to install it.
func FindEtcd() (string, error) {
	if _, err := os.Stat(EtcdPath); err == nil {
		return EtcdPath, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("etcd not found at %s or on the PATH; install it with `apt-get install etcd-server`", EtcdPath)
}

// etcdServer is a single-node etcd server started for a benchmark, with a
// temporary data directory and loopback ports.
type etcdServer struct {
	cmd    *exec.Cmd
	dir    string
	url    string // the client URL
	logf   *os.File
	exited chan struct{}
}

// startEtcd starts the etcd binary at path and waits until it is healthy.
func startEtcd(ctx context.Context, path string) (*etcdServer, error) {
	dir, err := os.MkdirTemp("", "cohort-bench-etcd-")
	if err != nil {
		return nil, err
	}
	addrs, err := freeLoopbackAddrs(2)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client, peer := "http://"+addrs[0], "http://"+addrs[1]
	cmd := exec.Command(path,
		"--name", "bench",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "bench="+peer, "--initial-cluster-state", "new")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	e := &etcdServer{cmd: cmd, dir: dir, url: client, logf: logf, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(e.exited)
	}()
	if err := e.waitHealthy(ctx, 30*time.Second); err != nil {
		tail := e.logTail(2000)
		e.stop()
		return nil, fmt.Errorf("etcd: %w; its log ends:\n%s", err, tail)
	}
	return e, nil
}

func (e *etcdServer) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			var h struct {
				Health string `json:"health"`
			}
			err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK && h.Health == "true" {
				return nil
			}
		}
		select {
		case <-e.exited:
			return errors.New("exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %v: %w", limit, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail is the last n bytes of the server's log.
func (e *etcdServer) logTail(n int64) string {
	b, err := os.ReadFile(e.logf.Name())
	if err != nil {
		return ""
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// stop stops the server (SIGTERM, then SIGKILL after 10s) and removes its
// data.
func (e *etcdServer) stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
	e.logf.Close()
	os.RemoveAll(e.dir)
}

// contenders returns k clients of lock name, each with its own lease of
// ttl seconds and keep-alive connection.
func (e *etcdServer) contenders(ctx context.Context, k int, name string, ttl int64) ([]contender, error) {
	var cs []contender
	for range k {
		c := &etcdClient{url: e.url, hc: newHTTPClient(), name: []byte(name)}
		var out struct {
			ID int64 `json:"ID,string"`
		}
		if err := c.call(ctx, "/v3/lease/grant", map[string]any{"TTL": ttl}, &out); err != nil {
			for _, c := range cs {
				c.close()
			}
			return nil, fmt.Errorf("lease grant: %w", err)
		}
		c.lease = out.ID
		cs = append(cs, c)
	}
	return cs, nil
}

// etcdClient takes an etcd lock through the v3 JSON gateway. etcd 3.4
// serves it under /v3/ (and still under /v3beta/, the prefix of 3.3 and
// older). Byte fields are base64 in that JSON, as encoding/json writes
// []byte; 64-bit integers are decimal strings.
type etcdClient struct {
	url   string
	hc    *http.Client
	name  []byte
	lease int64
	key   []byte // the holder's key, while it holds the lock
}

// acquire returns the revision of etcd's lock reply as the fencing token.
func (c *etcdClient) acquire(ctx context.Context) (uint64, error) {
	in := struct {
		Name  []byte `json:"name"`
		Lease int64  `json:"lease,string"`
	}{c.name, c.lease}
	var out struct {
		Header struct {
			Revision int64 `json:"revision,string"`
		} `json:"header"`
		Key []byte `json:"key"`
	}
	if err := c.call(ctx, "/v3/lock/lock", in, &out); err != nil {
		return 0, err
	}
	if len(out.Key) == 0 {
		return 0, errors.New("lock reply without a key")
	}
	c.key = out.Key
	return uint64(out.Header.Revision), nil
}

func (c *etcdClient) release(ctx context.Context) error {
	return c.call(ctx, "/v3/lock/unlock", struct {
		Key []byte `json:"key"`
	}{c.key}, nil)
}

// close revokes the lease (deleting any key left under it).
func (c *etcdClient) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.call(ctx, "/v3/lease/revoke", struct {
		ID int64 `json:"ID,string"`
	}{c.lease}, nil)
	c.hc.CloseIdleConnections()
}

// call posts in as JSON to the gateway and decodes the reply into out.
func (c *etcdClient) call(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(reply))
	}
	if out != nil {
		if err := json.Unmarshal(reply, out); err != nil {
			return fmt.Errorf("%s: bad reply: %w", path, err)
		}
	}
	return nil
}

// freeLoopbackAddrs reserves n loopback ports by listening and closing
// again, for a server that must be told its ports.
func freeLoopbackAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}
