package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// A running three-member cluster takes in a fourth without a restart: the
// newcomer starts knowing the others, the others AddPeer it, and from then
// on every pair exchanges payloads both ways — while the old members keep
// sending to each other (race detector: AddPeer against Send).
func TestAddPeerToARunningCluster(t *testing.T) {
	trs := newTCPCluster(t, 3, nil)
	inbox := make([]chan string, 4)
	for i := range inbox {
		inbox[i] = make(chan string, 1024)
	}
	start := func(i int, tr *TCP) {
		if err := tr.Start(func(from proc.ID, p []byte) {
			if string(p) != "chatter" { // the background traffic is not collected
				inbox[i] <- string(p)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range trs {
		start(i, tr)
	}
	// The newcomer, id 3, knows every member's address.
	ln := listen(t)
	nc, err := NewTCP(fastConfig(3, ln, trs[0].Members(), testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	start(3, nc)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // old members keep talking while the membership changes
		for range 100_000 { // bounded: stops by itself if the test hangs elsewhere
			select {
			case <-stop:
				return
			default:
			}
			trs[0].Send(1, []byte("chatter")) // backpressure is fine: only the concurrency matters
		}
	})
	for _, tr := range trs {
		if err := tr.AddPeer(3, ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()

	all := append(trs, nc)
	exchangeAll(t, all, inbox)
	if m := trs[1].Members(); len(m) != 4 || m[3] != ln.Addr().String() {
		t.Errorf("members after the join: %v", m)
	}
}

func TestAddPeerRefusesWhatWouldConfuseMembership(t *testing.T) {
	trs := newTCPCluster(t, 2, nil)
	tr := trs[0]
	addr1 := tr.Members()[1]
	if err := tr.AddPeer(1, addr1); err != nil {
		t.Errorf("re-adding a member at its address: %v", err)
	}
	for _, c := range []struct {
		id   proc.ID
		addr string
		want string
	}{
		{1, "127.0.0.1:1", `1 is a member at "` + addr1 + `" already`},
		{0, "127.0.0.1:1", "not another member's id"},
		{-1, "127.0.0.1:1", "not another member's id"},
		{2, "nonsense", `AddPeer(p2, "nonsense")`},
	} {
		if err := tr.AddPeer(c.id, c.addr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AddPeer(%v, %q): %v, want an error containing %q", c.id, c.addr, err, c.want)
		}
	}
	tr.Close()
	if err := tr.AddPeer(5, "127.0.0.1:1"); err != ErrClosed {
		t.Errorf("AddPeer after Close: %v, want ErrClosed", err)
	}
}

// A node joins a running cluster that takes joins by knowing one member:
// that member answers with its table, the newcomer connects to every
// member, each learns it as it connects, and all four exchange payloads
// both ways — nobody restarted. A would-be joiner with the wrong secret is
// refused and learnt by no one.
func TestJoinThroughAnyMember(t *testing.T) {
	trs := newTCPCluster(t, 3, func(c *Config) { c.Joins = true })
	inbox := startInboxes(t, trs, 4)
	ln := listen(t)
	cfg := fastConfig(3, ln, map[proc.ID]string{2: trs[2].Members()[2]}, testLogger(t)) // knows member 2 only
	cfg.Joins = true
	nc, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if err := nc.Start(func(_ proc.ID, p []byte) { inbox[3] <- string(p) }); err != nil {
		t.Fatal(err)
	}
	all := append(trs, nc)
	waitUntil(t, 10*time.Second, "every member knows all four", func() bool {
		for _, tr := range all {
			if len(tr.Members()) != 4 {
				return false
			}
		}
		return true
	})
	exchangeAll(t, all, inbox)

	// The wrong secret: refused at the handshake, learnt by no one.
	bad := fastConfig(9, listen(t), map[proc.ID]string{0: trs[0].Members()[0]}, testLogger(t))
	bad.Secret, bad.Joins = []byte("not the cluster secret, 32 bytes"), true
	intruder, err := NewTCP(bad)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { intruder.Close() })
	before := trs[0].Stats().Rejected
	intruder.Start(func(proc.ID, []byte) {})
	waitUntil(t, 10*time.Second, "the intruder's handshake is refused", func() bool { return trs[0].Stats().Rejected > before })
	for i, tr := range all {
		if _, ok := tr.Members()[9]; ok {
			t.Errorf("member %d learnt the intruder", i)
		}
	}
}

func FuzzParseMembers(f *testing.F) {
	f.Add(appendMembers(nil, []member{{0, "127.0.0.1:7000"}, {12, "node12:7000"}})[1:])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseMembers(b)
		if err != nil {
			return
		}
		// What parses re-encodes to a frame that parses the same.
		_, payload := splitFrame(appendMembers(nil, ms))
		again, err := parseMembers(payload)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(ms) {
			t.Fatalf("%x parsed as %v; re-encoded, %v (%v)", b, ms, again, err)
		}
		if len(ms) > maxMembers {
			t.Fatalf("%d members", len(ms))
		}
	})
}

// exchangeAll has every member send a payload to every other, and waits
// (10 s at most) until each has received, on its inbox, all of those
// addressed to it.
func exchangeAll(t *testing.T, all []*TCP, inbox []chan string) {
	t.Helper()
	for i, from := range all {
		for j := range all {
			if i != j {
				// Retried on backpressure: a queue may still be full of
				// the background chatter.
				msg := fmt.Appendf(nil, "%d→%d", i, j)
				var err error
				if !waitProgress(10*time.Second, func() bool {
					err = from.Send(proc.ID(j), msg)
					return !errors.Is(err, ErrBackpressure)
				}) || err != nil {
					t.Fatalf("send %d→%d: %v", i, j, err)
				}
			}
		}
	}
	for j := range all {
		want := map[string]bool{}
		for i := range all {
			if i != j {
				want[fmt.Sprintf("%d→%d", i, j)] = true
			}
		}
		deadline := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case m := <-inbox[j]:
				delete(want, m)
			case <-deadline:
				t.Fatalf("member %d never received %v", j, want)
			}
		}
	}
}

// MemberAddr answers for one member what Members does for all: the
// listener's address for itself, the address added for another, nothing
// for a stranger — and an added member's address from then on.
func TestMemberAddr(t *testing.T) {
	trs := newTCPCluster(t, 2, nil)
	tr := trs[0]
	for id, want := range tr.Members() {
		if got, ok := tr.MemberAddr(id); !ok || got != want {
			t.Errorf("MemberAddr(%v) = %q, %v; Members says %q", id, got, ok, want)
		}
	}
	if got, ok := tr.MemberAddr(7); ok {
		t.Errorf("MemberAddr(7) = %q before it was added", got)
	}
	if err := tr.AddPeer(7, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if got, ok := tr.MemberAddr(7); !ok || got != "127.0.0.1:1" {
		t.Errorf("MemberAddr(7) = %q, %v after AddPeer(7, 127.0.0.1:1)", got, ok)
	}
}
