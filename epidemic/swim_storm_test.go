package epidemic

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// stormEnv is the least of an Env that swim.apply and swim.take need:
// timers are numbered and forgotten, sends and outputs dropped.
type stormEnv struct {
	timers proc.TimerID
	rng    *rand.Rand
}

func (e *stormEnv) Self() proc.ID                            { return 0 }
func (e *stormEnv) N() int                                   { return 0 }
func (e *stormEnv) Neighbors() []proc.ID                     { return nil }
func (e *stormEnv) Now() time.Duration                       { return 0 }
func (e *stormEnv) Send(proc.ID, proc.Message)               {}
func (e *stormEnv) SetTimer(time.Duration, any) proc.TimerID { e.timers++; return e.timers }
func (e *stormEnv) CancelTimer(proc.TimerID)                 {}
func (e *stormEnv) Rand() *rand.Rand                         { return e.rng }
func (e *stormEnv) Output(proc.Output)                       {}
func (e *stormEnv) Storage() proc.Storage                    { return nil }

// BenchmarkSwimApplyStorm is one member's bookkeeping in a suspicion
// storm: each op, a fifth of a group of n is suspected, each suspicion
// confirmed by two more members (Lifeguard's K = 2 at SuspicionMult 4)
// and then refuted, while the member piggybacks its buffer on a ping
// every ten updates — the updates a member applies when many members
// are slow at once.
func BenchmarkSwimApplyStorm(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			p := Params{}.withDefaults()
			s := newSwim(&p, 0, n)
			env := &stormEnv{rng: rand.New(rand.NewPCG(1, 2))}
			m := n / 5
			applied := 0
			step := func(u Fact) {
				s.apply(env, u)
				if applied++; applied%10 == 0 {
					s.piggyback(nil)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for r := range b.N {
				inc := uint32(2 * r)
				for i := 1; i <= m; i++ {
					id := proc.ID(5*i - 4)
					for c := range 3 {
						step(Fact{State: StateSuspect, Member: id, Inc: inc, From: proc.ID((i + 1 + c) % n)})
					}
				}
				for i := 1; i <= m; i++ {
					step(Fact{State: StateAlive, Member: proc.ID(5*i - 4), Inc: inc + 1})
				}
			}
		})
	}
}
