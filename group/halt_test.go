package group_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/group"
)

// TestAHaltedReplicaRefuses: a node whose copy of the groups halted
// (consensus.Halted: a committed entry it cannot apply) ends its
// listeners with ErrHalted naming the entry, and refuses multicasts and
// listeners after, instead of going silent; the other nodes go on.
// Once it resumes (consensus.Resumed: it restored the leader's
// snapshot), it serves again.
func TestAHaltedReplicaRefuses(t *testing.T) {
	rs := replicatedGroups(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rs[0].Multicast(ctx, "g", []byte("m0")); err != nil {
		t.Fatal(err)
	}
	ds, wait, err := rs[0].Deliveries(ctx, "g", 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := <-ds; string(d.Body) != "m0" {
		t.Fatalf("delivered %q, want m0", d.Body)
	}
	group.Halt(rs[0], consensus.Halted{Index: 42, Reason: "an entry of a newer version"})
	for range ds { // ends
	}
	if err := wait(); !errors.Is(err, group.ErrHalted) || !strings.Contains(err.Error(), "entry 42") {
		t.Fatalf("a listener at the halted node: %v, want ErrHalted naming entry 42", err)
	}
	if _, err := rs[0].Multicast(ctx, "g", []byte("m1")); !errors.Is(err, group.ErrHalted) {
		t.Fatalf("a multicast at the halted node: %v, want ErrHalted", err)
	}
	if _, _, err := rs[0].Deliveries(ctx, "g", 1); !errors.Is(err, group.ErrHalted) {
		t.Fatalf("a listener opened at the halted node: %v, want ErrHalted", err)
	}
	d, err := rs[1].Multicast(ctx, "g", []byte("m2"))
	if err != nil || d.Pos != 2 {
		t.Fatalf("a multicast at another node: %+v, %v; want position 2", d, err)
	}
	group.Resume(rs[0], consensus.Resumed{Index: 50})
	if err := rs[0].Halted(); err != nil {
		t.Fatalf("Halted after it resumed: %v", err)
	}
	if d, err := rs[0].Multicast(ctx, "g", []byte("m3")); err != nil || d.Pos != 3 {
		t.Fatalf("a multicast at the resumed node: %+v, %v; want position 3", d, err)
	}
}
