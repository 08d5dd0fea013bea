package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/proc"
)

// The election benchmark measures failover: the time from kill -9 of the
// leader's process to every survivor agreeing on the new leader.
//
//   - Cohort: a cluster of Nodes real processes (cohort node) on loopback,
//     each standing in the election "bench" from boot, so the leader is the
//     highest live node. A run opens a watch stream (server-sent events) on
//     every survivor, kills the leader with SIGKILL, and takes the time at
//     which the last survivor reports the new leader. The killed node is
//     restarted, bullies its way back, and the next run begins.
//   - etcd: a single-node etcd on loopback and Nodes campaigners, each with
//     its own lease (EtcdTTL) kept alive every third of it, campaigning
//     through the v3 JSON gateway (election/campaign), as
//     concurrency.Election does. A run "kills" the leading campaigner — its
//     keep-alives stop and its connections close without a revoke, which is
//     what etcd sees of a process that died — and takes the time until the
//     next campaigner's campaign call returns, i.e. until etcd has expired
//     the dead lease and handed the leadership on. The dead one campaigns
//     again with a fresh lease, behind the others.

// ElectConfig configures RunElect and RunSoak.
type ElectConfig struct {
	Nodes int // cluster size; default 5
	Runs  int // failovers per system; default 10
	// NodeCommand returns the command that runs one Cohort node with the
	// given configuration file (cohort node --config FILE).
	NodeCommand func(config string) *exec.Cmd
	// The failure detector's settings (0: the defaults, 50 ms heartbeats,
	// 300 ms timeout; Phi > 0: phi-accrual).
	Heartbeat, Timeout time.Duration
	Phi                float64
	// Replicated puts the elections on the replicated log (lock: raft):
	// nodes hold the election by sessions of the timeout, and a run kills
	// whichever node leads; else bully-fd, whose leader is the highest.
	Replicated bool
	// Etcd is the etcd binary to compare with; "" leaves etcd out.
	Etcd string
	// EtcdTTL is the etcd campaigners' lease; default 2 s.
	EtcdTTL time.Duration
	// Progress, if not nil, gets a line per step.
	Progress io.Writer
}

// Failovers are one system's failover times.
type Failovers struct {
	Runs     int       `json:"runs"`
	MedianMs float64   `json:"median_ms"`
	MinMs    float64   `json:"min_ms"`
	MaxMs    float64   `json:"max_ms"`
	Ms       []float64 `json:"ms"` // every run, in order
}

// ElectResult is the JSON contract of `cohort bench elect`.
type ElectResult struct {
	Nodes       int        `json:"nodes"`
	HeartbeatMs float64    `json:"heartbeat_ms"`
	TimeoutMs   float64    `json:"timeout_ms"`
	Phi         float64    `json:"phi,omitempty"`
	Backend     string     `json:"backend"` // raft or bully-fd
	Cohort      Failovers  `json:"cohort"`
	Etcd        *Failovers `json:"etcd,omitempty"`
	EtcdTTLms   float64    `json:"etcd_ttl_ms,omitempty"`
	// EtcdOverCohort is etcd's median failover over Cohort's.
	EtcdOverCohort float64 `json:"etcd_over_cohort,omitempty"`
	// Lapsed counts Cohort's runs not counted because the leadership
	// ended before the kill (a leader too slow to renew its lease on a
	// loaded machine); each was run again, up to Runs of them.
	Lapsed int `json:"lapsed_before_kill,omitempty"`
}

// SoakResult is what an idle soak of a healthy cluster saw.
type SoakResult struct {
	Nodes     int     `json:"nodes"`
	Seconds   float64 `json:"seconds"`
	Leader    int     `json:"leader"`
	Changes   int     `json:"leader_changes"` // views, on any node, that differ from the first agreed leader
	StreamErr string  `json:"stream_error,omitempty"`
}

const electionName = "bench"

func (c *ElectConfig) defaults() error {
	if c.Nodes == 0 {
		c.Nodes = 5
	}
	if c.Runs == 0 {
		c.Runs = 10
	}
	if c.EtcdTTL == 0 {
		c.EtcdTTL = 2 * time.Second
	}
	switch {
	case c.Nodes < 2:
		return fmt.Errorf("nodes %d: a failover needs at least 2", c.Nodes)
	case c.Runs < 1:
		return fmt.Errorf("runs %d: want at least 1", c.Runs)
	case c.NodeCommand == nil:
		return errors.New("no node command")
	case c.EtcdTTL < time.Second:
		return fmt.Errorf("etcd ttl %v: etcd's leases last at least 1s", c.EtcdTTL)
	}
	return nil
}

func (c *ElectConfig) say(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// RunElect measures Cohort's failover and, if cfg.Etcd is set, etcd's, run
// for run alternately.
func RunElect(ctx context.Context, cfg ElectConfig) (ElectResult, error) {
	if err := cfg.defaults(); err != nil {
		return ElectResult{}, err
	}
	hb, to := cfg.Heartbeat, cfg.Timeout
	if hb == 0 {
		hb = 50 * time.Millisecond
	}
	if to == 0 {
		to = 6 * hb
	}
	res := ElectResult{Nodes: cfg.Nodes, HeartbeatMs: millis(hb), TimeoutMs: millis(to), Phi: cfg.Phi, Backend: "bully-fd"}
	if cfg.Replicated {
		res.Backend = "raft"
	}
	cl, err := startProcCluster(ctx, &cfg)
	if err != nil {
		return res, err
	}
	defer cl.stop()
	var et *etcdElection
	if cfg.Etcd != "" {
		cfg.say("starting etcd (%s)", cfg.Etcd)
		e, err := startEtcd(ctx, cfg.Etcd)
		if err != nil {
			return res, err
		}
		defer e.stop()
		if et, err = newEtcdElection(ctx, e, cfg.Nodes, cfg.EtcdTTL); err != nil {
			return res, err
		}
		defer et.close()
		res.EtcdTTLms = millis(cfg.EtcdTTL)
	}
	var cohort, etcd []time.Duration
	failover := cl.failover
	if cfg.Replicated {
		failover = cl.failoverReplicated
	}
	for r := 1; r <= cfg.Runs; r++ {
		d, err := failover(ctx)
		for errors.Is(err, errLapsed) && res.Lapsed < cfg.Runs {
			res.Lapsed++
			cfg.say("run %d: %v: not counted, run again", r, err)
			d, err = failover(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("cohort run %d: %w", r, err)
		}
		cohort = append(cohort, d)
		cfg.say("run %d: cohort failover %.1f ms", r, millis(d))
		if et != nil {
			d, err := et.failover(ctx)
			if err != nil {
				return res, fmt.Errorf("etcd run %d: %w", r, err)
			}
			etcd = append(etcd, d)
			cfg.say("run %d: etcd failover %.1f ms", r, millis(d))
		}
	}
	res.Cohort = failovers(cohort)
	if et != nil {
		f := failovers(etcd)
		res.Etcd = &f
		res.EtcdOverCohort = f.MedianMs / res.Cohort.MedianMs
	}
	return res, nil
}

// RunSoak starts a healthy cluster, waits for its leader and watches every
// node for d: a healthy cluster should never change its leader.
func RunSoak(ctx context.Context, cfg ElectConfig, d time.Duration) (SoakResult, error) {
	if err := cfg.defaults(); err != nil {
		return SoakResult{}, err
	}
	res := SoakResult{Nodes: cfg.Nodes}
	cl, err := startProcCluster(ctx, &cfg)
	if err != nil {
		return res, err
	}
	defer cl.stop()
	top := proc.ID(cfg.Nodes - 1) // bully-fd: the highest leads
	if cfg.Replicated {
		if top, err = cl.agreeAny(ctx, cl.all(), proc.None, 20*time.Second); err != nil {
			return res, err
		}
	}
	res.Leader = int(top)
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range cfg.Nodes {
		views, wait, err := cl.client(i).Watch(wctx, electionName)
		if err != nil {
			return res, fmt.Errorf("watching node %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range views {
				if v.Leader != top {
					mu.Lock()
					res.Changes++
					mu.Unlock()
					cfg.say("node %d: leader %d at %v", i, v.Leader, time.Since(start).Round(time.Millisecond))
				}
			}
			if err := wait(); err != nil {
				mu.Lock()
				res.StreamErr = fmt.Sprintf("node %d: %v", i, err)
				mu.Unlock()
			}
		}()
	}
	cfg.say("soaking %v", d)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	return res, ctx.Err()
}

func failovers(ds []time.Duration) Failovers {
	f := Failovers{Runs: len(ds)}
	for _, d := range ds {
		f.Ms = append(f.Ms, millis(d))
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	f.MedianMs, f.MinMs, f.MaxMs = millis(percentile(s, 50)), millis(s[0]), millis(s[len(s)-1])
	return f
}

// --- Cohort: a cluster of node processes ---

type procCluster struct {
	cfg     *ElectConfig
	dir     string
	configs []string
	apis    []string
	cmds    []*exec.Cmd
	exited  []chan struct{}
	hc      *http.Client
}

func startProcCluster(ctx context.Context, cfg *ElectConfig) (_ *procCluster, err error) {
	n := cfg.Nodes
	dir, err := os.MkdirTemp("", "cohort-bench-elect-")
	if err != nil {
		return nil, err
	}
	cl := &procCluster{cfg: cfg, dir: dir, cmds: make([]*exec.Cmd, n), exited: make([]chan struct{}, n),
		hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	defer func() {
		if err != nil {
			cl.stop()
		}
	}()
	addrs, err := freeLoopbackAddrs(2 * n)
	if err != nil {
		return nil, err
	}
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	var peers []string
	for i := range n {
		peers = append(peers, fmt.Sprintf("%d: %s", i, addrs[i]))
	}
	election := ""
	if cfg.Heartbeat > 0 || cfg.Timeout > 0 || cfg.Phi > 0 {
		election = fmt.Sprintf("election: {heartbeat: %s, timeout: %s, phi: %g}\n", cfg.Heartbeat, cfg.Timeout, cfg.Phi)
	}
	for i := range n {
		api := addrs[n+i]
		// lock: raft puts the elections on the replicated log; a textbook
		// backend, on bully-fd.
		backend := "lock: ricart-agrawala\ngroup: total-sequencer\n"
		if cfg.Replicated {
			backend = fmt.Sprintf("lock: raft\ndata_dir: %s\n", filepath.Join(dir, fmt.Sprintf("node%d", i)))
		}
		conf := fmt.Sprintf("id: %d\nlisten: %s\napi: %s\npeers: {%s}\nsecret: %s\ncampaign: [%s]\n%s%s",
			i, addrs[i], api, strings.Join(peers, ", "), hex.EncodeToString(secret[:]), electionName, backend, election)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		cl.configs, cl.apis = append(cl.configs, path), append(cl.apis, api)
	}
	cfg.say("starting %d node processes", n)
	for i := range n {
		if err := cl.start(i); err != nil {
			return nil, err
		}
	}
	for i := range n {
		if err := cl.ready(ctx, i); err != nil {
			return nil, err
		}
	}
	if cfg.Replicated {
		if _, err := cl.agreeAny(ctx, cl.all(), proc.None, 20*time.Second); err != nil {
			return nil, fmt.Errorf("the cluster did not elect a leader: %w", err)
		}
		return cl, nil
	}
	if err := cl.agree(ctx, proc.ID(n-1), cl.all(), 20*time.Second); err != nil {
		return nil, fmt.Errorf("the cluster did not elect node %d: %w", n-1, err)
	}
	return cl, nil
}

// agreeAny waits until every node in nodes sees the same leader, not
// not, and returns it.
func (cl *procCluster) agreeAny(ctx context.Context, nodes []int, not proc.ID, limit time.Duration) (proc.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		lead, agreed := proc.None, true
		for _, i := range nodes {
			v, err := cl.client(i).Get(ctx, electionName)
			if err != nil || v.Leader == proc.None || v.Leader == not || (lead != proc.None && v.Leader != lead) {
				agreed = false
				break
			}
			lead = v.Leader
		}
		if agreed {
			return lead, nil
		}
		select {
		case <-ctx.Done():
			return proc.None, fmt.Errorf("nodes %v did not agree on a leader (other than %d) within %v", nodes, not, limit)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// failoverReplicated kills the node that leads (whichever it is),
// measures until every survivor reports another leader, and brings the
// killed node back (it follows the new one).
func (cl *procCluster) failoverReplicated(ctx context.Context) (time.Duration, error) {
	old, err := cl.agreeAny(ctx, cl.all(), proc.None, 20*time.Second)
	if err != nil {
		return 0, err
	}
	var survivors []int
	for _, i := range cl.all() {
		if proc.ID(i) != old {
			survivors = append(survivors, i)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	results := make(chan error, len(survivors))
	at := make(chan time.Time, len(survivors))
	endedAt := make(chan time.Time, len(survivors))
	ready := make(chan struct{}, len(survivors))
	for _, i := range survivors {
		views, _, err := cl.client(i).Watch(wctx, electionName)
		if err != nil {
			return 0, fmt.Errorf("watching node %d: %w", i, err)
		}
		go func() {
			first := true
			var ended time.Time // when this survivor saw old's leadership end
			for v := range views {
				if first {
					first = false
					ready <- struct{}{}
					continue
				}
				if ended.IsZero() && v.Leader != old {
					ended = v.Since
				}
				if v.Leader != proc.None && v.Leader != old {
					at <- time.Now()
					endedAt <- ended
					results <- nil
					return
				}
			}
			results <- fmt.Errorf("node %d: its watch ended without a new leader", i)
		}()
	}
	for range survivors {
		select {
		case <-ready:
		case <-wctx.Done():
			return 0, errors.New("watch streams did not start")
		}
	}
	killed := time.Now()
	if err := cl.cmds[old].Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	<-cl.exited[old]
	var last time.Time
	lapsed := false
	for range survivors {
		if err := <-results; err != nil {
			return 0, err
		}
		if t := <-at; t.After(last) {
			last = t
		}
		lapsed = lapsed || (<-endedAt).Before(killed)
	}
	cancel()
	d := last.Sub(killed)
	if err := cl.start(int(old)); err != nil {
		return d, err
	}
	if err := cl.ready(ctx, int(old)); err != nil {
		return d, err
	}
	if _, err := cl.agreeAny(ctx, cl.all(), proc.None, 20*time.Second); err != nil {
		return d, fmt.Errorf("node %d did not follow after its restart: %w", old, err)
	}
	if lapsed {
		return d, errLapsed
	}
	return d, nil
}

// errLapsed: the leadership ended before the kill — on a loaded machine
// the leader's renewals can come too late, and its lease runs out — so
// what followed was no failover from a kill, and the run does not count.
var errLapsed = errors.New("the leadership lapsed before the kill")

func (cl *procCluster) all() []int {
	var is []int
	for i := range cl.cfg.Nodes {
		is = append(is, i)
	}
	return is
}

func (cl *procCluster) start(i int) error {
	cmd := cl.cfg.NodeCommand(cl.configs[i])
	logf, err := os.OpenFile(filepath.Join(cl.dir, fmt.Sprintf("node%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting node %d: %w", i, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	cl.cmds[i], cl.exited[i] = cmd, done
	return nil
}

// ready waits until node i's API answers.
func (cl *procCluster) ready(ctx context.Context, i int) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+cl.apis[i]+"/v1/health", nil)
		if resp, err := cl.hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-cl.exited[i]:
			return fmt.Errorf("node %d exited at start; its log: %s", i, cl.logTail(i))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d's API did not answer within 20s", i)
		}
	}
}

func (cl *procCluster) logTail(i int) string {
	b, _ := os.ReadFile(filepath.Join(cl.dir, fmt.Sprintf("node%d.log", i)))
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return string(b)
}

func (cl *procCluster) client(i int) *leader.Client {
	return &leader.Client{Endpoints: []string{cl.apis[i]}, HTTP: cl.hc}
}

// agree waits until every node in nodes sees leader.
func (cl *procCluster) agree(ctx context.Context, want proc.ID, nodes []int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for _, i := range nodes {
		for {
			v, err := cl.client(i).Get(ctx, electionName)
			if err == nil && v.Leader == want {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %d sees %d, not %d, after %v (%v)", i, v.Leader, want, limit, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// failover kills the leader (the highest node), measures until every
// survivor reports the next-highest, and brings the killed node back.
func (cl *procCluster) failover(ctx context.Context) (time.Duration, error) {
	n := cl.cfg.Nodes
	old, next := n-1, proc.ID(n-2)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	type seen struct {
		at  time.Time
		err error
	}
	results := make(chan seen, n-1)
	ready := make(chan struct{}, n-1)
	for i := range n - 1 {
		views, _, err := cl.client(i).Watch(wctx, electionName)
		if err != nil {
			return 0, fmt.Errorf("watching node %d: %w", i, err)
		}
		go func() {
			first := true
			for v := range views {
				if first {
					first = false
					ready <- struct{}{}
					if v.Leader != proc.ID(old) {
						results <- seen{err: fmt.Errorf("node %d followed %d before the kill, not %d", i, v.Leader, old)}
						return
					}
					continue
				}
				switch v.Leader {
				case next:
					results <- seen{at: time.Now()}
					return
				case proc.None:
				default:
					results <- seen{err: fmt.Errorf("node %d turned to %d, not %d", i, v.Leader, next)}
					return
				}
			}
			results <- seen{err: fmt.Errorf("node %d: its watch ended without a new leader", i)}
		}()
	}
	for range n - 1 {
		select {
		case <-ready:
		case <-wctx.Done():
			return 0, errors.New("watch streams did not start")
		}
	}
	killed := time.Now()
	if err := cl.cmds[old].Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	<-cl.exited[old]
	var last time.Time
	for range n - 1 {
		s := <-results
		if s.err != nil {
			return 0, s.err
		}
		if s.at.After(last) {
			last = s.at
		}
	}
	cancel()
	d := last.Sub(killed)
	if err := cl.start(old); err != nil {
		return d, err
	}
	if err := cl.ready(ctx, old); err != nil {
		return d, err
	}
	if err := cl.agree(ctx, proc.ID(old), cl.all(), 20*time.Second); err != nil {
		return d, fmt.Errorf("node %d did not come back as the leader: %w", old, err)
	}
	return d, nil
}

func (cl *procCluster) stop() {
	for i, cmd := range cl.cmds {
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cl.exited[i]:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-cl.exited[i]
		}
	}
	cl.hc.CloseIdleConnections()
	os.RemoveAll(cl.dir)
}

// --- etcd: campaigners on the v3 JSON gateway ---

type etcdElection struct {
	e    *etcdServer
	ttl  time.Duration
	name []byte
	won  chan *etcdCandidate
	cs   []*etcdCandidate
	lead *etcdCandidate
}

type etcdCandidate struct {
	c      *etcdClient
	cancel context.CancelFunc
	value  []byte
}

func newEtcdElection(ctx context.Context, e *etcdServer, n int, ttl time.Duration) (*etcdElection, error) {
	el := &etcdElection{e: e, ttl: ttl, name: []byte(electionName), won: make(chan *etcdCandidate, n)}
	for i := range n {
		if _, err := el.campaign(ctx, i); err != nil {
			el.close()
			return nil, err
		}
	}
	select {
	case el.lead = <-el.won:
	case <-time.After(10 * time.Second):
		el.close()
		return nil, errors.New("no etcd campaigner won within 10s")
	}
	return el, nil
}

// campaign starts candidate i: a fresh lease, kept alive every ttl/3, and
// a campaign call that reports on el.won when it returns.
func (el *etcdElection) campaign(ctx context.Context, i int) (*etcdCandidate, error) {
	c := &etcdClient{url: el.e.url, hc: newHTTPClient(), name: el.name}
	var out struct {
		ID int64 `json:"ID,string"`
	}
	if err := c.call(ctx, "/v3/lease/grant", map[string]any{"TTL": int64(el.ttl / time.Second)}, &out); err != nil {
		return nil, fmt.Errorf("lease grant: %w", err)
	}
	c.lease = out.ID
	cctx, cancel := context.WithCancel(context.Background())
	cand := &etcdCandidate{c: c, cancel: cancel, value: []byte(fmt.Sprint(i))}
	el.cs = append(el.cs, cand)
	go func() {
		t := time.NewTicker(el.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
				_ = c.call(cctx, "/v3/lease/keepalive", struct {
					ID int64 `json:"ID,string"`
				}{c.lease}, nil)
			}
		}
	}()
	go func() {
		in := struct {
			Name  []byte `json:"name"`
			Lease int64  `json:"lease,string"`
			Value []byte `json:"value"`
		}{el.name, c.lease, cand.value}
		if err := c.call(cctx, "/v3/election/campaign", in, nil); err == nil {
			el.won <- cand
		}
	}()
	return cand, nil
}

// failover kills the leading campaigner and waits for the next to win.
func (el *etcdElection) failover(ctx context.Context) (time.Duration, error) {
	dead := el.lead
	killed := time.Now()
	dead.cancel() // no more keep-alives, no revoke: a process that died
	dead.c.hc.CloseIdleConnections()
	select {
	case el.lead = <-el.won:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(el.ttl + 10*time.Second):
		return 0, errors.New("no campaigner took over")
	}
	d := time.Since(killed)
	// The dead campaigner's process restarts and campaigns again.
	if _, err := el.campaign(ctx, len(el.cs)); err != nil {
		return d, err
	}
	return d, nil
}

func (el *etcdElection) close() {
	for _, c := range el.cs {
		c.cancel()
		c.c.close()
	}
}
