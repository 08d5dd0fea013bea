package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NATS JetStream beside Cohort's queues, the same workload: a stream
// with file storage and work-queue retention, publishers that wait for
// each publish's acknowledgement, and one pull consumer that fetches
// batches and acknowledges each message (explicit acks; JetStream's ack
// is not waited for, Cohort's is on disk when it returns).
//
// Two servers: the nats-server of the module (v2.15), embedded in this
// process as Cohort's is, with sync_interval: always (fsync before every
// acknowledgement, like Cohort) and at its defaults (fsync every 2
// minutes: a power cut may lose acknowledged messages); and Debian's
// nats-server binary at its defaults, started on loopback, when it is
// installed (Debian's 2.9 has no sync_interval).

// jetStream connects to url and returns the workload's system.
func jetStream(name, url string) (QueueSystem, func(), error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return QueueSystem{}, nil, err
	}
	js, err := nc.JetStream(nats.MaxWait(30 * time.Second))
	if err != nil {
		nc.Close()
		return QueueSystem{}, nil, err
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"},
		Storage: nats.FileStorage, Retention: nats.WorkQueuePolicy}); err != nil {
		nc.Close()
		return QueueSystem{}, nil, fmt.Errorf("adding the stream: %w", err)
	}
	sub, err := js.PullSubscribe("bench.>", "worker", nats.AckExplicit())
	if err != nil {
		nc.Close()
		return QueueSystem{}, nil, err
	}
	return QueueSystem{
		Name: name,
		Put: func(ctx context.Context, body []byte) error {
			_, err := js.Publish("bench.q", body, nats.Context(ctx))
			return err
		},
		Get: func(ctx context.Context, max int) (int, error) {
			msgs, err := sub.Fetch(max, nats.MaxWait(2*time.Second))
			if err == nats.ErrTimeout {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			for _, m := range msgs {
				if err := m.Ack(); err != nil {
					return 0, err
				}
			}
			return len(msgs), nil
		},
	}, nc.Close, nil
}

// jetStreamAsync is jetStream with each Put a batch of batch messages
// published asynchronously (PublishAsync), waiting for all their
// acknowledgements together: the counterpart of a batch put.
func jetStreamAsync(name, url string, batch int) (QueueSystem, func(), error) {
	s, closeIt, err := jetStream(name, url)
	if err != nil {
		return s, closeIt, err
	}
	nc, err := nats.Connect(url)
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(1 << 16)) // the publishers share it
	if err != nil {
		nc.Close()
		closeIt()
		return QueueSystem{}, nil, err
	}
	s.Batch = batch
	s.Put = func(ctx context.Context, body []byte) error {
		futures := make([]nats.PubAckFuture, batch)
		for i := range futures {
			f, err := js.PublishAsync("bench.q", body) // err is this call's: the publishers run at once
			if err != nil {
				return err
			}
			futures[i] = f
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	return s, func() { nc.Close(); closeIt() }, nil
}

// jetStreamWindow is jetStream with each Put one asynchronous publish
// (PublishAsync) that waits only while window are unacknowledged
// (PublishAsyncMaxPending), and Flush waiting for them all
// (PublishAsyncComplete): the counterpart of a Pipeline's window.
func jetStreamWindow(name, url string, window int) (QueueSystem, func(), error) {
	s, closeIt, err := jetStream(name, url)
	if err != nil {
		return s, closeIt, err
	}
	nc, err := nats.Connect(url)
	if err != nil {
		closeIt()
		return QueueSystem{}, nil, err
	}
	var mu sync.Mutex
	var failed int
	var first error
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(window), nats.PublishAsyncErrHandler(func(_ nats.JetStream, _ *nats.Msg, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if first == nil {
			first = err
		}
	}))
	if err != nil {
		nc.Close()
		closeIt()
		return QueueSystem{}, nil, err
	}
	s.Put = func(_ context.Context, body []byte) error {
		_, err := js.PublishAsync("bench.q", body, nats.StallWait(time.Minute)) // a full window waits, as a Pipeline's
		return err
	}
	s.Flush = func(ctx context.Context) (int, error) {
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		n := failed
		failed = 0
		return n, first
	}
	return s, func() { nc.Close(); closeIt() }, nil
}

// embeddedJetStream starts the module's nats-server in this process.
func embeddedJetStream(t *testing.T, syncAlways bool) string {
	t.Helper()
	opts := &natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	if syncAlways {
		opts.SyncAlways = true
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("the embedded nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// debianJetStream starts Debian's nats-server binary on loopback with
// file storage at its defaults, or says why not.
func debianJetStream(t *testing.T) (url, version string, ok bool) {
	t.Helper()
	path, err := exec.LookPath("nats-server")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/nats-server"); err != nil {
			t.Logf("nats-server is not installed (apt-get install nats-server): Debian's JetStream left out")
			return "", "", false
		}
		path = "/usr/sbin/nats-server"
	}
	out, _ := exec.Command(path, "--version").Output()
	version = strings.TrimSpace(string(out))
	ports, err := freeLoopbackAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("listen: %s\njetstream {\n  store_dir: %q\n}\n", ports[0], filepath.Join(dir, "js"))), 0o600)
	cmd := exec.Command(path, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url = "nats://" + ports[0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := nats.Connect(url)
		if err == nil {
			nc.Close()
			return url, version, true
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestQueueBesideJetStream runs the queue benchmark on Cohort and
// JetStream and prints the table: each system's median over the runs,
// the systems taking turns within each run (in reverse order every other
// run, so that a drift of the machine's load weighs on both alike), and
// each Cohort row's ratio to JetStream at its defaults, the median of the
// runs' ratios. COHORT_QUEUE_BENCH sets the duration of each run (default
// 300ms, 100ms under the race detector), COHORT_QUEUE_BENCH_PUBS the
// publishers (default 1,32), COHORT_QUEUE_BENCH_RUNS the runs (default
// 1), COHORT_QUEUE_BENCH_BATCH the messages of a batch put, beside
// JetStream's async publish of as many (default 32; 0: no batches),
// COHORT_QUEUE_BENCH_WINDOW the puts an asynchronous publisher keeps
// unacknowledged, beside JetStream's PublishAsyncMaxPending of as many
// (default 0: none), and COHORT_QUEUE_BENCH_SYSTEMS the systems to run
// (default all; e.g. batches,js-async: see queueBenchSystems's call for
// the names).
func TestQueueBesideJetStream(t *testing.T) {
	dur, pubs, runs := queueBenchEnv(t)
	chosen := queueBenchSystems(t, "go", "http", "stream", "r3-stream", "js-sync", "js",
		"batches", "go-async", "stream-async", "r3-go-async", "r3-stream-async", "js-async", "js-sync-async",
		"go-window", "r3-go-window", "stream-window", "js-window", "js-sync-window", "debian")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*10*time.Minute)
	defer cancel()
	type system struct {
		name string
		open func() (QueueSystem, func(), error)
	}
	var systems []system
	systems = append(systems,
		system{"go", func() (QueueSystem, func(), error) { return CohortQueue(t.TempDir(), false) }},
		system{"http", func() (QueueSystem, func(), error) { return CohortQueue(t.TempDir(), true) }},
		system{"stream", func() (QueueSystem, func(), error) { return CohortQueueStream(t.TempDir(), 1) }},
		system{"r3-stream", func() (QueueSystem, func(), error) { return CohortReplicatedQueueStream(t.TempDir(), 3, 1) }})
	systems = append(systems,
		system{"js-sync", func() (QueueSystem, func(), error) {
			return jetStream("jetstream v2.15 (sync: always)", embeddedJetStream(t, true))
		}},
		system{"js", func() (QueueSystem, func(), error) {
			return jetStream("jetstream v2.15 (defaults)", embeddedJetStream(t, false))
		}})
	if b := batchSize(t); b > 0 {
		systems = append(systems,
			system{"batches", func() (QueueSystem, func(), error) { return CohortQueueBatches(t.TempDir(), b) }},
			system{"go-async", func() (QueueSystem, func(), error) { return CohortQueueAsync(t.TempDir(), b) }},
			system{"stream-async", func() (QueueSystem, func(), error) { return CohortQueueStream(t.TempDir(), b) }},
			system{"r3-go-async", func() (QueueSystem, func(), error) { return CohortReplicatedQueueAsync(t.TempDir(), 3, b) }},
			system{"r3-stream-async", func() (QueueSystem, func(), error) { return CohortReplicatedQueueStream(t.TempDir(), 3, b) }},
			system{"js-async", func() (QueueSystem, func(), error) {
				return jetStreamAsync(fmt.Sprintf("jetstream v2.15 (defaults, async %d)", b), embeddedJetStream(t, false), b)
			}},
			system{"js-sync-async", func() (QueueSystem, func(), error) {
				return jetStreamAsync(fmt.Sprintf("jetstream v2.15 (sync: always, async %d)", b), embeddedJetStream(t, true), b)
			}})
	}
	if w := windowSize(t); w > 0 {
		systems = append(systems,
			system{"go-window", func() (QueueSystem, func(), error) { return CohortQueueWindow(t.TempDir(), w) }},
			system{"r3-go-window", func() (QueueSystem, func(), error) { return CohortReplicatedQueueWindow(t.TempDir(), 3, w) }},
			system{"stream-window", func() (QueueSystem, func(), error) { return CohortQueueStreamWindow(t.TempDir(), w) }},
			system{"js-window", func() (QueueSystem, func(), error) {
				return jetStreamWindow(fmt.Sprintf("jetstream v2.15 (defaults, window %d)", w), embeddedJetStream(t, false), w)
			}},
			system{"js-sync-window", func() (QueueSystem, func(), error) {
				return jetStreamWindow(fmt.Sprintf("jetstream v2.15 (sync: always, window %d)", w), embeddedJetStream(t, true), w)
			}})
	}
	if !chosen("debian") {
		t.Logf("Debian's nats-server left out (COHORT_QUEUE_BENCH_SYSTEMS)")
	} else if _, version, ok := debianJetStream(t); ok {
		t.Logf("Debian's %s", version)
		systems = append(systems, system{"debian", func() (QueueSystem, func(), error) {
			url, _, _ := debianJetStream(t) // a new server each run
			return jetStream("jetstream "+strings.TrimPrefix(version, "nats-server: ")+" debian (defaults)", url)
		}})
	}
	systems = slices.DeleteFunc(systems, func(s system) bool { return !chosen(s.name) })
	var rows, ratios []string
	for _, p := range pubs {
		results := make([][]QueueResult, len(systems))
		for run := range runs {
			for k := range systems {
				i := k
				if run%2 == 1 {
					i = len(systems) - 1 - k
				}
				qs, closeIt, err := systems[i].open()
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunQueue(ctx, qs, QueueConfig{Publishers: p, Duration: dur})
				closeIt()
				if err != nil {
					t.Fatal(err)
				}
				if r.Puts == 0 || r.GetsPerSec == 0 {
					t.Fatalf("%s: nothing measured: %+v", qs.Name, r)
				}
				results[i] = append(results[i], r)
			}
		}
		for _, rs := range results {
			rows = append(rows, medianQueueResult(rs).String()+"  "+putsRange(rs))
		}
		ratios = append(ratios, queueRatios(results)...)
	}
	disk, err := DiskSync(t.TempDir(), 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%v per run, medians of %d run(s), %d-byte messages; load average %s; this disk's append+fdatasync: median %v\n%s  puts/s range\n%s\n\n"+
		"Cohort / JetStream at its defaults, puts/s: the median of the runs' ratios [their range]\n%s",
		dur, runs, 128, strings.TrimSpace(string(load)), disk.Round(time.Microsecond), QueueHeader, strings.Join(rows, "\n"), strings.Join(ratios, "\n"))
}

// queueBenchEnv reads the queue benchmarks' settings: COHORT_QUEUE_BENCH
// (each run's duration; default 300ms, 100ms under the race detector),
// COHORT_QUEUE_BENCH_PUBS (default 1,32; 8 under the race detector) and
// COHORT_QUEUE_BENCH_RUNS (default 1).
func queueBenchEnv(t *testing.T) (dur time.Duration, pubs []int, runs int) {
	dur, pubs, runs = 300*time.Millisecond, []int{1, 32}, 1
	if raceEnabled {
		dur, pubs = 100*time.Millisecond, []int{8}
	}
	if v := os.Getenv("COHORT_QUEUE_BENCH"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("COHORT_QUEUE_BENCH=%q: want a duration", v)
		}
		dur = d
	}
	if v := os.Getenv("COHORT_QUEUE_BENCH_PUBS"); v != "" {
		pubs = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 4096 {
				t.Fatalf("COHORT_QUEUE_BENCH_PUBS=%q: want publishers, 1 to 4096, separated by commas", v)
			}
			pubs = append(pubs, n)
		}
	}
	if v := os.Getenv("COHORT_QUEUE_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			t.Fatalf("COHORT_QUEUE_BENCH_RUNS=%q: want 1 to 100", v)
		}
		runs = n
	}
	return dur, pubs, runs
}

// queueBenchSystems reads COHORT_QUEUE_BENCH_SYSTEMS, the systems to
// run among names, separated by commas (default: all), and returns
// whether a system is chosen.
func queueBenchSystems(t *testing.T, names ...string) func(name string) bool {
	v := os.Getenv("COHORT_QUEUE_BENCH_SYSTEMS")
	if v == "" {
		return func(string) bool { return true }
	}
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if !slices.Contains(names, f) {
			t.Fatalf("COHORT_QUEUE_BENCH_SYSTEMS=%q: no system %q; want some of %s, separated by commas", v, f, strings.Join(names, ","))
		}
		set[f] = true
	}
	return func(name string) bool { return set[name] }
}

// putsRange is the lowest and highest puts/s of rs.
func putsRange(rs []QueueResult) string {
	lo, hi := rs[0].PutsPerSec, rs[0].PutsPerSec
	for _, r := range rs {
		lo, hi = min(lo, r.PutsPerSec), max(hi, r.PutsPerSec)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// queueRatios compares each Cohort system of results (one slice of runs
// per system, the runs in step) with each JetStream system at its
// defaults that puts alike — one message a put, or as many in a batch:
// the median of the runs' ratios of puts/s, and their range.
func queueRatios(results [][]QueueResult) []string {
	style := func(name string) string { // how it publishes
		switch {
		case strings.Contains(name, "window"):
			return "window"
		case strings.Contains(name, "async") || strings.Contains(name, "batches"):
			return "batched"
		}
		return "single"
	}
	var out []string
	for _, c := range results {
		if !strings.HasPrefix(c[0].System, "cohort") {
			continue
		}
		for _, j := range results {
			if !strings.HasPrefix(j[0].System, "jetstream") || !strings.Contains(j[0].System, "defaults") || style(j[0].System) != style(c[0].System) {
				continue
			}
			rs := make([]float64, len(c))
			for i := range c {
				rs[i] = c[i].PutsPerSec / j[i].PutsPerSec
			}
			slices.Sort(rs)
			out = append(out, fmt.Sprintf("%4d pubs  %-42s / %-42s %5.2f  [%.2f–%.2f]",
				c[0].Publishers, c[0].System, j[0].System, rs[len(rs)/2], rs[0], rs[len(rs)-1]))
		}
	}
	return out
}

// windowSize is COHORT_QUEUE_BENCH_WINDOW: the puts an asynchronous
// publisher holds unacknowledged, beside JetStream's
// PublishAsyncMaxPending of as many (default 0: none).
func windowSize(t *testing.T) int {
	v := os.Getenv("COHORT_QUEUE_BENCH_WINDOW")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<16 {
		t.Fatalf("COHORT_QUEUE_BENCH_WINDOW=%q: want 0 to 65536 puts", v)
	}
	return n
}

// batchSize is COHORT_QUEUE_BENCH_BATCH: the messages of a batch put
// (default 32; 0: none).
func batchSize(t *testing.T) int {
	v := os.Getenv("COHORT_QUEUE_BENCH_BATCH")
	if v == "" {
		return 32
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1000 {
		t.Fatalf("COHORT_QUEUE_BENCH_BATCH=%q: want 0 to 1000 messages", v)
	}
	return n
}
