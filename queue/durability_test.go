package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The workload of the durability tests: producers put unique bodies on
// "q" and "tin"; consumers get from "q" and acknowledge; a transactional
// consumer moves each message of "tin" to "tout" as "t-BODY", get and put
// in one commit. Each reports what it did through note, before the call
// ("A?" an ack about to be made, "T?" a commit) and after it returned
// ("P" a put acknowledged, "A" an ack acknowledged, "T" a commit).
func workload(ctx context.Context, m *Manager, prefix string, note func(kind, body string)) {
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				q := []string{"q", "tin"}[p]
				body := fmt.Sprintf("%s-%d-%d", prefix, p, k)
				if _, err := m.Put(q, []byte(body)); err != nil {
					return
				}
				note("P", q+" "+body)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				msg, err := m.Get(ctx, "q", 50*time.Millisecond)
				if err != nil {
					return
				}
				note("A?", "q "+string(msg.Body))
				if err := m.Ack("q", msg.ID); err != nil && !errors.Is(err, ErrNoMessage) {
					return
				}
				note("A", "q "+string(msg.Body))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			tx := m.Begin()
			msg, err := tx.Get(ctx, "tin", time.Minute)
			if err != nil {
				return
			}
			tx.Put("tout", append([]byte("t-"), msg.Body...))
			note("T?", "tin "+string(msg.Body))
			if err := tx.Commit(); err != nil {
				return
			}
			note("T", "tin "+string(msg.Body))
		}
	}()
	wg.Wait()
}

// ledger is what the workload was told, over every run.
type ledger struct {
	mu    sync.Mutex
	puts  map[string]bool // "q BODY" put acknowledged
	tried map[string]bool // an ack or a commit was attempted
	acked map[string]bool // acknowledged (or committed)
}

func newLedger() *ledger {
	return &ledger{puts: map[string]bool{}, tried: map[string]bool{}, acked: map[string]bool{}}
}

func (l *ledger) note(kind, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch kind {
	case "P":
		l.puts[what] = true
	case "A?", "T?":
		l.tried[what] = true
	case "A", "T":
		l.acked[what] = true
	}
}

// check opens the log as a restarted process would and judges it against
// the ledger: no acknowledged put lost, no acknowledged message back, no
// duplicate, and each transaction whole or absent.
func (l *ledger) check(t *testing.T, cfg Config) {
	t.Helper()
	m, err := Open(cfg)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer m.Close()
	held := map[string]int{}
	for _, q := range []string{"q", "tin", "tout"} {
		for {
			msg, ok, err := m.Poll(q, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			held[q+" "+string(msg.Body)]++
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for what, n := range held {
		if n > 1 {
			t.Errorf("%s held %d times", what, n)
		}
		if l.acked[what] {
			t.Errorf("%s was acknowledged, and is back after the crash", what)
		}
	}
	for what := range l.puts {
		if held[what] == 0 && !l.tried[what] {
			t.Errorf("acknowledged put %s lost", what)
		}
	}
	for what := range l.tried {
		if !strings.HasPrefix(what, "tin ") {
			continue
		}
		body := strings.TrimPrefix(what, "tin ")
		in, out := held[what] > 0, held["tout t-"+body] > 0
		if in == out {
			t.Errorf("transaction on %s half done: in tin %v, in tout %v", body, in, out)
		}
	}
	for what := range held {
		if body, ok := strings.CutPrefix(what, "tout t-"); ok && held["tin "+body] > 0 {
			t.Errorf("%s both in tin and moved to tout", body)
		}
	}
}

// TestPowerCut cuts the power at random moments of the workload (the
// file system drops every write not synced) and restarts: nothing
// acknowledged is lost or comes back.
func TestPowerCut(t *testing.T) {
	runs := 25
	if raceEnabled || testing.Short() {
		runs = 10
	}
	fs := newMemFS()
	led := newLedger()
	rng := rand.New(rand.NewPCG(1, 2))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := range runs {
		cfg := Config{Dir: "/q", FS: fs.Mount(), SegmentBytes: 2 << 10, Logger: quiet}
		m, err := Open(cfg)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			workload(ctx, m, fmt.Sprint("r", run), led.note)
			close(done)
		}()
		time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
		fs.Crash()
		cancel()
		<-done
		m.Close()
		led.check(t, Config{Dir: "/q", FS: fs.Mount(), SegmentBytes: 2 << 10, Logger: quiet})
		if t.Failed() {
			t.Fatalf("run %d", run)
		}
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	t.Logf("%d power cuts: %d puts, %d acks acknowledged", runs, len(led.puts), len(led.acked))
	if len(led.puts) == 0 || len(led.acked) == 0 {
		t.Fatal("the workload did nothing")
	}
}

// TestKill9 runs the workload in a child process (this test binary,
// again) and SIGKILLs it at random moments, many times: after each
// restart, no acknowledged put is lost and no acknowledged message is
// delivered again.
func TestKill9(t *testing.T) {
	if dir := os.Getenv("COHORT_QUEUE_CHILD"); dir != "" {
		child(dir, os.Getenv("COHORT_QUEUE_RUN"))
		return
	}
	runs := 25
	if raceEnabled || testing.Short() {
		runs = 6
	}
	dir := t.TempDir()
	led := newLedger()
	rng := rand.New(rand.NewPCG(3, 4))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
		cmd.Env = append(os.Environ(), "COHORT_QUEUE_CHILD="+dir, fmt.Sprint("COHORT_QUEUE_RUN=", run))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Wait for the child to be under way, then kill it at a random
		// moment.
		deadline := time.After(10 * time.Second)
		started := false
		for !started {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("run %d: the child ended before it started", run)
				}
				if strings.TrimSpace(l) == "started" {
					started = true
				}
			case <-deadline:
				t.Fatalf("run %d: the child did not start", run)
			}
		}
		kill := time.After(time.Duration(5+rng.IntN(60)) * time.Millisecond)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				kind, what, _ := strings.Cut(l, " ")
				led.note(kind, what)
			case <-kill:
				cmd.Process.Signal(syscall.SIGKILL)
				kill = nil
			}
		}
		cmd.Wait()
		led.check(t, Config{Dir: dir, Logger: quiet})
		if t.Failed() {
			t.Fatalf("run %d", run)
		}
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	t.Logf("%d kills: %d puts, %d acks acknowledged", runs, len(led.puts), len(led.acked))
	if len(led.puts) == 0 || len(led.acked) == 0 {
		t.Fatal("the workload did nothing")
	}
}

// child runs the workload until it is killed, reporting on stdout.
func child(dir, run string) {
	m, err := Open(Config{Dir: dir, SegmentBytes: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	note := func(kind, what string) {
		mu.Lock()
		os.Stdout.WriteString(kind + " " + what + "\n")
		mu.Unlock()
	}
	note("started", "")
	workload(context.Background(), m, "k"+run, note)
	os.Exit(0)
}
