package election

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// The example of Tanenbaum & van Steen §6.5: processes 0–7, the coordinator
// 7 crashes, 4 notices first and sends ELECTION to 5, 6 and 7; 5 and 6
// answer OK; 5 and 6 hold elections; 6 answers 5; 6 wins and tells
// everyone. The run starts with the start-up election (7 wins), 7 crashes
// at 10 ms, and 4 gets Elect at 20 ms; the messages counted are those sent
// from then on.
func TestBullyFigureExample(t *testing.T) {
	const notice = 20 * time.Millisecond
	tr, _ := electionRun{Nodes: 8, Seed: 1, New: NewBully(BullyConfig{}),
		Faults: []sim.Fault{{Kind: sim.Crash, Node: 7, At: 10 * time.Millisecond}},
		Inputs: sim.Script{electAt(notice, 4)},
	}.run(t)
	if bad := judge(t, tr); len(bad) > 0 {
		t.Fatalf("violations: %v", bad)
	}
	live, _ := finalLeaders(tr)
	for p, l := range live {
		if l != 6 {
			t.Errorf("%s elected %s, want p6", p, l)
		}
	}
	byKind, links := sends(tr, notice)
	want := map[string]int{
		"election 4→5": 1, "election 4→6": 1, "election 4→7": 1, // 4 notices
		"answer 5→4": 1, "answer 6→4": 1, // 5 and 6 answer OK
		"election 5→6": 1, "election 5→7": 1, "election 6→7": 1, // 5 and 6 hold elections
		"answer 6→5": 1, // 6 answers 5
	}
	for p := 0; p < 6; p++ { // 6 wins and tells everyone below it
		want[fmt.Sprintf("coordinator 6→%d", p)] = 1
	}
	if !maps.Equal(links, want) {
		t.Errorf("messages after the notice:\n got %v\nwant %v", sorted(links), sorted(want))
	}
	if byKind["election"] != 6 || byKind["answer"] != 3 || byKind["coordinator"] != 6 {
		t.Errorf("by kind %v, want election 6, answer 3, coordinator 6", byKind)
	}
}

func sorted(m map[string]int) []string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s×%d", k, v))
	}
	slices.Sort(s)
	return s
}

// bullyAfterCrash runs n processes, crashes the highest at 10 ms and tells
// notice to elect at 20 ms; it returns the messages sent from then on and
// the turnaround (to the last Elected output).
func bullyAfterCrash(t *testing.T, n int, notice proc.ID) (int, time.Duration) {
	t.Helper()
	const at = 20 * time.Millisecond
	tr, _ := electionRun{Nodes: n, Seed: 1, New: NewBully(BullyConfig{}),
		Faults: []sim.Fault{{Kind: sim.Crash, Node: proc.ID(n - 1), At: 10 * time.Millisecond}},
		Inputs: sim.Script{electAt(at, notice)},
	}.run(t)
	if bad := judge(t, tr); len(bad) > 0 {
		t.Fatalf("n=%d: violations: %v", n, bad)
	}
	byKind, _ := sends(tr, at)
	return total(byKind), lastElected(tr) - at
}

// Coulouris et al.: in the best case the second-highest process notices the
// failure, elects itself at once and sends N−2 COORDINATOR messages; the
// turnaround is one message.
func TestBullyBestCase(t *testing.T) {
	for _, n := range []int{4, 8, 16} {
		msgs, turn := bullyAfterCrash(t, n, proc.ID(n-2))
		if msgs != n-2 {
			t.Errorf("n=%d: %d messages, want N−2 = %d", n, msgs, n-2)
		}
		if turn != time.Millisecond {
			t.Errorf("n=%d: turnaround %v, want one message (1ms)", n, turn)
		}
	}
}

// Coulouris et al.: in the worst case the lowest process notices, and every
// process holds an election: O(N²) messages.
func TestBullyWorstCaseQuadratic(t *testing.T) {
	m8, _ := bullyAfterCrash(t, 8, 0)
	m16, _ := bullyAfterCrash(t, 16, 0)
	ratio := float64(m16) / float64(m8)
	t.Logf("worst case: N=8 %d messages, N=16 %d messages, ratio %.2f", m8, m16, ratio)
	if ratio < 3 || ratio > 5 {
		t.Errorf("messages(16)/messages(8) = %d/%d = %.2f, want about 4", m16, m8, ratio)
	}
}

// Random crash-stop failures before and during the election, jittery
// latency inside the timeouts, and a perfect failure detector: E1, E2 and
// agreement hold.
func TestBullySweep(t *testing.T) {
	for _, n := range []int{3, 5, 8} {
		for seed := uint64(1); seed <= 50; seed++ {
			r := rand.New(rand.NewPCG(seed, uint64(n)))
			faults := randomCrashes(r, n, 30*time.Millisecond)
			tr, _ := electionRun{Nodes: n, Seed: seed, New: NewBully(BullyConfig{}),
				Latency:  sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond},
				Faults:   faults,
				Workload: newDetector(faults, []proc.ID{proc.ID(r.IntN(n))}),
			}.run(t)
			if bad := judge(t, tr); len(bad) > 0 {
				t.Errorf("n=%d seed %d faults %v: %v", n, seed, faults, bad)
			}
		}
	}
}

// Coulouris et al.: if the timeout is unreliable (p3 is live but its
// messages to p2 may take longer than T), p2 declares itself coordinator
// while p3 does too. p2 gets p3's COORDINATOR after sending its own and
// elects p3; p0 and p1 get p3's first and end with p2: E1 is violated.
func TestBullySlowProcessBreaksE1(t *testing.T) {
	slow := sim.Uniform{Min: time.Millisecond, Max: 12 * time.Millisecond}
	links := []sim.Link{{From: 3, To: 2, Latency: slow}}
	violated := 0
	for seed := uint64(1); seed <= 50; seed++ {
		tr, _ := electionRun{Nodes: 4, Seed: seed, New: NewBully(BullyConfig{}),
			Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond},
			Links:   links,
		}.run(t)
		if len(judge(t, tr)) > 0 {
			violated++
		}
	}
	t.Logf("slow p3: E1/agreement violated on %d of 50 seeds", violated)
	if violated == 0 {
		t.Error("a slow p3 never led to a violation in 50 seeds")
	}
}

// Coulouris et al.: a crashed process replaced by one with the same id can
// also violate E1: p2 notices p3's crash and declares itself while p3's
// replacement, starting, declares itself too; the COORDINATOR messages
// reach p0 and p1 in either order.
func TestBullyReplacedProcessBreaksE1(t *testing.T) {
	violated := 0
	for seed := uint64(1); seed <= 50; seed++ {
		tr, _ := electionRun{Nodes: 4, Seed: seed, New: NewBully(BullyConfig{}),
			Latency: sim.Uniform{Min: 500 * time.Microsecond, Max: 1500 * time.Microsecond},
			Faults: []sim.Fault{
				{Kind: sim.Crash, Node: 3, At: 10 * time.Millisecond},
				{Kind: sim.Recover, Node: 3, At: 20 * time.Millisecond},
			},
			Inputs: sim.Script{electAt(20*time.Millisecond, 2)},
		}.run(t)
		if len(judge(t, tr)) > 0 {
			violated++
		}
	}
	t.Logf("replaced p3: E1/agreement violated on %d of 50 seeds", violated)
	if violated == 0 {
		t.Error("a replaced p3 never led to a violation in 50 seeds")
	}
}
