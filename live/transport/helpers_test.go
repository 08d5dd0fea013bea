package transport

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

var testSecret = []byte("cohort test secret, 32 bytes...!")

// logBuffer collects log output and lets a test wait for a line.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// logger returns a logger writing text records, debug level included, to l.
func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// line returns the first line containing every one of parts.
func (l *logBuffer) line(parts ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.Lines(l.buf.String()) {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line, true
		}
	}
	return "", false
}

// waitLine waits until a line containing every one of parts is logged.
func (l *logBuffer) waitLine(timeout time.Duration, parts ...string) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if line, ok := l.line(parts...); ok {
			return line, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return "", fmt.Errorf("no log line with %q within %v", parts, timeout)
		}
	}
}

// testLogger logs into a buffer that is printed if the test fails.
func testLogger(t *testing.T) *slog.Logger {
	l := newLogBuffer()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("transport log:\n%s", l)
		}
	})
	return slog.New(slog.NewTextHandler(l, nil))
}

// waitUntil polls cond until it holds, failing the test after timeout. It is
// for conditions only observable by polling (Stats); events with a channel
// are awaited on the channel.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		<-tick.C
	}
}

// waitClosed waits for ch to be closed.
func waitClosed(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// listen binds a loopback listener on a free port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t testing.TB) string {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// fastConfig returns a Config for member self with short timeouts, suited
// to tests on loopback.
func fastConfig(self proc.ID, ln net.Listener, peers map[proc.ID]string, logger *slog.Logger) Config {
	return Config{
		Self:             self,
		Listener:         ln,
		Peers:            peers,
		Secret:           testSecret,
		HandshakeTimeout: 2 * time.Second,
		PingInterval:     100 * time.Millisecond,
		IdleTimeout:      2 * time.Second,
		DialBackoffMin:   5 * time.Millisecond,
		DialBackoffMax:   50 * time.Millisecond,
		Logger:           logger,
	}
}

// newTCP creates a member from cfg, not started, and closes it when the
// test ends.
func newTCP(t testing.TB, cfg Config) *TCP {
	t.Helper()
	tr, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// newTCPCluster creates n members 0 .. n-1 over loopback, not started, and
// closes them when the test ends. edit, if not nil, adjusts each Config.
func newTCPCluster(t testing.TB, n int, edit func(*Config)) []*TCP {
	t.Helper()
	lns := make([]net.Listener, n)
	for i := range lns {
		lns[i] = listen(t)
	}
	var logger *slog.Logger
	if tt, ok := t.(*testing.T); ok {
		logger = testLogger(tt)
	} else {
		logger = slog.New(slog.DiscardHandler)
	}
	trs := make([]*TCP, n)
	for i := range trs {
		peers := make(map[proc.ID]string)
		for j, ln := range lns {
			if j != i {
				peers[proc.ID(j)] = ln.Addr().String()
			}
		}
		cfg := fastConfig(proc.ID(i), lns[i], peers, logger)
		if edit != nil {
			edit(&cfg)
		}
		trs[i] = newTCP(t, cfg)
	}
	return trs
}

// startInboxes makes n inboxes (n at least len(trs): room for newcomers)
// and starts each of trs delivering its payloads into its own.
func startInboxes(t *testing.T, trs []*TCP, n int) []chan string {
	t.Helper()
	inbox := make([]chan string, n)
	for i := range inbox {
		inbox[i] = make(chan string, 64)
	}
	for i, tr := range trs {
		if err := tr.Start(func(_ proc.ID, p []byte) { inbox[i] <- string(p) }); err != nil {
			t.Fatal(err)
		}
	}
	return inbox
}
