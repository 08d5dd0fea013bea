package live_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
)

// ledger logs every input to its stable storage, syncs, and only then
// outputs it; when it starts it hands the test what it recovered.
type ledger struct{ got chan []string }

func (l ledger) Start(env proc.Env) {
	var r []string
	for _, rec := range env.Storage().Recovered() {
		r = append(r, string(rec))
	}
	l.got <- r
}
func (ledger) Receive(proc.Env, proc.ID, proc.Message) {}
func (ledger) Timeout(proc.Env, any)                   {}
func (ledger) Input(env proc.Env, in proc.Input) {
	st := env.Storage()
	st.Append([]byte(strconv.Itoa(in.(num).I)))
	st.Sync()
	env.Output(in)
}

// ledgerNode starts a one-node cluster on data directory dir and the
// ledger service name on it; it returns the service and what it recovered.
func ledgerNode(t *testing.T, dir, name string) (*live.Node, *live.Service, []string) {
	t.Helper()
	node := oneNode(t, live.Config{DataDir: dir})
	got := make(chan []string, 1)
	a := proc.Algorithm{Family: "test", Name: "ledger", New: func(proc.ID, int) proc.Process { return ledger{got} }}
	s, err := node.Service(name, a)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		return node, s, r
	case <-s.Done():
		return node, s, nil
	case <-time.After(10 * time.Second):
		t.Fatal("the service never started")
	}
	return nil, nil, nil
}

// synced gives the ledger service s the inputs is and waits until it has
// synced the last (it outputs an input once synced): a node closed before
// may stop the service with inputs still in its inbox.
func synced(t *testing.T, s *live.Service, is ...int) {
	t.Helper()
	outs, cancel := s.Subscribe(len(is))
	defer cancel()
	for _, i := range is {
		if err := s.Input(num{I: i}); err != nil {
			t.Fatal(err)
		}
	}
	for o := range outs {
		if o.(num).I == is[len(is)-1] {
			return
		}
	}
	t.Fatal("the service stopped before syncing its inputs")
}

// TestStorageSurvivesARestart: what a service synced, the same service on
// a node restarted on the same data directory recovers; another service
// has a log of its own.
func TestStorageSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	node, s, rec := ledgerNode(t, dir, "ledger/a")
	if len(rec) != 0 {
		t.Fatalf("a first start recovered %q", rec)
	}
	synced(t, s, 1, 2, 3, 4, 5)
	node.Close()

	node, s, rec = ledgerNode(t, dir, "ledger/a")
	if want := []string{"1", "2", "3", "4", "5"}; !slices.Equal(rec, want) {
		t.Fatalf("recovered %q, want %q", rec, want)
	}
	if _, err := os.Stat(live.StoragePath(dir, "ledger/a")); err != nil {
		t.Errorf("no log file: %v", err)
	}
	synced(t, s, 6)
	_, _, other := ledgerNode(t, dir, "ledger/b")
	if len(other) != 0 {
		t.Errorf("service ledger/b recovered ledger/a's records: %q", other)
	}
	node.Close()
	node, _, rec = ledgerNode(t, dir, "ledger/a")
	if want := []string{"1", "2", "3", "4", "5", "6"}; !slices.Equal(rec, want) {
		t.Fatalf("after a second restart: recovered %q, want %q", rec, want)
	}
	// What a restarted node finds it ran before.
	if stored, err := node.Stored(); err != nil || !slices.Equal(stored, []string{"ledger/a", "ledger/b"}) {
		t.Errorf("Stored() = %q, %v; want [ledger/a ledger/b]", stored, err)
	}
}

// TestStorageInMemoryWithoutADataDirectory: no data directory, nothing
// survives, and the service works.
func TestStorageInMemoryWithoutADataDirectory(t *testing.T) {
	node, s, rec := ledgerNode(t, "", "ledger/a")
	if len(rec) != 0 {
		t.Fatalf("recovered %q", rec)
	}
	if err := s.Input(num{I: 1}); err != nil {
		t.Fatal(err)
	}
	node.Close()
	if _, _, rec = ledgerNode(t, "", "ledger/a"); len(rec) != 0 {
		t.Fatalf("an in-memory log survived a restart: %q", rec)
	}
}

// TestStorageFailureStopsTheService: a service whose log cannot be opened
// (here the data directory is a file) stops, as a crashed process would,
// instead of running without the state it relies on.
func TestStorageFailureStopsTheService(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o600)
	_, s, _ := ledgerNode(t, file, "ledger/a")
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the service runs without its storage")
	}
	if err := s.Input(num{I: 1}); err == nil {
		t.Error("a stopped service took an input")
	}
}

// ping is the message of the herald test algorithm.
type ping struct{ N int }

func (ping) Kind() string { return "ping" }

// herald: process 0, on an input, sends process 1 a ping, appends a record
// and syncs it, and then — still inside the handler — waits for process
// 1 to say it got the ping. Process 1 closes got on the ping.
type herald struct {
	got     chan struct{}
	waited  chan bool // process 0 reports whether the ping arrived during its handler
	timeout time.Duration
}

func (h herald) Start(proc.Env) {}
func (h herald) Receive(proc.Env, proc.ID, proc.Message) {
	close(h.got)
}
func (h herald) Timeout(proc.Env, any) {}
func (h herald) Input(env proc.Env, in proc.Input) {
	env.Send(1, ping{1})
	st := env.Storage()
	st.Append([]byte("after the ping"))
	st.Sync()
	select {
	case <-h.got:
		h.waited <- true
	case <-time.After(h.timeout):
		h.waited <- false
	}
}

// TestSyncSendsWhatCameBefore: messages a handler sent before it syncs
// leave before the sync (the proc.Storage contract lets them: they cannot
// depend on it), so the network and the disk work at once — the ping
// reaches process 1 while process 0's handler is still running.
func TestSyncSendsWhatCameBefore(t *testing.T) {
	nw, err := transport.NewInProc(2, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := herald{got: make(chan struct{}), waited: make(chan bool, 1), timeout: 10 * time.Second}
	a := proc.Algorithm{Family: "test", Name: "herald", Messages: []proc.Message{ping{}},
		New: func(proc.ID, int) proc.Process { return h }}
	var ss []*live.Service
	for i := range 2 {
		ep, _ := nw.Endpoint(proc.ID(i))
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: 2, Transport: ep, DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		defer node.Close()
		s, err := node.Service("herald", a)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	go ss[0].Input(num{I: 1})
	if !<-h.waited {
		t.Fatal("the ping sent before the sync had not left when the handler ended its wait: messages wait for the end of the handler")
	}
}
