package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/wal"
)

// TestPipelineAcksOnlyWhatIsSynced cuts the power under a pipeline of
// puts: every put acknowledged is there after the restart, and the puts
// were applied in the order they were put.
func TestPipelineAcksOnlyWhatIsSynced(t *testing.T) {
	fs := newMemFS()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := Open(Config{Dir: "/q", FS: fs.Mount(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	syncs := fs.slow(200 * time.Microsecond)
	p, err := NewPipeline(m, "q", 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type put struct {
		body string
		ack  *PutAck
	}
	var puts []put
	acked := 0
	for i := 0; acked < 300; i++ {
		if ctx.Err() != nil {
			t.Fatal("300 puts were not acknowledged in time")
		}
		body := fmt.Sprint("m", i)
		puts = append(puts, put{body, p.PutAsync([]byte(body))})
		for acked < len(puts) && isDone(puts[acked].ack) {
			acked++
		}
	}
	fs.Crash()
	for range 100 { // puts after the cut: the log fails, and so do they
		puts = append(puts, put{"late", p.PutAsync([]byte("late"))})
	}
	closeErr := p.Close(ctx)
	var acks []uint64
	bodies := map[uint64]string{}
	for i, pt := range puts {
		id, err := pt.ack.Wait(ctx)
		if err != nil {
			for _, later := range puts[i:] {
				if _, err := later.ack.Wait(ctx); err == nil {
					t.Fatalf("put %q acknowledged after put %d failed", later.body, i)
				}
			}
			break
		}
		acks = append(acks, id)
		bodies[id] = pt.body
	}
	if len(acks) < 300 {
		t.Fatalf("%d puts acknowledged in order, want 300 or more", len(acks))
	}
	if closeErr == nil {
		t.Error("Close: nil error, want the log's failure after the power cut")
	}
	for i := 1; i < len(acks); i++ {
		if acks[i] <= acks[i-1] {
			t.Fatalf("put %d has id %d, after %d: not in the order put", i, acks[i], acks[i-1])
		}
	}
	m.Close()
	m2, err := Open(Config{Dir: "/q", FS: fs.Mount(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	held := map[uint64]string{}
	for _, msg := range pollAll(t, m2, "q") {
		held[msg.ID] = string(msg.Body)
	}
	t.Logf("%d puts acknowledged in %d syncs, %d held after the power cut", len(acks), syncs(), len(held))
	for _, id := range acks {
		if held[id] != bodies[id] {
			t.Fatalf("put %d (%q) was acknowledged and is lost: %q", id, bodies[id], held[id])
		}
	}
}

// TestPipelineSharesSyncs: one publisher's pipelined puts share syncs
// (far fewer syncs than puts), each put's outcome comes on its own ack,
// in order.
func TestPipelineSharesSyncs(t *testing.T) {
	fs := newMemFS()
	m, err := Open(Config{Dir: "/q", FS: fs.Mount(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	syncs := fs.slow(time.Millisecond)
	before := syncs()
	p, err := NewPipeline(m, "q", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 3000
	acks := make([]*PutAck, n)
	for i := range acks {
		acks[i] = p.PutAsync(fmt.Appendf(nil, "m%d", i))
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i, a := range acks {
		id, err := a.Result()
		if err != nil || id <= last {
			t.Fatalf("put %d: id %d (the one before: %d), %v", i, id, last, err)
		}
		last = id
	}
	if s := syncs() - before; s > n/10 {
		t.Errorf("%d puts took %d syncs: want them shared (at most %d)", n, s, n/10)
	}
	// The puts that came during a sync are one record, of at most a
	// transaction's puts.
	records, most := 0, 0
	for _, name := range fs.segments() {
		data, err := fs.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := wal.Decode(data[len(segMagic):])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if _, ops, isStart, err := decodeRecord(r); err == nil && !isStart {
				records++
				most = max(most, len(ops))
			}
		}
	}
	if records >= n/10 || most > MaxTxOps {
		t.Errorf("%d puts in %d records, the largest of %d puts: want far fewer records, of at most %d", n, records, most, MaxTxOps)
	}
	for i, msg := range pollAll(t, m, "q") {
		if string(msg.Body) != fmt.Sprint("m", i) {
			t.Fatalf("message %d is %q, want m%d", i, msg.Body, i)
		}
	}
	if _, err := p.Put(ctx, []byte("after")); !errors.Is(err, ErrPublisherClosed) {
		t.Errorf("a put after Close: %v, want ErrPublisherClosed", err)
	}
}

// TestPipelineFullQueue: the puts that fit go in; from the first that
// does not, every put fails (the applied ones are a prefix), and a put
// too big fails alone at once.
func TestPipelineFullQueue(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir(), MaxQueueBytes: 100})
	p, err := NewPipeline(m, "q", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutAsync(make([]byte, MaxMessage+1)).Result(); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a put too big: %v, want ErrTooBig at once", err)
	}
	var acks []*PutAck
	for range 30 {
		acks = append(acks, p.PutAsync([]byte("0123456789")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, ErrFull) {
		t.Fatalf("Close: %v, want ErrFull", err)
	}
	for i, a := range acks {
		_, err := a.Result()
		if (i < 10) != (err == nil) || err != nil && !errors.Is(err, ErrFull) {
			t.Fatalf("put %d of 10 bytes into a queue of 100: %v", i, err)
		}
	}
	if n := m.Len("q"); n != 10 {
		t.Fatalf("the queue holds %d messages, want 10", n)
	}
}

// TestNewPipelineRefuses names the bad argument.
func TestNewPipelineRefuses(t *testing.T) {
	m := open(t, Config{})
	for _, c := range []struct {
		name   string
		window int
	}{{"bad name", 0}, {"q", -1}} {
		if _, err := NewPipeline(m, c.name, c.window); err == nil {
			t.Errorf("NewPipeline(%q, %d): no error", c.name, c.window)
		}
	}
}

// TestPipelineTransient: a transient queue's puts are applied at once,
// and so acknowledged.
func TestPipelineTransient(t *testing.T) {
	m := open(t, Config{Dir: t.TempDir()})
	if err := m.DeclareTransient("t"); err != nil {
		t.Fatal(err)
	}
	p, err := NewPipeline(m, "t", 4)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		if id, err := p.PutAsync(fmt.Appendf(nil, "m%d", i)).Wait(ctx); err != nil || id == 0 {
			t.Fatalf("put %d: id %d, %v", i, id, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := m.Len("t"); n != 10 {
		t.Fatalf("the queue holds %d messages, want 10", n)
	}
}
