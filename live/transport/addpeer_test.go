package transport

import (
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
	type got struct {
		from proc.ID
		body string
	}
	inbox := make([]chan got, 4)
	for i := range inbox {
		inbox[i] = make(chan got, 1024)
	}
	start := func(i int, tr *TCP) {
		if err := tr.Start(func(from proc.ID, p []byte) {
			if string(p) != "chatter" { // the background traffic is not collected
				inbox[i] <- got{from, string(p)}
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
	for i, from := range all {
		for j := range all {
			if i != j {
				if err := from.Send(proc.ID(j), fmt.Appendf(nil, "%d→%d", i, j)); err != nil {
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
			case g := <-inbox[j]:
				delete(want, g.body)
			case <-deadline:
				t.Fatalf("member %d never received %v", j, want)
			}
		}
	}
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
