package deadlock

import (
	"time"

	"github.com/cohort-go/cohort/proc"
)

// The timeout detector, the naive baseline that many lock managers use
// (Coulouris et al. §16.4 on timeouts in locking; Kshemkalyani & Singhal
// ch. 10): a transaction blocked longer than T is taken for deadlocked and
// aborted by its own process.
//
//	on blocking:        set a timer T
//	on holding all:     cancel it
//	on the timer:       declare a deadlock; abort the transaction
//
// It needs no messages and finds every deadlock within T of its forming.
// But it cannot tell a deadlock from a long wait — behind a long holder,
// or a long queue — so it declares deadlocks that do not exist (phantom
// detections, the checker deadlock-no-phantom counts them) and aborts
// transactions that would have finished. The smaller T, the quicker the
// real deadlocks go and the more false ones it declares.
//
// Assumes: reliable FIFO channels (those of the resource model), no
// failures. Cost: no messages of its own.
type Timeout struct {
	Site
	// T is how long a transaction may stay blocked.
	T     time.Duration
	timer proc.TimerID
}

// NewTimeout returns a process that aborts transactions blocked for t.
func NewTimeout(t time.Duration) *Timeout { return &Timeout{T: t} }

type timeoutTimer struct{ seq int }

func (p *Timeout) Start(env proc.Env) { env.Output(Detector{Wait: p.T}) }

func (p *Timeout) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Begin:
		if p.begin(env, in) && p.Waiting() {
			p.timer = env.SetTimer(p.T, timeoutTimer{p.txn.Seq})
		}
	case Finish:
		p.finish(env)
	}
}

func (p *Timeout) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if _, acquired := p.receive(env, from, m); acquired {
		env.CancelTimer(p.timer)
	}
}

func (p *Timeout) Timeout(env proc.Env, tag any) {
	if t, ok := tag.(timeoutTimer); !ok || t.seq != p.txn.Seq || !p.Waiting() {
		return
	}
	env.Output(Deadlock{Txn: p.txn})
	p.abort(env, "timeout")
}
