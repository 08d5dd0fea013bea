package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/members"
	"github.com/hashicorp/memberlist"
)

// The same measurements as Gossip, of HashiCorp's Serf agent (Debian's
// serf package) with its LAN profile: memberlist underneath (probe every
// 1 s, gossip every 200 ms to 3 members), user events rebroadcast by
// every agent that receives one. Each agent is its own process on
// loopback, every one joining the first.
//
// What an agent observes is read from its log (debug level), each line
// timestamped as it arrives through the pipe: "serf: EventMemberJoin: X",
// "serf: messageUserEventType: NAME" (a user event received, before the
// agent's own coalescing), "serf: EventMemberFailed: X", and memberlist's
// "Suspect X has failed" and "Marking X as failed".
//
// Idle traffic is counted when the agents can run in a network namespace
// of their own (unshare -n, which needs root): its loopback interface
// then carries their traffic only, and /proc/PID/net/{dev,snmp} count it.
// The figure is payload bytes — loopback's byte count less the link, IP,
// UDP and TCP headers (14 + 20 bytes a packet, 8 a datagram, 32 a TCP
// segment with timestamps) — and messages are UDP datagrams plus TCP
// connections opened, as the memberlist side counts them. Without a
// namespace the loopback is shared with the rest of the machine and the
// idle figures are NaN.

// serfAgent is one serf agent process and what its log said.
type serfAgent struct {
	name string
	rpc  string
	cmd  *exec.Cmd
	done chan struct{}

	mu      sync.Mutex
	joined  map[string]time.Time // member → first EventMemberJoin
	events  map[string]time.Time // user event name → first received
	sent    map[string]time.Time // user event name → the agent was asked to send it
	failed  map[string]time.Time // member → first EventMemberFailed
	suspect []serfVerdict        // every suspicion or failure, in order
}

type serfVerdict struct {
	member string
	at     time.Time
}

var serfLine = regexp.MustCompile(`(EventMemberJoin|EventMemberFailed|messageUserEventType|Requesting user event send|memberlist: Suspect|memberlist: Marking):? (\S+)`)

func (a *serfAgent) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		now := time.Now()
		m := serfLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		what, name := m[1], strings.TrimSuffix(m[2], ".")
		a.mu.Lock()
		first := func(mp map[string]time.Time) {
			if _, ok := mp[name]; !ok {
				mp[name] = now
			}
		}
		switch what {
		case "EventMemberJoin":
			first(a.joined)
		case "messageUserEventType":
			first(a.events)
		case "Requesting user event send":
			first(a.sent)
		case "EventMemberFailed":
			first(a.failed)
			a.suspect = append(a.suspect, serfVerdict{name, now})
		default: // a suspicion or a failure, memberlist's words
			a.suspect = append(a.suspect, serfVerdict{name, now})
		}
		a.mu.Unlock()
	}
}

// seen is when the agent first saw key in the map pick chooses.
func (a *serfAgent) seen(pick func(*serfAgent) map[string]time.Time, key string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := pick(a)[key]
	return t, ok
}

// serfCluster is n agents, in a network namespace of their own when one
// could be made.
type serfCluster struct {
	bin    string
	dir    string
	ns     *exec.Cmd // holds the namespace; nil: the machine's
	agents []*serfAgent
}

// serfBinary is the serf agent's path, or "" if it is not installed.
func serfBinary() string {
	p, err := exec.LookPath("serf")
	if err != nil {
		return ""
	}
	return p
}

// newNamespace starts a process holding a fresh network namespace with
// loopback up; nil if this machine does not allow it. It lives at most
// ten minutes.
func newNamespace() *exec.Cmd {
	if _, err := exec.LookPath("unshare"); err != nil {
		return nil
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return nil
	}
	cmd := exec.Command("unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep 600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil
	}
	if cmd.Start() != nil {
		return nil
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "up\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	}
	return cmd
}

// command runs name in the cluster's namespace.
func (c *serfCluster) command(name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if c.ns != nil {
		cmd = exec.Command("nsenter", append([]string{"-t", strconv.Itoa(c.ns.Process.Pid), "-n", name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startSerf starts n agents, each bound to its own loopback port with
// its own RPC address, every one but the first joining the first. The
// caller must close the cluster.
func startSerf(n int) (*serfCluster, error) {
	c := &serfCluster{bin: serfBinary()}
	if c.bin == "" {
		return nil, errors.New("serf is not installed")
	}
	dir, err := os.MkdirTemp("", "cohort-bench-serf-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	c.ns = newNamespace()
	var addrs []string
	if c.ns != nil {
		// The namespace is empty: every port is free.
		for i := range 2 * n {
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", 20000+i))
		}
	} else if addrs, err = freeLoopbackAddrs(2 * n); err != nil {
		c.close()
		return nil, err
	}
	for i := range n {
		a := &serfAgent{name: fmt.Sprintf("m%d", i), rpc: addrs[n+i], done: make(chan struct{}),
			joined: map[string]time.Time{}, events: map[string]time.Time{}, sent: map[string]time.Time{}, failed: map[string]time.Time{}}
		args := []string{"agent", "-node=" + a.name, "-bind=" + addrs[i], "-rpc-addr=" + a.rpc, "-log-level=debug"}
		if i > 0 {
			args = append(args, "-join="+addrs[0])
		}
		a.cmd = c.command(c.bin, args...)
		out, err := a.cmd.StdoutPipe()
		if err != nil {
			c.close()
			return nil, err
		}
		a.cmd.Stderr = a.cmd.Stdout
		if err := a.cmd.Start(); err != nil {
			c.close()
			return nil, err
		}
		go func() {
			a.read(out)
			a.cmd.Wait()
			close(a.done)
		}()
		c.agents = append(c.agents, a)
		if i == 0 {
			// The others join it: wait until it listens.
			if err := c.waitRPC(a); err != nil {
				c.close()
				return nil, err
			}
		}
	}
	return c, nil
}

// waitRPC waits until agent a answers "serf members".
func (c *serfCluster) waitRPC(a *serfAgent) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c.command(c.bin, "members", "-rpc-addr="+a.rpc).Run() == nil {
			return nil
		}
		select {
		case <-a.done:
			return fmt.Errorf("serf agent %s exited at start", a.name)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("serf agent %s did not answer within 20s", a.name)
}

func (c *serfCluster) close() {
	for _, a := range c.agents {
		if a.cmd.Process != nil {
			a.cmd.Process.Kill()
			<-a.done
		}
	}
	if c.ns != nil {
		c.ns.Process.Kill()
		c.ns.Wait()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// untilAll waits until every agent of as has key in the map pick
// chooses, and returns the latest time; a minute at most.
func untilAll(ctx context.Context, as []*serfAgent, pick func(*serfAgent) map[string]time.Time, key func(*serfAgent) []string) (time.Time, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		var last time.Time
		all := true
		for _, a := range as {
			for _, k := range key(a) {
				t, ok := a.seen(pick, k)
				if !ok {
					all = false
					break
				}
				if t.After(last) {
					last = t
				}
			}
			if !all {
				break
			}
		}
		if all {
			return last, nil
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, errors.New("not every agent saw it within a minute")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// loCounters are the namespace's loopback counters: bytes and packets
// sent, UDP datagrams sent, TCP segments sent, TCP connections opened.
func (c *serfCluster) loCounters() (bytes, packets, udp, segs, opens float64, ok bool) {
	if c.ns == nil {
		return 0, 0, 0, 0, 0, false
	}
	pid := strconv.Itoa(c.ns.Process.Pid)
	dev, err := os.ReadFile(filepath.Join("/proc", pid, "net", "dev"))
	if err != nil {
		return 0, 0, 0, 0, 0, false
	}
	for _, l := range strings.Split(string(dev), "\n") {
		f := strings.Fields(strings.ReplaceAll(l, ":", " "))
		if len(f) >= 11 && f[0] == "lo" {
			bytes, _ = strconv.ParseFloat(f[9], 64)
			packets, _ = strconv.ParseFloat(f[10], 64)
		}
	}
	snmp, err := os.ReadFile(filepath.Join("/proc", pid, "net", "snmp"))
	if err != nil {
		return 0, 0, 0, 0, 0, false
	}
	// Pairs of lines: "Udp: names..." then "Udp: values...".
	lines := strings.Split(string(snmp), "\n")
	field := func(proto, name string) float64 {
		for i := 0; i+1 < len(lines); i++ {
			if !strings.HasPrefix(lines[i], proto+":") || !strings.HasPrefix(lines[i+1], proto+":") {
				continue
			}
			names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			for j := range names {
				if names[j] == name && j < len(vals) {
					v, _ := strconv.ParseFloat(vals[j], 64)
					return v
				}
			}
		}
		return 0
	}
	return bytes, packets, field("Udp", "OutDatagrams"), field("Tcp", "OutSegs"), field("Tcp", "ActiveOpens"), true
}

// serfGossip measures n serf agents as Gossip measures Cohort: formed,
// broadcasts (64-byte user events, each from another agent), idle
// traffic, and, if detect, the time from SIGKILL of the last agent until
// every other holds it failed.
func serfGossip(ctx context.Context, n, broadcasts int, idle time.Duration, detect bool) (GossipResult, error) {
	res := GossipResult{Members: n}
	start := time.Now()
	c, err := startSerf(n)
	if err != nil {
		return res, err
	}
	defer c.close()
	everyName := func(*serfAgent) []string {
		var names []string
		for _, a := range c.agents {
			names = append(names, a.name)
		}
		return names
	}
	last, err := untilAll(ctx, c.agents, func(a *serfAgent) map[string]time.Time { return a.joined }, everyName)
	if err != nil {
		return res, fmt.Errorf("forming: %w", err)
	}
	res.Formed = last.Sub(start)

	payload := strings.Repeat("x", 64)
	for k := range broadcasts {
		name := fmt.Sprintf("b%d", k)
		sender := c.agents[1+k%(n-1)]
		if out, err := c.command(c.bin, "event", "-coalesce=false", "-rpc-addr="+sender.rpc, name, payload).CombinedOutput(); err != nil {
			return res, fmt.Errorf("serf event: %v: %s", err, out)
		}
		var others []*serfAgent
		for _, a := range c.agents {
			if a != sender {
				others = append(others, a)
			}
		}
		last, err := untilAll(ctx, others, func(a *serfAgent) map[string]time.Time { return a.events }, func(*serfAgent) []string { return []string{name} })
		if err != nil {
			return res, fmt.Errorf("event %s: %w", name, err)
		}
		// The sender's log is read by its own goroutine, which a loaded
		// machine may run after the others': wait for its line as well.
		sent, err := untilAll(ctx, []*serfAgent{sender}, func(a *serfAgent) map[string]time.Time { return a.sent }, func(*serfAgent) []string { return []string{name} })
		if err != nil {
			return res, fmt.Errorf("agent %s did not log sending %s: %w", sender.name, name, err)
		}
		res.All = append(res.All, last.Sub(sent))
	}
	res.Broadcast = median(res.All)

	b0, p0, u0, s0, o0, ok := c.loCounters()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(idle):
	}
	b1, p1, u1, s1, o1, _ := c.loCounters()
	secs := idle.Seconds() * float64(n)
	if ok {
		payload := (b1 - b0) - 34*(p1-p0) - 8*(u1-u0) - 32*(s1-s0)
		res.BytesPerSecond = payload / secs
		res.MessagesPerSecond = ((u1 - u0) + (o1 - o0)) / secs
	} else {
		res.BytesPerSecond, res.MessagesPerSecond = math.NaN(), math.NaN()
	}

	if detect {
		victim := c.agents[n-1]
		killed := time.Now()
		victim.cmd.Process.Signal(syscall.SIGKILL)
		last, err := untilAll(ctx, c.agents[:n-1], func(a *serfAgent) map[string]time.Time { return a.failed }, func(*serfAgent) []string { return []string{victim.name} })
		if err != nil {
			return res, fmt.Errorf("detecting: %w", err)
		}
		res.Detected = last.Sub(killed)
	}
	return res, nil
}

// StallResult is what a stall did: the stalled member is stopped
// (SIGSTOP) for Stall, resumed, and watched for After more.
type StallResult struct {
	Members int
	// StalledDeclared: whether any member declared the stalled one
	// suspect, dead or failed (expected).
	StalledDeclared bool
	// FalsePositives: healthy members that some member declared suspect,
	// dead or failed during the stall or after it.
	FalsePositives int
	// Declared: the healthy members declared, and by how many verdicts.
	Declared map[string]int
	// ByOthers: healthy members declared by a member other than the
	// stalled one (which, resumed, may suspect those whose answers it
	// missed while stopped).
	ByOthers int
	byOthers map[string]bool
}

// declare records a verdict by member by on member of; victim is the
// stalled member.
func (r *StallResult) declare(by, of, victim string) {
	if of == victim {
		r.StalledDeclared = true
		return
	}
	r.Declared[of]++
	if by != victim {
		if r.byOthers == nil {
			r.byOthers = map[string]bool{}
		}
		r.byOthers[of] = true
	}
	r.FalsePositives, r.ByOthers = len(r.Declared), len(r.byOthers)
}

// serfStall: n agents formed, agent 1 stopped for stall, then watched
// for after.
func serfStall(ctx context.Context, n int, settle, stall, after time.Duration) (StallResult, error) {
	res := StallResult{Members: n, Declared: map[string]int{}}
	c, err := startSerf(n)
	if err != nil {
		return res, err
	}
	defer c.close()
	names := func(*serfAgent) []string {
		var ns []string
		for _, a := range c.agents {
			ns = append(ns, a.name)
		}
		return ns
	}
	if _, err := untilAll(ctx, c.agents, func(a *serfAgent) map[string]time.Time { return a.joined }, names); err != nil {
		return res, fmt.Errorf("forming: %w", err)
	}
	sleepCtx(ctx, settle)
	victim := c.agents[1]
	from := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return res, err
	}
	sleepCtx(ctx, stall)
	if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return res, err
	}
	sleepCtx(ctx, after)
	for _, a := range c.agents {
		a.mu.Lock()
		for _, v := range a.suspect {
			if v.at.Before(from) {
				continue
			}
			res.declare(a.name, v.member, victim.name)
		}
		a.mu.Unlock()
	}
	return res, ctx.Err()
}

// cohortBinary builds the cohort command once per test binary.
var cohortBuild struct {
	sync.Once
	path string
	err  error
}

// TestMain removes the cohort binary built for the stall benchmark.
func TestMain(m *testing.M) {
	code := m.Run()
	if cohortBuild.path != "" {
		os.RemoveAll(filepath.Dir(cohortBuild.path))
	}
	os.Exit(code)
}

func cohortBinary() (string, error) {
	cohortBuild.Do(func() {
		dir, err := os.MkdirTemp("", "cohort-bench-bin-")
		if err != nil {
			cohortBuild.err = err
			return
		}
		cohortBuild.path = filepath.Join(dir, "cohort")
		if out, err := exec.Command("go", "build", "-o", cohortBuild.path, "github.com/cohort-go/cohort/cmd/cohort").CombinedOutput(); err != nil {
			cohortBuild.err = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	return cohortBuild.path, cohortBuild.err
}

// cohortStall runs n `cohort node` processes with the membership service
// (node 0 founds the cluster, the others join through it), stops node 1
// for stall, resumes it, and watches for after more, through every
// node's watch stream (GET /v1/watch).
// gossipStallPeriod is the gossip_period of the nodes cohortStall starts;
// 0: the default.
var gossipStallPeriod = flag.Duration("gossip.stallperiod", 0, "the SWIM period (gossip_period) of the cohort nodes BenchmarkGossipBesideSerf stalls one of; 0: the default")

func cohortStall(ctx context.Context, n int, settle, stall, after time.Duration) (StallResult, error) {
	res := StallResult{Members: n, Declared: map[string]int{}}
	bin, err := cohortBinary()
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "cohort-bench-stall-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	addrs, err := freeLoopbackAddrs(2 * n)
	if err != nil {
		return res, err
	}
	secret := strings.Repeat("s", 32)
	var cmds []*exec.Cmd
	var exited []chan struct{}
	defer func() {
		for i, c := range cmds {
			c.Process.Kill()
			<-exited[i]
		}
	}()
	for i := range n {
		conf := fmt.Sprintf("id: %d\nlisten: %s\napi: %s\nsecret: %s\n", i, addrs[i], addrs[n+i], secret)
		if *gossipStallPeriod > 0 {
			conf += fmt.Sprintf("gossip_period: %v\n", *gossipStallPeriod)
		}
		var args []string
		if i == 0 {
			conf += fmt.Sprintf("peers: {0: %s}\nmembers: true\nlock: ricart-agrawala\ngroup: total-sequencer\n", addrs[0])
		} else {
			args = []string{"--join", "0@" + addrs[0]}
		}
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return res, err
		}
		cmd := exec.Command(bin, append([]string{"node", "--config", path}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("node%d.log", i)))
		if err != nil {
			return res, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			return res, err
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); logf.Close(); close(done) }()
		cmds, exited = append(cmds, cmd), append(exited, done)
	}
	hc := &http.Client{}
	client := func(i int) *members.Client {
		return &members.Client{Endpoints: []string{addrs[n+i]}, HTTP: hc}
	}
	// Formed: every node lists n members alive.
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < n; {
		ms, err := client(i).Members(ctx)
		alive := 0
		for _, m := range ms {
			if m.State == "alive" {
				alive++
			}
		}
		if err == nil && alive == n {
			i++
			continue
		}
		select {
		case <-exited[i]:
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)))
			return res, fmt.Errorf("node %d exited: %s", i, b)
		default:
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return res, fmt.Errorf("node %d lists %d alive of %d after a minute (%v)", i, alive, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var mu sync.Mutex
	var from time.Time
	const victim = 1
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(i).Watch(wctx, func(e members.Event) {
				if (e.Type != "suspect" && e.Type != "dead") || e.Member == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if from.IsZero() {
					return
				}
				res.declare(strconv.Itoa(i), strconv.Itoa(*e.Member), strconv.Itoa(victim))
			})
		}()
	}
	sleepCtx(ctx, settle) // the watch streams open
	mu.Lock()
	from = time.Now()
	mu.Unlock()
	if err := cmds[victim].Process.Signal(syscall.SIGSTOP); err != nil {
		return res, err
	}
	sleepCtx(ctx, stall)
	if err := cmds[victim].Process.Signal(syscall.SIGCONT); err != nil {
		return res, err
	}
	sleepCtx(ctx, after)
	mu.Lock()
	defer mu.Unlock()
	return res, ctx.Err()
}

// stallTransport holds a memberlist member's I/O while stalled: sends,
// dials and the delivery of what arrives wait until it resumes, as they
// would in a process stopped by SIGSTOP. Its timers still run (a stopped
// process's do not), so this is a stall of its I/O only.
type stallTransport struct {
	*countingTransport
	mu      sync.Mutex
	resume  chan struct{} // nil: running
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
}

func newStallTransport(t *countingTransport) *stallTransport {
	s := &stallTransport{countingTransport: t, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn), done: make(chan struct{})}
	go forward(s, t.NetTransport.PacketCh(), s.packets)
	go forward(s, t.NetTransport.StreamCh(), s.streams)
	return s
}

func forward[T any](s *stallTransport, from <-chan T, to chan<- T) {
	for {
		select {
		case x := <-from:
			s.wait()
			select {
			case to <- x:
			case <-s.done:
				return
			}
		case <-s.done:
			return
		}
	}
}

// Stop holds the member's I/O; the function returned resumes it.
func (s *stallTransport) Stop() func() {
	c := make(chan struct{})
	s.mu.Lock()
	s.resume = c
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.resume = nil
		s.mu.Unlock()
		close(c)
	}
}

func (s *stallTransport) wait() {
	s.mu.Lock()
	c := s.resume
	s.mu.Unlock()
	if c != nil {
		<-c
	}
}

func (s *stallTransport) PacketCh() <-chan *memberlist.Packet { return s.packets }
func (s *stallTransport) StreamCh() <-chan net.Conn           { return s.streams }

func (s *stallTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	s.wait()
	return s.countingTransport.WriteTo(b, addr)
}

func (s *stallTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	s.wait()
	return s.countingTransport.WriteToAddress(b, addr)
}

func (s *stallTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return s.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (s *stallTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	s.wait()
	return s.countingTransport.DialAddressTimeout(addr, timeout)
}

func (s *stallTransport) Shutdown() error {
	close(s.done)
	return s.countingTransport.Shutdown()
}

// verdictLog collects, from memberlist's log, the members it suspected
// or declared failed ("Suspect X has failed", "Marking X as failed").
type verdictLog struct {
	mu       sync.Mutex
	verdicts []serfVerdict
}

func (v *verdictLog) Write(b []byte) (int, error) {
	now := time.Now()
	for _, l := range strings.Split(string(b), "\n") {
		if m := serfLine.FindStringSubmatch(l); m != nil && (m[1] == "memberlist: Suspect" || m[1] == "memberlist: Marking") {
			v.mu.Lock()
			v.verdicts = append(v.verdicts, serfVerdict{m[2], now})
			v.mu.Unlock()
		}
	}
	return len(b), nil
}

// memberlistStall: n memberlist members formed, member 1's I/O held for
// stall (see stallTransport), then watched for after.
func memberlistStall(ctx context.Context, n int, settle, stall, after time.Duration) (StallResult, error) {
	res := StallResult{Members: n, Declared: map[string]int{}}
	ms := make([]*mlMember, n)
	logs := make([]*verdictLog, n)
	defer func() {
		for _, m := range ms {
			if m != nil {
				m.list.Shutdown()
			}
		}
	}()
	for i := range n {
		logs[i] = &verdictLog{}
		m, err := newMLMemberWith(i, n, logs[i], true)
		if err != nil {
			return res, err
		}
		ms[i] = m
		if i > 0 {
			if _, err := m.list.Join([]string{ms[0].list.LocalNode().Address()}); err != nil {
				return res, err
			}
		}
	}
	// Forming, 64 members in one process take more than a minute on a
	// loaded machine (see BenchmarkGossipBesideMemberlist).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		all := true
		for _, m := range ms {
			all = all && m.list.NumMembers() == n
		}
		if all {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return res, errors.New("memberlist did not form within 3 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sleepCtx(ctx, settle)
	victim := ms[1]
	from := time.Now()
	resume := victim.stall.Stop()
	sleepCtx(ctx, stall)
	resume()
	sleepCtx(ctx, after)
	for i, l := range logs {
		l.mu.Lock()
		for _, v := range l.verdicts {
			if v.at.Before(from) {
				continue
			}
			res.declare(ms[i].name, v.member, victim.name)
		}
		l.mu.Unlock()
		ms[i].left.Range(func(k, t any) bool {
			if t.(time.Time).After(from) {
				res.declare(ms[i].name, k.(string), victim.name)
			}
			return true
		})
	}
	return res, ctx.Err()
}

// TestGossipBesideSerf runs four serf agents and checks what the
// benchmark reads from them: they form, every user event reaches every
// agent, the idle traffic is counted (when a network namespace could be
// made), and a 2 s SIGSTOP of one agent is watched. Skipped only when
// the serf agent is not installed. SIGKILL detection, Cohort's and
// memberlist's stalls are measured by BenchmarkGossipBesideSerf.
func TestGossipBesideSerf(t *testing.T) {
	if serfBinary() == "" {
		t.Skip("serf is not installed (Debian: apt-get install serf)")
	}
	ctx := context.Background()
	r, err := serfGossip(ctx, 4, 2, 500*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serf: formed %v, broadcast %v %v, idle %.1f msgs %.0f bytes per member and second",
		r.Formed.Round(time.Millisecond), r.Broadcast.Round(100*time.Microsecond), r.All, r.MessagesPerSecond, r.BytesPerSecond)
	if r.Formed <= 0 || r.Broadcast <= 0 || len(r.All) != 2 || r.BytesPerSecond <= 0 && !math.IsNaN(r.BytesPerSecond) {
		t.Errorf("%+v", r)
	}
	s, err := serfStall(ctx, 4, 0, 2*time.Second, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serf, one agent stopped for 2 s: stalled one declared %v, healthy ones declared %v", s.StalledDeclared, s.Declared)
}

// BenchmarkGossipBesideSerf: Cohort's membership service, memberlist and
// serf agents, 32 members, alternated in one run, measured as
// BenchmarkGossipBesideMemberlist measures (Serf's idle figures are NaN
// where no network namespace can be made); then each with one member
// stopped for 2 s (SIGSTOP; memberlist's I/O held, see stallTransport)
// and watched 10 s more: false positives are healthy members that any
// member declared suspect, dead or failed.
//
//	go test -run '^$' -bench GossipBesideSerf -benchtime 1x -count 3 ./bench
func BenchmarkGossipBesideSerf(b *testing.B) {
	if serfBinary() == "" {
		b.Skip("serf is not installed (Debian: apt-get install serf)")
	}
	ctx := context.Background()
	for _, n := range gossipSizes() {
		for _, who := range []string{"cohort", "memberlist", "serf"} {
			b.Run(fmt.Sprintf("%s/members=%d", who, n), func(b *testing.B) {
				for range b.N {
					var r GossipResult
					var err error
					switch who {
					case "cohort":
						r, err = Gossip(ctx, GossipConfig{Members: n, Broadcasts: 5})
					case "memberlist":
						r, err = memberlistGossip(ctx, n, 5, 3*time.Second)
					default:
						r, err = serfGossip(ctx, n, 5, 3*time.Second, true)
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
		if testing.Short() {
			continue // the stalls take 13 s each; TestGossipBesideSerf stalls one at 4 members
		}
		for _, who := range []string{"cohort", "memberlist", "serf"} {
			b.Run(fmt.Sprintf("stall/%s/members=%d", who, n), func(b *testing.B) {
				for range b.N {
					var r StallResult
					var err error
					switch who {
					case "cohort":
						r, err = cohortStall(ctx, n, time.Second, 2*time.Second, 10*time.Second)
					case "memberlist":
						r, err = memberlistStall(ctx, n, time.Second, 2*time.Second, 10*time.Second)
					default:
						r, err = serfStall(ctx, n, time.Second, 2*time.Second, 10*time.Second)
					}
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("%s, %d members, one stopped 2 s: stalled one declared %v; healthy ones declared (verdicts) %v", who, n, r.StalledDeclared, r.Declared)
					b.ReportMetric(float64(r.FalsePositives), "false-positives")
					b.ReportMetric(float64(r.ByOthers), "false-positives-by-others")
					stalled := 0.0
					if r.StalledDeclared {
						stalled = 1
					}
					b.ReportMetric(stalled, "stalled-declared")
				}
			})
		}
	}
}
