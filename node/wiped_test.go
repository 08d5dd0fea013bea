package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
)

// recorded waits until each of the founders in by has recorded founder
// id with state in its data directory.
func (c *joinCluster) recorded(id proc.ID, by ...proc.ID) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("node %d recorded with state by %v", id, by), func() error {
		for _, q := range by {
			knew, err := readStateRecord(c.dirs[q])
			if err != nil {
				return err
			}
			if knew[id] == "" {
				return fmt.Errorf("node %d records %v", q, knew)
			}
		}
		return nil
	})
}

// TestWipedFounderRefusesToStart: founder 2 of three, restarted from its
// config with its data directory emptied, refuses to start, naming the
// directory and a founder that heard it with state; the others serve on.
// Restarted from its directory restored, it starts. Before, it rejoined
// as itself, silently: with no log, no term and no vote (it may vote
// twice in a term), the leader of each log sending it AppendEntries it
// rejected.
func TestWipedFounderRefusesToStart(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.lockAt(2, "before")
	c.recorded(2, 0, 1)
	c.stop(2)
	backup := filepath.Join(t.TempDir(), "backup")
	if err := os.CopyFS(backup, os.DirFS(c.dirs[2])); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(c.dirs[2], 0o755); err != nil {
		t.Fatal(err)
	}
	err := c.tryStart(2, c.listen(2))
	if err == nil {
		t.Fatal("node 2 started with its data directory emptied")
	}
	t.Logf("refused: %v", err)
	for _, says := range []string{c.dirs[2], "heard it with state at", "must not rejoin as itself", "restore the directory, or remove the member and join anew"} {
		if !errors.Is(err, ErrLostState) || !strings.Contains(err.Error(), says) {
			t.Errorf("node 2: %v; want ErrLostState saying %q", err, says)
		}
	}
	if !strings.Contains(err.Error(), "node 0 heard") && !strings.Contains(err.Error(), "node 1 heard") {
		t.Errorf("node 2: %v; want it to name node 0 or node 1", err)
	}
	c.lockAt(0, "after")
	c.lockAt(1, "after")
	// The remedy it names: the directory restored, it starts.
	if err := os.RemoveAll(c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(backup, c.dirs[2]); err != nil {
		t.Fatal(err)
	}
	c.start(2, c.listen(2))
	c.lockAt(2, "restored")
}

// TestLateFounderStartsOnFirstBoot: founders 0 and 1 of three start and
// serve; founder 2 starts for the first time later, with an empty data
// directory, as the others run (and hold state). It starts: nobody ever
// heard it with state.
func TestLateFounderStartsOnFirstBoot(t *testing.T) {
	c := &joinCluster{t: t, founders: 3, token: "tok", addrs: map[proc.ID]string{}, dirs: map[proc.ID]string{}, volatile: map[proc.ID]bool{},
		nodes: map[proc.ID]*Node{}, apis: map[proc.ID]*httptest.Server{},
		tweak: map[proc.ID]func(*Config){}, contact: map[proc.ID]proc.ID{}}
	lns := map[proc.ID]net.Listener{}
	for i := range proc.ID(3) {
		lns[i] = c.listen(i)
	}
	for i := range proc.ID(2) {
		c.start(i, lns[i])
	}
	c.lockAt(0, "before")
	c.recorded(1, 0) // node 1 heard node 0's agreement: the cluster ran
	if err := c.tryStart(2, lns[2]); err != nil {
		t.Fatalf("a founder starting late on the first boot: %v", err)
	}
	c.lockAt(2, "late")
}

// TestWipedJoinerRefusesToStart: node 3 joins three founders with an
// empty data directory (a first join: it starts), is added to the voters
// and serves; restarted from its directory, it rejoins and serves. Then,
// restarted with its directory emptied, it refuses to start, naming the
// directory, a founder that heard it with state and the remedy; the
// others serve on. Restarted from its directory restored, it serves
// again. Before, only the founders told each other whether they held
// state: the wiped joiner rejoined as itself, silently, a voter with no
// log, no term and no vote.
func TestWipedJoinerRefusesToStart(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.start(3, c.listen(3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.eventually("node 3 added to the voters", func() error {
		if _, err := c.client(0).Add(ctx, 3); err != nil && !strings.Contains(err.Error(), "a voter already") {
			return err
		}
		return nil
	})
	c.votersAre(0, 1, 2, 3)
	c.lockAt(3, "before")
	c.recorded(3, 0, 1, 2)

	// Restarted with its data, it rejoins.
	c.restart(3)
	c.lockAt(3, "restarted")

	c.stop(3)
	backup := filepath.Join(t.TempDir(), "backup")
	if err := os.CopyFS(backup, os.DirFS(c.dirs[3])); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(c.dirs[3]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(c.dirs[3], 0o755); err != nil {
		t.Fatal(err)
	}
	err := c.tryStart(3, c.listen(3))
	if err == nil {
		t.Fatal("node 3, which joined, started with its data directory emptied")
	}
	t.Logf("refused: %v", err)
	for _, says := range []string{c.dirs[3], "heard it with state at", "must not rejoin as itself",
		"restore the directory, or remove the member and join anew under a new id", "cohort cluster remove 3"} {
		if !errors.Is(err, ErrLostState) || !strings.Contains(err.Error(), says) {
			t.Errorf("node 3: %v; want ErrLostState saying %q", err, says)
		}
	}
	if !regexp.MustCompile(`node [012] heard it`).MatchString(err.Error()) {
		t.Errorf("node 3: %v; want it to name a founder", err)
	}
	// Refused before it ran a replicated log: the leaders' messages to it
	// started none, so it granted no vote and acknowledged no entry.
	for _, svc := range []string{lock.ServiceName, group.ServiceName, queue.ServiceName} {
		if _, err := os.Stat(live.StoragePath(c.dirs[3], svc)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("node 3, refused, ran the replicated log of %s (its storage: %v)", svc, err)
		}
	}
	// Three of the four voters serve on.
	c.lockAt(0, "after")
	c.lockAt(1, "after")
	// The remedy it names: the directory restored, it serves again.
	if err := os.RemoveAll(c.dirs[3]); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(backup, c.dirs[3]); err != nil {
		t.Fatal(err)
	}
	c.start(3, c.listen(3))
	c.lockAt(3, "restored")
}

// TestFounderDownAtAJoinRecordsTheJoinerOnceBack: founder 2 is down when
// node 3 first joins; node 3 starts once its wait is over (nobody had
// recorded it), and founders 0 and 1 record it with state. Founder 2,
// back, records it too (it gets the announcements the transport kept
// for it, or node 3's next one: a node that joined announces itself again
// to the founders it has not heard, TestJoinerAnnouncesAgainToFoundersUnheard),
// so a founder that was down can still tell it, should it come back
// empty, that it lost its state.
func TestFounderDownAtAJoinRecordsTheJoinerOnceBack(t *testing.T) {
	c := newJoinCluster(t, 3)
	c.lockAt(0, "before")
	c.stop(2)
	c.start(3, c.listen(3))
	c.recorded(3, 0, 1)
	c.start(2, c.listen(2))
	c.recorded(3, 2)
}
