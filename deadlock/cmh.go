package deadlock

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Chandy, Misra and Haas's edge chasing for the AND model (Chandy, Misra
// & Haas, ACM TOCS 1983; Kshemkalyani & Singhal §10.6; Coulouris et al.
// §17.5). A probe is a triple (i, j, k): it belongs to the deadlock
// detection initiated by Pi, and is sent by Pj, blocked, to Pk, for which
// Pj waits. In Kshemkalyani & Singhal's words, at Pk:
//
//	if Pi is locally dependent on itself
//	  then declare a deadlock
//	  else for all Pj and Pk such that Pi is locally dependent upon Pj,
//	         Pj is waiting on Pk, and Pj and Pk are on different sites,
//	       send a probe (i, j, k) to the home site of Pk
//
//	On the receipt of a probe (i, j, k), the site takes the following actions:
//	  if Pk is blocked, and dependentk(i) is false, and
//	     Pk has not replied to all requests of Pj,
//	  then begin
//	    dependentk(i) = true;
//	    if k = i then declare that Pi is deadlocked
//	    else for all m and n such that (a) Pk is dependent upon Pm, and
//	      (b) Pm is waiting on Pn, and (c) Pm and Pn are on different sites,
//	      send a probe (i, m, n) to the home site of Pn
//	  end
//
// Here every process is a site, so "locally dependent" is the process
// itself, and dependentk(i) is kept per probe computation: a blocked
// process forwards each computation of each initiator once.
//
// Who waits for whom. A blocked process knows the resources it waits for,
// not who holds them: the resource's owner does. So the probe on the edge
// Pj → Pk goes by the owner of the resource: Pj sends it there, and the
// owner, if Pj's request is still queued, fills in the holder Pk and sends
// it on (two messages per edge; one when the owner holds the resource
// itself). The owner plays the part of the resource controllers of Chandy,
// Misra and Haas's paper.
//
// When. The lock queues change the wait-for graph without anyone newly
// blocking: when a holder releases a resource, the next in its queue holds
// it, and those behind now wait for the new holder, which may close a
// cycle. So a blocked process begins a probe computation Wait after it
// blocks and again while it stays blocked (backing off, below); each
// computation is numbered, and a process forwards each one once.
//
// Backoff. Probing again every Wait for as long as a process stays
// blocked costs messages for every long wait that is no deadlock (a
// transaction queued behind a long one). So the waits between a blocked
// transaction's computations double, Wait, 2·Wait, 4·Wait…, up to
// MaxWait, as a sender backs off retransmissions (Metcalfe & Boggs's
// binary exponential backoff, with a bound). A cycle forms at some
// instant while its processes are blocked, and its highest process
// probes again at most MaxWait later: the detector's promise is
// MaxWait, not Wait. And a blocked process that drops a probe of a lower
// initiator by the priority rule learns that someone waits on it
// without being able to finish the detection: if it has backed off, it
// begins its next computation Wait from now and backs off from Wait
// again. A cycle whose last edge a lower process closes is then
// probed by its highest within about Wait of the lower one's probe, as
// without backoff.
//
// Resolution: one victim per cycle. A process forwards a probe only if
// the initiator's ID is higher than its own, a priority rule in the spirit
// of Sinha and Natarajan (IEEE TSE 1985): only the highest process of a
// cycle gets its probe round it, so the process that declares the
// deadlock is the highest on the cycle, and it aborts its own
// transaction, releasing its resources. Two cycles that share a process
// but have different highest processes may both be resolved, one victim
// each, even when aborting one victim would have broken both.
//
// The probe carries the path it went along, so the declaration names the
// cycle (the checkers verify it in the wait-for graph).
//
// Phantoms. Without aborts, a declared cycle is a cycle: a blocked process
// stays blocked. With them, a probe may go round a cycle whose member
// another detection has just aborted (Coulouris et al. §17.5.1 warns of
// it). A process that knows of the abort — it owns a resource the
// aborted transaction asked for — drops the probe; one that does not
// may declare the broken cycle, and abort a second victim. The sweeps
// measure how rare that is; deadlock-no-phantom reports each one.
//
// Assumes: reliable FIFO channels (a request reaches its owner before any
// probe about it; a release never overtakes its request), no failures.
//
// Cost: a probe computation sends at most two messages per wait-for edge
// out of processes below the initiator, O(e) messages for e edges; a
// deadlock is declared within MaxWait plus the time its probe takes round
// the cycle (two message delays per edge) of its forming.
type CMH struct {
	Site
	// Wait is the time a process stays blocked before it begins a probe
	// computation, and between its first two computations.
	Wait time.Duration
	// MaxWait bounds the wait between computations, which doubles from
	// Wait after each; MaxWait ≤ Wait probes every Wait (no backoff).
	MaxWait time.Duration

	began     int             // probe computations this process initiated
	forwarded map[proc.ID]int // dependent(i): the last computation of Pi forwarded
	ended     map[proc.ID]int // by process, the last of its transactions known to have ended here
	timer     proc.TimerID
	backoff   backoff

	// Broken variants, for the tests: deaf never declares (its probes come
	// back unheard); hasty declares when its first probe timer fires,
	// before any probe has come back.
	deaf, hasty bool
}

// Describe implements proc.Describer: the site's lock table and
// transaction, and the probe computations this process began.
func (p *CMH) Describe() any {
	return struct {
		SiteState
		Computations int `json:"computations"`
	}{p.State(), p.began}
}

// Probe is the probe (Init, Waiter.P, Holder.P) of Init's computation
// Comp, on the edge "Waiter waits for Holder, which holds resource Res".
// On its way from the waiter to the resource's owner Holder is unset
// (Seq 0); the owner fills it in. Path is the transactions the probe went
// through, from the initiator's.
type Probe struct {
	Init   proc.ID `json:"init"`
	Comp   int     `json:"comp"`
	Waiter Txn     `json:"waiter"`
	Res    proc.ID `json:"res"`
	Holder Txn     `json:"holder"`
	Path   []Txn   `json:"path"`
}

func (Probe) Kind() string { return "probe" }

func (m Probe) String() string {
	k := "?"
	if m.Holder.Seq != 0 {
		k = m.Holder.P.String()
	}
	return fmt.Sprintf("probe(%s#%d,%s,%s) r%d", m.Init, m.Comp, m.Waiter.P, k, m.Res)
}

// probeTimer is the timer of a blocked transaction's next computation.
type probeTimer struct{ seq int }

// NewCMH returns a process that begins probe computations after wait,
// backing off to DefaultBackoff times wait.
func NewCMH(wait time.Duration) *CMH { return &CMH{Wait: wait, MaxWait: DefaultBackoff * wait} }

// Clone is an independent deep copy of the process (the explorer copies
// processes where its search branches).
func (p *CMH) Clone() proc.Process {
	c := *p
	c.Site = p.Site.clone()
	c.forwarded, c.ended = maps.Clone(p.forwarded), maps.Clone(p.ended)
	return &c
}

func (p *CMH) Start(env proc.Env) {
	p.forwarded, p.ended = map[proc.ID]int{}, map[proc.ID]int{}
	env.Output(Detector{Wait: max(p.Wait, p.MaxWait)})
}

func (p *CMH) Input(env proc.Env, in proc.Input) {
	switch in := in.(type) {
	case Begin:
		if p.begin(env, in) && p.Waiting() {
			p.timer = p.backoff.start(env, p.Wait, probeTimer{p.txn.Seq})
		}
	case Finish:
		p.finish(env)
	}
}

func (p *CMH) Receive(env proc.Env, from proc.ID, m proc.Message) {
	if pr, ok := m.(Probe); ok {
		if pr.Holder.Seq == 0 {
			p.relay(env, pr)
		} else {
			p.onProbe(env, pr)
		}
		return
	}
	if r, ok := m.(Release); ok {
		p.ended[r.Txn.P] = max(p.ended[r.Txn.P], r.Txn.Seq)
	}
	if _, acquired := p.receive(env, from, m); acquired {
		env.CancelTimer(p.timer)
	}
}

// Timeout: still blocked in the same transaction, begin a computation,
// and another after Wait.
func (p *CMH) Timeout(env proc.Env, tag any) {
	t, ok := tag.(probeTimer)
	if !ok || t.seq != p.txn.Seq || !p.Waiting() {
		return
	}
	if p.hasty {
		p.declare(env, nil)
		return
	}
	p.began++
	p.send(env, Probe{Init: env.Self(), Comp: p.began}, nil)
	p.timer = p.backoff.next(env, p.Wait, p.MaxWait, probeTimer{p.txn.Seq})
}

// send sends the probe (init, self, ?) on every wait-for edge of the
// blocked transaction: to the owner of every resource it waits for.
func (p *CMH) send(env proc.Env, pr Probe, path []Txn) {
	pr.Waiter, pr.Holder = p.txn, Txn{}
	pr.Path = append(slices.Clip(path), p.txn)
	for _, r := range p.pending {
		pr.Res = r
		env.Send(r, pr)
	}
}

// relay, at the owner of pr.Res: if the waiter's request is still queued,
// the probe goes on to the holder.
func (p *CMH) relay(env proc.Env, pr Probe) {
	holder, ok := p.queued(pr.Waiter)
	if pr.Res != env.Self() || !ok || p.stale(pr.Path) {
		return
	}
	pr.Holder = holder
	if holder.P == env.Self() {
		p.onProbe(env, pr)
		return
	}
	env.Send(holder.P, pr)
}

// onProbe is the receipt of the probe (i, j, k) at Pk.
func (p *CMH) onProbe(env proc.Env, pr Probe) {
	if pr.Holder != p.txn || !p.Waiting() || p.stale(pr.Path) { // Pk is not blocked (in that transaction)
		return
	}
	if pr.Init == env.Self() {
		if !p.deaf && !p.stale(pr.Path) {
			cycle := make([]proc.ID, len(pr.Path))
			for i, t := range pr.Path {
				cycle[i] = t.P
			}
			p.declare(env, cycle)
		}
		return
	}
	if pr.Init < env.Self() {
		// The priority rule: a lower initiator's probe goes no further,
		// but this process's own computation may soon be due.
		p.timer = p.backoff.hurry(env, p.timer, p.Wait, probeTimer{p.txn.Seq})
		return
	}
	if p.forwarded[pr.Init] >= pr.Comp {
		return // dependentk(i) already true
	}
	p.forwarded[pr.Init] = pr.Comp
	p.send(env, pr, pr.Path)
}

// stale reports whether a transaction of the path is known here to have
// ended since the probe went through it: aborted by another victim's
// detection, its Release reached this process, which owns a resource it
// had asked for. Such a cycle is broken already: declaring it would be a
// phantom deadlock (Coulouris et al. §17.5.1), and aborting a second
// victim for it a waste. Owners and forwarders drop a stale probe too, so
// what any process on its way knows counts.
func (p *CMH) stale(path []Txn) bool {
	return slices.ContainsFunc(path, func(t Txn) bool { return t.Seq <= p.ended[t.P] })
}

// declare declares the transaction deadlocked on cycle and aborts it: the
// victim is the declaring process, the highest on the cycle.
func (p *CMH) declare(env proc.Env, cycle []proc.ID) {
	env.CancelTimer(p.timer)
	env.Output(Deadlock{Txn: p.txn, Cycle: cycle})
	p.abort(env, "deadlock")
}
