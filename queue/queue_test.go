package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/wal"
)

func open(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func mustPut(t *testing.T, m *Manager, q, body string) uint64 {
	t.Helper()
	id, err := m.Put(q, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPutGetAckInOrder(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		m := open(t, Config{Dir: dir})
		for i := range 3 {
			mustPut(t, m, "q", fmt.Sprint("m", i))
		}
		for i := range 3 {
			msg, err := m.Get(context.Background(), "q", 0)
			if err != nil || string(msg.Body) != fmt.Sprint("m", i) || msg.Deliveries != 1 {
				t.Fatalf("dir %q: get %d = %+v, %v", dir, i, msg, err)
			}
			if err := m.Ack("q", msg.ID); err != nil {
				t.Fatal(err)
			}
			if err := m.Ack("q", msg.ID); !errors.Is(err, ErrNoMessage) {
				t.Fatalf("second ack: %v, want ErrNoMessage", err)
			}
		}
		if _, ok, err := m.Poll("q", 0); ok || err != nil {
			t.Fatalf("poll of an empty queue: %v %v", ok, err)
		}
	}
}

func TestUnackedIsDeliveredAgain(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	id := mustPut(t, m, "q", "x")
	msg, _ := m.Get(context.Background(), "q", 30*time.Millisecond)
	if _, ok, _ := m.Poll("q", 0); ok {
		t.Fatal("a leased message was delivered again before its lease ended")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	again, err := m.Get(ctx, "q", time.Minute) // blocks until the lease ends
	if err != nil || again.ID != id || again.Deliveries != 2 || msg.ID != id {
		t.Fatalf("redelivery: %+v, %v", again, err)
	}
	if err := m.Release("q", id); err != nil {
		t.Fatal(err)
	}
	if msg, ok, _ := m.Poll("q", 0); !ok || msg.ID != id {
		t.Fatal("a released message is not delivered at once")
	}
}

func TestAckSurvivesRestartAndUnackedComesBack(t *testing.T) {
	dir := t.TempDir()
	m := open(t, Config{Dir: dir})
	a := mustPut(t, m, "q", "a")
	b := mustPut(t, m, "q", "b")
	m.Get(context.Background(), "q", 0)
	m.Get(context.Background(), "q", 0)
	if err := m.Ack("q", a); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m = open(t, Config{Dir: dir})
	msg, ok, err := m.Poll("q", 0)
	if !ok || err != nil || msg.ID != b || string(msg.Body) != "b" {
		t.Fatalf("after a restart: %+v %v %v; want b only", msg, ok, err)
	}
	if _, ok, _ := m.Poll("q", 0); ok {
		t.Fatal("an acknowledged message came back")
	}
	if id := mustPut(t, m, "q", "c"); id <= b {
		t.Fatalf("id %d reused after a restart (had %d)", id, b)
	}
}

func TestGetBlocksUntilPut(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	got := make(chan Message)
	go func() {
		msg, _ := m.Get(context.Background(), "q", 0)
		got <- msg
	}()
	time.Sleep(10 * time.Millisecond)
	mustPut(t, m, "q", "hello")
	select {
	case msg := <-got:
		if string(msg.Body) != "hello" {
			t.Fatalf("got %q", msg.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("get did not wake on a put")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.Get(ctx, "q", 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get of an empty queue: %v", err)
	}
}

func TestNotify(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	seen := make(chan Message, 10)
	ready := make(chan struct{})
	ch, stop, err := m.Subscribe("q", 10)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		close(ready)
		for msg := range ch {
			seen <- msg
		}
	}()
	<-ready
	mustPut(t, m, "q", "one")
	mustPut(t, m, "other", "not this")
	mustPut(t, m, "q", "two")
	for _, want := range []string{"one", "two"} {
		select {
		case msg := <-seen:
			if string(msg.Body) != want {
				t.Fatalf("notified %q, want %q", msg.Body, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
		}
	}
	stop()
	cancel()
	_ = ctx
	if m.Len("q") != 2 {
		t.Fatal("notify consumed messages")
	}
	// A reader that falls behind is cut off.
	ch, stop, _ = m.Subscribe("slow", 2)
	defer stop()
	for range 3 {
		mustPut(t, m, "slow", "x")
	}
	n := 0
	for range ch {
		n++
	}
	if n != 2 {
		t.Fatalf("a slow reader got %d before being cut off, want 2", n)
	}
}

func TestTransient(t *testing.T) {
	dir := t.TempDir()
	m := open(t, Config{Dir: dir})
	if err := m.DeclareTransient("t"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, m, "t", "gone at restart")
	mustPut(t, m, "p", "kept")
	if err := m.DeclareTransient("p"); err == nil {
		t.Fatal("a persistent queue holding messages was made transient")
	}
	m.Close()
	m = open(t, Config{Dir: dir})
	if m.Len("t") != 0 || m.Len("p") != 1 {
		t.Fatalf("after a restart: transient %d, persistent %d; want 0, 1", m.Len("t"), m.Len("p"))
	}
	// A queue the log brought back is persistent still.
	mustPut(t, m, "p", "kept too")
	m.Close()
	m = open(t, Config{Dir: dir})
	if m.Len("p") != 2 {
		t.Fatalf("after a second restart: persistent %d, want 2", m.Len("p"))
	}
}

func TestTransactionCommitsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	m := open(t, Config{Dir: dir})
	mustPut(t, m, "in", "order-1")
	mustPut(t, m, "in", "order-2")

	tx := m.Begin()
	msg, err := tx.Get(context.Background(), "in", 0)
	if err != nil {
		t.Fatal(err)
	}
	tx.Put("out", append([]byte("done "), msg.Body...))
	tx.Put("audit", msg.Body)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	tx = m.Begin()
	msg2, _ := tx.Get(context.Background(), "in", 0)
	tx.Put("out", msg2.Body)
	tx.Abort()
	if m.Len("out") != 1 || m.Len("in") != 1 {
		t.Fatalf("after an abort: out %d in %d, want 1 1", m.Len("out"), m.Len("in"))
	}

	// A lease that ended under the transaction: nothing commits.
	tx = m.Begin()
	msg2, _ = tx.Get(context.Background(), "in", 10*time.Millisecond)
	tx.Put("out", msg2.Body)
	time.Sleep(20 * time.Millisecond)
	other, ok, _ := m.Poll("in", 0)
	if !ok || other.ID != msg2.ID {
		t.Fatal("the expired lease was not delivered again")
	}
	if err := tx.Commit(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("commit after the lease was lost: %v", err)
	}
	m.Close()
	m = open(t, Config{Dir: dir})
	if m.Len("in") != 1 || m.Len("out") != 1 || m.Len("audit") != 1 {
		t.Fatalf("after a restart: in %d out %d audit %d, want 1 1 1", m.Len("in"), m.Len("out"), m.Len("audit"))
	}
}

func TestBounds(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir(), MaxQueueBytes: 10, MaxQueues: 3})
	if _, err := m.Put("q", make([]byte, MaxMessage+1)); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a message of MaxMessage+1: %v", err)
	}
	mustPut(t, m, "q", "123456")
	if _, err := m.Put("q", []byte("12345")); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "the most is 10") {
		t.Fatalf("over the queue's bound: %v", err)
	}
	for _, name := range []string{"", "a/b", "..", strings.Repeat("x", 129)} {
		if _, err := m.Put(name, nil); !errors.Is(err, ErrName) {
			t.Fatalf("name %q: %v", name, err)
		}
	}
	mustPut(t, m, "q2", "")
	mustPut(t, m, "q3", "")
	if _, err := m.Put("q4", nil); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a fourth queue of three: %v", err)
	}
	if _, err := Open(Config{SegmentBytes: -1}); err == nil || !strings.Contains(err.Error(), "SegmentBytes") {
		t.Fatalf("bad config: %v", err)
	}
}

func TestGroupCommitSharesSyncs(t *testing.T) {
	fs := newMemFS()
	m := open(t, Config{Dir: "/q", FS: fs})
	// A slow disk: syncs take long enough for puts to pile up.
	syncsSince := fs.slow(time.Millisecond)
	var wg sync.WaitGroup
	const puts = 400
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range puts / 8 {
				if _, err := m.Put("q", []byte(fmt.Sprint(i, j))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := syncsSince()
	t.Logf("%d puts, %d syncs", puts, syncs)
	if syncs > puts/2 {
		t.Fatalf("%d syncs for %d puts from 8 publishers: the puts do not share them", syncs, puts)
	}
	if m.Len("q") != puts {
		t.Fatalf("holds %d, want %d", m.Len("q"), puts)
	}
}

func TestCompactionBoundsTheLog(t *testing.T) {
	fs := newMemFS()
	cfg := Config{Dir: "/q", FS: fs, SegmentBytes: 4 << 10}
	m := open(t, cfg)
	keep := mustPut(t, m, "q", "long-lived") // never acknowledged
	m.Get(context.Background(), "q", time.Hour)
	body := bytes.Repeat([]byte("x"), 100)
	for range 2000 {
		id, err := m.Put("q", body)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := m.Get(context.Background(), "q", 0)
		if err != nil || msg.ID != id {
			t.Fatalf("got %d, %v; want %d", msg.ID, err, id)
		}
		if err := m.Ack("q", id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fs.segments()); n > 3 {
		t.Fatalf("%d segments after compaction: %v", n, fs.segments())
	}
	// Messages never acknowledged, more than a quarter of a segment, pin
	// the oldest segment: the log copies them forward rather than grow.
	pinned := []uint64{mustPut(t, m, "pinned", string(bytes.Repeat([]byte("p"), 800))), mustPut(t, m, "pinned", string(bytes.Repeat([]byte("q"), 800)))}
	for range 2000 {
		id, _ := m.Put("q", body)
		m.Get(context.Background(), "q", 0)
		m.Ack("q", id)
	}
	if n := len(fs.segments()); n > maxSegments+1 {
		t.Fatalf("%d segments with a pinned oldest: %v", n, fs.segments())
	}
	if m.Len("pinned") != 2 {
		t.Fatal("pinned messages lost")
	}
	_ = pinned
	m.Close()
	m = open(t, cfg)
	msg, ok, _ := m.Poll("q", 0)
	if !ok || msg.ID != keep || m.Len("q") != 1 || m.Len("pinned") != 2 {
		t.Fatalf("after compaction and a restart: %+v, %d messages; want only %d", msg, m.Len("q"), keep)
	}
}

// TestTornAndCorruptedTail damages the records of the last segment, the
// preallocated zeros after them left as they are (a write torn in that
// space): a torn tail is cut, damage before it refused.
func TestTornAndCorruptedTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func([]byte) []byte // the records, without the zeros after them
		corrupt bool                // refused, not cut
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)-3] }, false},
		{"garbage appended", func(b []byte) []byte { return append(b, 7, 0, 0, 0, 1, 2, 3) }, false},
		{"last record's byte flipped", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, false},
		{"synced record damaged", func(b []byte) []byte { b[len(segMagic)+30] ^= 0xff; return b }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newMemFS()
			var logged bytes.Buffer
			cfg := Config{Dir: "/q", FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
			m := open(t, cfg)
			for i := range 5 {
				mustPut(t, m, "q", fmt.Sprintf("message %d with some length", i))
			}
			m.Close()
			segs := fs.segments()
			fs.damage(segs[len(segs)-1], func(b []byte) []byte {
				_, good, _ := wal.Decode(b[len(segMagic):])
				n := len(segMagic) + good
				d := tc.damage(b[:n:n])
				return append(d, make([]byte, max(len(b)-len(d), 0))...)
			})
			m2, err := Open(cfg)
			if tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("damage in synced records: %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			if !strings.Contains(logged.String(), "cut off a torn or corrupted tail") {
				t.Fatalf("no log line for the cut; logged %q", logged.String())
			}
			want := 5
			if tc.name != "garbage appended" {
				want = 4 // the last put's record was damaged
			}
			if n := m2.Len("q"); n != want {
				t.Fatalf("%d messages after the cut, want %d", n, want)
			}
			m2.Close()
			// The cut is durable: a second open has nothing to cut.
			logged.Reset()
			m3 := open(t, cfg)
			if strings.Contains(logged.String(), "cut off") || m3.Len("q") != want {
				t.Fatalf("second open: %q, %d messages", logged.String(), m3.Len("q"))
			}
		})
	}
}

// TestSegmentsArePreallocated: the head segment's file is allocated a
// chunk ahead, so puts write into it without changing its size (their
// fdatasync then has no new size to journal); the zeros after the
// records are not a torn tail at the next open.
func TestSegmentsArePreallocated(t *testing.T) {
	var logged bytes.Buffer
	cfg := Config{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	m := open(t, cfg)
	head := filepath.Join(cfg.Dir, segName(1))
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(head)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	mustPut(t, m, "q", "first")
	before := size()
	for i := range 100 {
		mustPut(t, m, "q", fmt.Sprintf("message %d", i))
	}
	if after := size(); after != before || after != preallocChunk {
		t.Fatalf("the head segment had %d bytes after one put and %d after 101, want %d both times", before, after, preallocChunk)
	}
	m.Close()
	m = open(t, cfg)
	if n := m.Len("q"); n != 101 || strings.Contains(logged.String(), "cut off") {
		t.Fatalf("reopened: %d messages, want 101; logged %q", n, logged.String())
	}
}

// TestSegmentTornWhileCreated: a last segment whose header a crash tore
// while the segment was created (its space perhaps preallocated, zeros)
// held nothing acknowledged: Open removes it. Anything else without the
// header is refused.
func TestSegmentTornWhileCreated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		corrupt bool
	}{
		{"empty", nil, false},
		{"part of the header", []byte(segMagic[:3]), false},
		{"part of the header, then preallocated zeros", append([]byte(segMagic[:3]), make([]byte, 4096)...), false},
		{"preallocated zeros", make([]byte, 4096), false},
		{"not a header", append([]byte("xyz"), make([]byte, 4096)...), true},
		{"part of the header, then data", append([]byte(segMagic[:3]), 0, 0, 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newMemFS()
			var logged bytes.Buffer
			cfg := Config{Dir: "/q", FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
			m := open(t, cfg)
			for i := range 5 {
				mustPut(t, m, "q", fmt.Sprintf("message %d", i))
			}
			m.Close()
			segs := fs.segments()
			torn := fmt.Sprintf("/q/%s", segName(uint64(len(segs)+1)))
			f, _ := fs.Open(torn)
			f.WriteAt(tc.data, 0)
			f.Sync()
			fs.SyncDir("/q")
			m2, err := Open(cfg)
			if tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("a segment starting %q: %v, want ErrCorrupt", tc.data[:min(len(tc.data), 8)], err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			if n := m2.Len("q"); n != 5 || !strings.Contains(logged.String(), "torn while it was created") {
				t.Fatalf("%d messages, want 5; logged %q", n, logged.String())
			}
			if data, _ := fs.ReadFile(torn); !bytes.HasPrefix(data, []byte(segMagic)) {
				t.Fatalf("%s, the next head, starts %q", torn, data[:min(len(data), 8)])
			}
		})
	}
}
