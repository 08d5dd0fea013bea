package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/livetest"
	"github.com/cohort-go/cohort/queue"
)

// producer puts fresh bodies through a Publisher until stop, and records
// which were acknowledged.
type producer struct {
	p     *queue.Publisher
	mu    sync.Mutex
	acked map[string]bool
	sent  int
	errs  []error
	stop  chan struct{}
	loop  chan struct{} // closed when it puts no more
	done  sync.WaitGroup
}

func startProducer(p *queue.Publisher) *producer {
	pr := &producer{p: p, acked: map[string]bool{}, stop: make(chan struct{}), loop: make(chan struct{})}
	pr.done.Add(1)
	go func() {
		defer pr.done.Done()
		var answers sync.WaitGroup
		defer answers.Wait()
		defer close(pr.loop)
		for i := 0; ; i++ {
			select {
			case <-pr.stop:
				return
			default:
			}
			body := fmt.Sprintf("m%06d", i)
			a := p.PutAsync([]byte(body))
			pr.mu.Lock()
			pr.sent++
			pr.mu.Unlock()
			answers.Go(func() {
				<-a.Done()
				_, err := a.Result()
				pr.mu.Lock()
				defer pr.mu.Unlock()
				if err != nil {
					pr.errs = append(pr.errs, fmt.Errorf("%s: %w", body, err))
					return
				}
				pr.acked[body] = true
			})
		}
	}()
	return pr
}

// failure is the first put that failed, if any.
func (pr *producer) failure() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if len(pr.errs) == 0 {
		return nil
	}
	return pr.errs[0]
}

// acknowledged is how many puts were acknowledged so far.
func (pr *producer) acknowledged() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return len(pr.acked)
}

// finish stops producing and waits for every put's outcome: the
// Publisher closed (ctx bounds it).
func (pr *producer) finish(ctx context.Context, t *testing.T) {
	t.Helper()
	close(pr.stop)
	<-pr.loop
	err := pr.p.Close(ctx)
	pr.done.Wait()
	if err != nil {
		t.Fatalf("closing the Publisher: %v", err)
	}
	if len(pr.errs) > 0 {
		t.Fatalf("%d puts failed, the first: %v", len(pr.errs), pr.errs[0])
	}
}

// check judges what the queues hold (each body's count) against the
// puts: every acknowledged one exactly once, none stored twice.
func (pr *producer) check(t *testing.T, seen map[string]int) {
	t.Helper()
	for b := range pr.acked {
		if seen[b] != 1 {
			t.Errorf("%s acknowledged, stored %d times", b, seen[b])
		}
	}
	for b, n := range seen {
		if n > 1 {
			t.Errorf("%s stored %d times", b, n)
		}
	}
	if len(pr.acked) == 0 {
		t.Fatal("no put acknowledged")
	}
}

// TestPublisherSurvivesKill9 runs a node of its own queues in a child
// process (this test binary again, serving the API on one address) and
// SIGKILLs it at random moments while a Publisher streams to it, many
// times; each time the node comes back on its disk at the same address.
// The Publisher's second endpoint is another node (in this process),
// which must not receive the puts in doubt on the first. After the last
// restart every acknowledged put is on the nodes exactly once.
func TestPublisherSurvivesKill9(t *testing.T) {
	if dir := os.Getenv("COHORT_PUBLISH_CHILD"); dir != "" {
		publishChild(dir, os.Getenv("COHORT_PUBLISH_ADDR"))
		return
	}
	runs := 12
	if queue.RaceEnabled || testing.Short() {
		runs = 5
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := ""
	start := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestPublisherSurvivesKill9$")
		cmd.Env = append(os.Environ(), "COHORT_PUBLISH_CHILD="+dir, "COHORT_PUBLISH_ADDR="+addr)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		listening := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
					listening <- a
				}
			}
			io.Copy(io.Discard, out)
		}()
		select {
		case a := <-listening:
			addr = a
		case <-time.After(30 * time.Second):
			t.Fatal("the child did not start")
		}
		return cmd
	}
	cmd := start()
	other := startOwnNode(t, t.TempDir())
	c := &queue.Client{Endpoints: []string{"http://" + addr, other.srv.URL}, Token: token}
	p, err := c.Publish(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	p.Retry = time.Minute
	pr := startProducer(p)
	for run := range runs {
		// Kill at a random moment once this incarnation acknowledged a put.
		at := pr.acknowledged()
		for pr.acknowledged() == at {
			if ctx.Err() != nil || pr.failure() != nil {
				t.Fatalf("run %d: no put acknowledged (%v); %d streams", run, pr.failure(), p.Streams())
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cmd = start()
	}
	at := pr.acknowledged()
	waitUntil(ctx, t, "a put acknowledged after the last restart", func() bool { return pr.acknowledged() > at })
	pr.finish(ctx, t)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	m, err := queue.Open(queue.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seen := map[string]int{}
	drain(t, m, "jobs", seen)
	onOther := map[string]int{}
	drain(t, other.m, "jobs", onOther)
	for b, n := range onOther {
		seen[b] += n
	}
	pr.check(t, seen)
	t.Logf("%d kills: %d puts acknowledged, %d on the killed node, %d on the other; %d streams", runs, len(pr.acked), len(seen)-len(onOther), len(onOther), p.Streams())
}

// publishChild serves a node's own queues on dir at addr ("": any port),
// until it is killed.
func publishChild(dir, addr string) {
	m, err := queue.Open(queue.Config{Dir: dir, SegmentBytes: 64 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	for i := 0; ; i++ { // the address of the last incarnation, freed by its kill
		if ln, err = net.Listen("tcp", addr); err == nil || i == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	http.Serve(ln, httpapi.RequireToken(token, queue.Handler(m)))
	os.Exit(1)
}

// A Publisher streams to the leader of three nodes with replicated
// queues; a follower is killed mid-stream (at a seeded moment) and the
// stream goes on on the other two; then every node is closed and started
// again on its disk, the killed one included. Every acknowledged put is
// in the queue exactly once, as each node sees it once caught up.
func TestPublisherFollowerKilledMidStream(t *testing.T) {
	seeds := 3
	if queue.RaceEnabled || testing.Short() {
		seeds = 1
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 31))
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nodes, stop, err := livetest.New(3, live.Config{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { stop() }()
			var rs []*queue.Replicated
			var srvs []*httptest.Server
			var eps []string
			for _, nd := range nodes {
				r, err := queue.NewReplicated(nd, queue.ReplicatedConfig{})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(httpapi.RequireToken(token, queue.Handler(r)))
				defer srv.Close()
				rs, srvs, eps = append(rs, r), append(srvs, srv), append(eps, srv.URL)
			}
			lead := -1
			waitUntil(ctx, t, "a leader", func() bool {
				for i, r := range rs {
					if r.Leading() {
						lead = i
					}
				}
				return lead >= 0
			})
			follower := (lead + 1 + rng.IntN(2)) % 3
			c := &queue.Client{Endpoints: []string{eps[lead], eps[3-lead-follower]}, Token: token}
			p, err := c.Publish(ctx, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			pr := startProducer(p)
			first := 100 + rng.IntN(2000)
			waitUntil(ctx, t, "puts before the kill", func() bool { return pr.acknowledged() >= first })
			nodes[follower].Close()
			srvs[follower].CloseClientConnections()
			go srvs[follower].Close()
			at := pr.acknowledged()
			waitUntil(ctx, t, "puts after the kill", func() bool { return pr.acknowledged() >= at+500 })
			pr.finish(ctx, t)
			stop()

			nodes, stop, err = livetest.New(3, live.Config{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			rs = rs[:0]
			for _, nd := range nodes {
				r, err := queue.NewReplicated(nd, queue.ReplicatedConfig{})
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, r)
			}
			n := len(pr.acked)
			for i, r := range rs {
				waitUntil(ctx, t, fmt.Sprintf("node %d caught up", i), func() bool { return ready(r, "jobs") >= n })
			}
			seen := map[string]int{}
			for {
				ms, err := rs[follower].PollN("jobs", time.Hour, queue.MaxCount)
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) == 0 {
					break
				}
				for _, m := range ms {
					seen[string(m.Body)]++
				}
			}
			pr.check(t, seen)
			t.Logf("follower %d killed after %d puts acknowledged; %d in all, %d streams", follower, at, n, p.Streams())
		})
	}
}
