package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/check"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/lock"
)

// The nemesis runs a cluster of real node processes (cohort node, on
// loopback, every service on the replicated log) while clients lock and
// multicast, and injures it at random — kill -9 and restart, SIGSTOP and
// SIGCONT — a seeded schedule that keeps a majority whole; afterwards it
// checks the histories, as Jepsen does:
//
//   - lock and leader: every client records when it held the lock (or led
//     the election) — from the grant to its release, or to the end of its
//     session's reckoning if that came first — and the grant's fencing
//     token (the term); no two holdings overlap, and tokens rise in the
//     order of the grants;
//   - lock, again: the clients' operations (acquire, release, the end of a
//     session) are linearizable against a sequential lock with fencing
//     tokens (Porcupine; check.LinearizableLock);
//   - group: every message acknowledged is delivered, at every member,
//     once, at the position acknowledged, in one order (the check reads
//     every node's group from a position all of them still keep).
//
// The faults go through a NemesisCluster: RunNemesis's processes on
// loopback are killed, restarted, paused and resumed; the container
// cluster of package e2e (through RunNemesisOn) is also partitioned.

// NemesisConfig configures RunNemesis.
type NemesisConfig struct {
	Nodes       int           // default 5
	Duration    time.Duration // of the faults and the clients; default 30 s
	Seed        uint64        // the faults' schedule
	LockClients int           // default 4
	Campaigners int           // default 2: candidates in election "nemesis"
	Senders     int           // default 2
	NodeCommand func(config string) *exec.Cmd
	Progress    func(format string, args ...any) // nil: quiet
}

// NemesisResult counts what happened and what broke.
type NemesisResult struct {
	Nodes        int      `json:"nodes"`
	Seconds      float64  `json:"seconds"`
	Seed         uint64   `json:"seed"`
	Kills        int      `json:"kills"`
	Pauses       int      `json:"pauses"`
	Cuts         int      `json:"cuts"` // partitions: a node cut off from the others, then reconnected
	Grants       int      `json:"lock_grants"`
	Terms        int      `json:"leader_terms"`
	LockErrors   int      `json:"lock_errors"`       // operations that failed (and were retried): not anomalies
	LockOps      int      `json:"lock_operations"`   // in the history checked for linearizability
	Linearizable string   `json:"lock_linearizable"` // the verdict: ok, violated, or unknown (the search timed out)
	Sent         int      `json:"messages_acknowledged"`
	Checked      int      `json:"messages_checked"`    // deliveries compared, over every node
	Listened     int      `json:"deliveries_followed"` // deliveries the listeners on every node followed during the run
	Skipped      int      `json:"positions_skipped"`   // positions a listener's node no longer kept when it came back (compacted while it was down)
	Anomalies    []string `json:"anomalies"`
	// Interrupted: the caller's context ended the run early (Ctrl-C). The
	// histories gathered so far were checked; the end-of-run comparison
	// of the group's deliveries, which needs the cluster, was not.
	Interrupted bool `json:"interrupted,omitempty"`
}

type holding struct {
	client     int
	token      uint64
	start, end time.Time
}

// defaults fills in what cfg leaves at zero (but Nodes).
func (cfg *NemesisConfig) defaults() {
	if cfg.Duration == 0 {
		cfg.Duration = 30 * time.Second
	}
	if cfg.LockClients == 0 {
		cfg.LockClients = 4
	}
	if cfg.Senders == 0 {
		cfg.Senders = 2
	}
	if cfg.Campaigners == 0 {
		cfg.Campaigners = 2
	}
}

// say reports progress, if cfg asks for it.
func (cfg NemesisConfig) say(format string, args ...any) {
	if cfg.Progress != nil {
		cfg.Progress(format, args...)
	}
}

// RunNemesis runs the nemesis and checks the histories.
func RunNemesis(ctx context.Context, cfg NemesisConfig) (NemesisResult, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 5
	}
	cfg.defaults()
	say := cfg.say
	switch {
	case cfg.Nodes < 3:
		return NemesisResult{}, fmt.Errorf("nodes %d: a nemesis needs at least 3 (a majority must survive a fault)", cfg.Nodes)
	case cfg.NodeCommand == nil:
		return NemesisResult{}, errors.New("no node command")
	}
	ecfg := &ElectConfig{Nodes: cfg.Nodes, Runs: 1, NodeCommand: cfg.NodeCommand, Replicated: true, EtcdTTL: 2 * time.Second}
	if cfg.Progress != nil {
		ecfg.Progress = progressWriter(say)
	}
	say("starting %d node processes", cfg.Nodes)
	cl, err := startProcCluster(ctx, ecfg)
	if err != nil {
		return NemesisResult{}, err
	}
	defer cl.stop()
	return RunNemesisOn(ctx, cfg, procNemesis{cl})
}

// A NemesisCluster is a running cluster (every service on the replicated
// log) whose nodes the nemesis can injure. Each method returns once the
// fault is in place or undone: Kill once the node is dead, Restart and
// Reconnect once its API answers.
type NemesisCluster interface {
	Endpoints() []string // the nodes' API addresses, host:port
	HTTP() *http.Client
	Kill(i int) error // SIGKILL
	Restart(ctx context.Context, i int) error
	Pause(i int) error // SIGSTOP, or the container's freezer
	Resume(i int) error
	// Partitions says whether Cut and Reconnect work: Cut cuts node i off
	// the network (its API too), Reconnect joins it again.
	Partitions() bool
	Cut(i int) error
	Reconnect(ctx context.Context, i int) error
}

// procNemesis is a cluster of processes on loopback, which cannot be cut
// apart.
type procNemesis struct{ cl *procCluster }

func (p procNemesis) Endpoints() []string { return p.cl.apis }
func (p procNemesis) HTTP() *http.Client  { return p.cl.hc }
func (p procNemesis) Kill(i int) error {
	err := p.cl.cmds[i].Process.Signal(syscall.SIGKILL)
	<-p.cl.exited[i]
	return err
}
func (p procNemesis) Restart(ctx context.Context, i int) error {
	if err := p.cl.start(i); err != nil {
		return err
	}
	return p.cl.ready(ctx, i)
}
func (p procNemesis) Pause(i int) error  { return p.cl.cmds[i].Process.Signal(syscall.SIGSTOP) }
func (p procNemesis) Resume(i int) error { return p.cl.cmds[i].Process.Signal(syscall.SIGCONT) }
func (p procNemesis) Partitions() bool   { return false }
func (p procNemesis) Cut(int) error      { return errors.ErrUnsupported }
func (p procNemesis) Reconnect(context.Context, int) error {
	return errors.ErrUnsupported
}

// endpoints is how the clients reach a cluster.
type endpoints struct {
	apis []string
	hc   *http.Client
}

// RunNemesisOn runs the clients and the nemesis on a running cluster
// (cfg.Nodes and cfg.NodeCommand are not used) and checks the histories.
func RunNemesisOn(ctx context.Context, cfg NemesisConfig, nc NemesisCluster) (NemesisResult, error) {
	cfg.defaults()
	say := cfg.say
	cfg.Nodes = len(nc.Endpoints())
	res := NemesisResult{Nodes: cfg.Nodes, Seed: cfg.Seed, Anomalies: []string{}}
	cl := endpoints{apis: nc.Endpoints(), hc: nc.HTTP()}
	start := time.Now()
	rctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()

	var mu sync.Mutex
	var holdings, terms []holding
	var lockOps []check.LockOp
	acked := map[uint64]string{} // position → body
	var wg sync.WaitGroup
	failed := func() {
		mu.Lock()
		res.LockErrors++
		mu.Unlock()
	}
	for c := range cfg.LockClients + cfg.Campaigners {
		campaign := c >= cfg.LockClients
		wg.Add(1)
		go func() {
			defer wg.Done()
			var op func(check.LockOp)
			if !campaign {
				op = func(o check.LockOp) {
					mu.Lock()
					lockOps = append(lockOps, o)
					mu.Unlock()
				}
			}
			holder(rctx, cl, c, campaign, func(h holding) {
				mu.Lock()
				if campaign {
					terms = append(terms, h)
				} else {
					holdings = append(holdings, h)
				}
				mu.Unlock()
			}, failed, op)
		}()
	}
	// A listener on every node follows the group through the run,
	// resuming where it stopped whenever its node dies or stalls.
	seen := make([]map[uint64]string, cfg.Nodes)
	var lwg sync.WaitGroup
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	for i := range cfg.Nodes {
		seen[i] = map[uint64]string{}
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			skipped, anomalies := follow(lctx, cl, i, func(pos uint64, body string) {
				mu.Lock()
				seen[i][pos] = body
				mu.Unlock()
			})
			mu.Lock()
			res.Skipped += skipped
			res.Anomalies = append(res.Anomalies, anomalies...)
			mu.Unlock()
		}()
	}
	for s := range cfg.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gc := &group.Client{Endpoints: rotate(cl.apis, s), HTTP: cl.hc}
			for k := 0; rctx.Err() == nil; k++ {
				body := fmt.Sprintf("s%d-%d", s, k)
				sctx, cancel := context.WithTimeout(rctx, 2*time.Second)
				_, pos, err := gc.Send(sctx, "nemesis", []byte(body))
				cancel()
				if err == nil && pos > 0 {
					mu.Lock()
					if prev, dup := acked[pos]; dup {
						res.Anomalies = append(res.Anomalies, fmt.Sprintf("group: %s and %s both acknowledged at position %d", prev, body, pos))
					}
					acked[pos] = body
					mu.Unlock()
				}
				sleepCtx(rctx, 10*time.Millisecond)
			}
		}()
	}

	// The nemesis: at most ⌊(n-1)/2⌋ nodes injured at once.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65))
	down := map[int]string{} // node → "killed", "paused" or "cut"
	heal := func(i int) {
		var err error
		switch {
		case down[i] == "paused":
			err = nc.Resume(i) // also when interrupted: a stopped process cannot stop cleanly
		case ctx.Err() != nil:
			// Interrupted: the cluster is about to be stopped.
		case down[i] == "killed":
			err = nc.Restart(ctx, i)
		case down[i] == "cut":
			err = nc.Reconnect(ctx, i)
		}
		if err != nil {
			say("healing node %d (%s): %v", i, down[i], err)
		}
		delete(down, i)
	}
	for rctx.Err() == nil {
		sleepCtx(rctx, time.Duration(300+rng.IntN(1200))*time.Millisecond)
		if rctx.Err() != nil {
			break
		}
		if len(down) > 0 && (len(down) >= (cfg.Nodes-1)/2 || rng.IntN(2) == 0) {
			for i := range down {
				say("heal node %d (%s)", i, down[i])
				heal(i)
				break
			}
			continue
		}
		i := rng.IntN(cfg.Nodes)
		if _, ok := down[i]; ok {
			continue
		}
		kinds := 2
		if nc.Partitions() {
			kinds = 3
		}
		var err error
		switch rng.IntN(kinds) {
		case 0:
			say("kill -9 node %d", i)
			err = nc.Kill(i)
			down[i] = "killed"
			res.Kills++
		case 1:
			say("pause node %d", i)
			err = nc.Pause(i)
			down[i] = "paused"
			res.Pauses++
		case 2:
			say("cut node %d off the network", i)
			err = nc.Cut(i)
			down[i] = "cut"
			res.Cuts++
		}
		if err != nil {
			return res, fmt.Errorf("injuring node %d (%s): %w", i, down[i], err)
		}
	}
	for i := range down {
		heal(i)
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Grants, res.Terms = len(holdings), len(terms)
	res.Sent = len(acked)
	say("checking %d holdings of the lock, %d leaderships and %d messages", len(holdings), len(terms), len(acked))
	res.Anomalies = append(res.Anomalies, checkHoldings("lock", holdings)...)
	res.Anomalies = append(res.Anomalies, checkHoldings("leader", terms)...)
	say("checking the linearizability of %d lock operations", len(lockOps))
	res.LockOps = len(lockOps)
	status, detail := check.LinearizableLock(lockOps, time.Minute)
	res.Linearizable = status.String()
	if status != check.OK {
		res.Anomalies = append(res.Anomalies, fmt.Sprintf("lock: the history is not linearizable (%v): %s", status, detail))
	}
	if ctx.Err() != nil {
		// Interrupted: what the listeners followed is checked as it
		// came (follow), but comparing it with the acknowledgements
		// needs the cluster, and every listener may be behind.
		stopListening()
		lwg.Wait()
		for i := range seen {
			res.Listened += len(seen[i])
		}
		res.Interrupted = true
		return res, nil
	}
	var from uint64 = 1
	if len(acked) > 0 {
		// A restarted node keeps at least what its snapshot retained
		// (1,024 messages) and what it replayed since.
		if last := slices.Max(slices.Collect(maps.Keys(acked))); last > 500 {
			from = last - 500
		}
	}
	checked, anomalies := checkGroup(ctx, cl, "nemesis", acked, from)
	res.Checked = checked
	res.Anomalies = append(res.Anomalies, anomalies...)
	// The listeners: let them catch up with the last acknowledged
	// position, then compare what every node delivered.
	var last uint64 // 0: nothing to wait for
	if len(acked) > 0 {
		last = slices.Max(slices.Collect(maps.Keys(acked)))
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		behind := false
		for i := range seen {
			if _, ok := seen[i][last]; !ok {
				behind = true
			}
		}
		mu.Unlock()
		if !behind {
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	stopListening()
	lwg.Wait()
	for i := range seen {
		res.Listened += len(seen[i])
	}
	res.Anomalies = append(res.Anomalies, compareListeners(seen, acked)...)
	return res, nil
}

// follow listens to group "nemesis" on node i, recording each delivery,
// until ctx ends, resuming after the last position whenever the
// stream breaks. A position delivered out of turn is an anomaly; one the
// node no longer keeps when the listener comes back (compacted while the
// node was down) is counted as skipped.
func follow(ctx context.Context, cl endpoints, i int, record func(pos uint64, body string)) (skipped int, anomalies []string) {
	gc := &group.Client{Endpoints: []string{cl.apis[i]}, HTTP: cl.hc}
	next := uint64(1)
	for ctx.Err() == nil {
		ds, wait, err := gc.DeliveriesFrom(ctx, "nemesis", next)
		if err != nil {
			var oldest uint64
			if _, err := fmt.Sscanf(errTail(err, "the oldest is "), "%d", &oldest); err == nil && oldest > next {
				skipped += int(oldest - next)
				next = oldest
				continue
			}
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		for d := range ds {
			if d.Pos != next {
				anomalies = append(anomalies, fmt.Sprintf("group: node %d delivered position %d where %d was due", i, d.Pos, next))
				return skipped, anomalies
			}
			record(d.Pos, string(d.Body))
			next++
		}
		_ = wait()
	}
	return skipped, anomalies
}

// errTail is what follows marker in err's message ("" if absent).
func errTail(err error, marker string) string {
	msg := err.Error()
	if k := strings.Index(msg, marker); k >= 0 {
		return msg[k+len(marker):]
	}
	return ""
}

// compareListeners: at every position, every node delivered the same
// message, the one acknowledged there; every acknowledged message reached
// some node.
func compareListeners(seen []map[uint64]string, acked map[uint64]string) []string {
	var out []string
	for p, body := range acked {
		reached := false
		for i := range seen {
			if b, ok := seen[i][p]; ok {
				reached = true
				if b != body {
					out = append(out, fmt.Sprintf("group: node %d delivered %q at position %d, acknowledged for %q", i, b, p, body))
				}
			}
		}
		if !reached {
			out = append(out, fmt.Sprintf("group: %q, acknowledged at position %d, reached no listener", body, p))
		}
	}
	for i := 1; i < len(seen); i++ {
		for p, b := range seen[i] {
			if a, ok := seen[0][p]; ok && a != b {
				out = append(out, fmt.Sprintf("group: at position %d node 0 delivered %q and node %d %q", p, a, i, b))
			}
		}
	}
	return out
}

func rotate(xs []string, k int) []string {
	k %= len(xs)
	return append(append([]string{}, xs[k:]...), xs[:k]...)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// holder takes lock "nemesis" again and again under a session it
// renews, holding it briefly, until ctx ends — or, campaign, leads
// election "nemesis" and resigns, again and again.
//
// A lock client also records its operations for the linearizability
// check (op; nil for a candidate): each acquire and release with its
// outcome, or none if it never learned it, and the end of each session —
// from its last renewal known to have been applied (it may have expired
// since) to its close.
func holder(ctx context.Context, cl endpoints, c int, campaign bool, record func(holding), failed func(), op func(check.LockOp)) {
	lc := &lock.Client{Endpoints: rotate(cl.apis, c), HTTP: cl.hc}
	if op == nil {
		op = func(check.LockOp) {}
	}
	for ctx.Err() == nil {
		opened := time.Now()
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := lc.OpenSession(octx, time.Second)
		cancel()
		if err != nil {
			failed()
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		var aliveMu sync.Mutex
		alive := opened // a renewal sent then was answered: the session lived then
		lockOp := func(kind check.LockOpKind, call time.Time, err error, token uint64) {
			o := check.LockOp{Kind: kind, Client: c, Session: s.ID, Call: call, Known: err == nil, OK: err == nil, Token: token}
			if err == nil {
				o.Return = time.Now()
			}
			op(o)
		}
		acquire, release := func(ctx context.Context) (uint64, error) { return s.Lock(ctx, "nemesis") },
			func(ctx context.Context) error { return s.Unlock(ctx, "nemesis") }
		if campaign {
			acquire = func(ctx context.Context) (uint64, error) {
				var out struct {
					Term uint64 `json:"term"`
				}
				err := s.Poll(ctx, http.MethodPost, fmt.Sprintf("/v1/elections/nemesis/campaign?session=%d&seq=%d", s.ID, s.Next()), &out)
				return out.Term, err
			}
			release = func(ctx context.Context) error {
				return s.Do(ctx, http.MethodDelete, fmt.Sprintf("/v1/elections/nemesis?session=%d&seq=%d", s.ID, s.Next()), nil)
			}
		}
		sctx, endSession := context.WithCancel(ctx)
		go func() { // renewals
			for sctx.Err() == nil {
				kctx, cancel := context.WithTimeout(sctx, 250*time.Millisecond)
				sent := time.Now()
				_, err := s.KeepAlive(kctx)
				cancel()
				if err == nil {
					aliveMu.Lock()
					alive = sent
					aliveMu.Unlock()
				}
				if errors.Is(err, lock.ErrLeaseLost) {
					endSession()
					return
				}
				sleepCtx(sctx, 250*time.Millisecond)
			}
		}()
		for sctx.Err() == nil {
			lctx, cancel := context.WithTimeout(sctx, 5*time.Second)
			called := time.Now()
			token, err := acquire(lctx)
			cancel()
			lockOp(check.LockAcquire, called, err, token)
			if err != nil {
				failed()
				break
			}
			h := holding{client: c, token: token, start: time.Now()}
			sleepCtx(sctx, time.Duration(2+rand.IntN(10))*time.Millisecond)
			// The holding ends now, or when the reckoning ran out if that
			// came first: a client stops acting then.
			h.end = time.Now()
			if u := s.Until(); u.Before(h.end) {
				h.end = u
			}
			record(h)
			uctx, cancel := context.WithTimeout(sctx, 3*time.Second)
			called = time.Now()
			err = release(uctx)
			cancel()
			lockOp(check.LockRelease, called, err, 0)
			if err != nil {
				failed()
				break
			}
		}
		endSession()
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = s.Close(cctx)
		cancel()
		aliveMu.Lock()
		end := check.LockOp{Kind: check.LockEnd, Client: c, Session: s.ID, Call: alive, Known: true, OK: true}
		aliveMu.Unlock()
		if err == nil { // else it ends when it expires: some time later
			end.Return = time.Now()
		}
		op(end)
	}
}

// checkHoldings: no two holdings overlap; tokens rise with the grants. A
// grant its client learned of after its session's reckoning ran out is no
// holding: the client must not act on it (cohort lock does not).
func checkHoldings(what string, hs []holding) []string {
	var out []string
	hs = slices.DeleteFunc(hs, func(h holding) bool { return !h.end.After(h.start) })
	slices.SortFunc(hs, func(a, b holding) int { return a.start.Compare(b.start) })
	if len(hs) == 0 {
		return []string{what + ": never granted"}
	}
	last := hs[0] // of the holdings so far, the one that ends last
	for i := 1; i < len(hs); i++ {
		p, c := hs[i-1], hs[i]
		if c.token <= p.token {
			out = append(out, fmt.Sprintf("%s: client %d was granted token %d after client %d had token %d", what, c.client, c.token, p.client, p.token))
		}
		if c.start.Before(last.end) {
			out = append(out, fmt.Sprintf("%s: client %d (token %d) held it from %v, before client %d (token %d) let it go %v later",
				what, c.client, c.token, c.start.Format("15:04:05.000000"), last.client, last.token, last.end.Sub(c.start)))
		}
		if c.end.After(last.end) {
			last = c
		}
	}
	return out
}

// checkGroup reads group name on every node from position from (which
// all of them must keep) to the last acknowledged, and compares: the
// same message at every position on every node, and each acknowledged
// one where it was acknowledged.
func checkGroup(ctx context.Context, cl endpoints, name string, acked map[uint64]string, from uint64) (int, []string) {
	if len(acked) == 0 {
		return 0, []string{"group: nothing was acknowledged"}
	}
	last := slices.Max(slices.Collect(maps.Keys(acked)))
	var out []string
	checked := 0
	for i := range cl.apis {
		gc := &group.Client{Endpoints: []string{cl.apis[i]}, HTTP: cl.hc}
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		// A node just restarted may still be replaying the log: it keeps
		// a position once it has applied it.
		var ds <-chan group.Delivery
		var err error
		for {
			if ds, _, err = gc.DeliveriesFrom(lctx, name, from); err == nil || lctx.Err() != nil {
				break
			}
			sleepCtx(lctx, 100*time.Millisecond)
		}
		if err != nil {
			cancel()
			out = append(out, fmt.Sprintf("group: node %d: %v", i, err))
			continue
		}
		want := from
		for d := range ds {
			checked++
			if d.Pos != want {
				out = append(out, fmt.Sprintf("group: node %d delivered position %d where %d was due", i, d.Pos, want))
				break
			}
			if body, ok := acked[d.Pos]; ok && body != string(d.Body) {
				out = append(out, fmt.Sprintf("group: node %d delivered %q at position %d, acknowledged for %q", i, d.Body, d.Pos, body))
			}
			if want == last {
				break
			}
			want++
		}
		cancel()
		if want != last {
			out = append(out, fmt.Sprintf("group: node %d delivered up to %d of %d", i, want-1, last))
		}
	}
	return checked, out
}

// progressWriter adapts say to the io.Writer ElectConfig.Progress wants.
type progressWriter func(format string, args ...any)

func (p progressWriter) Write(b []byte) (int, error) {
	p("%s", string(b[:len(b)-min(len(b), 1)]))
	return len(b), nil
}
