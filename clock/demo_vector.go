package clock

import (
	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// action is one step of a scripted vector-clock process: send a message,
// wait for one, or perform a local event.
type action struct {
	op   byte // 's' send, 'r' receive, 'l' local
	to   proc.ID
	name string
}

// vscript is a process that follows its script one action per tick,
// keeping a vector clock by the three rules of logical.Vector, and reports
// the vector timestamp of every event. The process given compare compares
// the timestamps of the two named messages once it has received both.
type vscript struct {
	vc      logical.Vector
	script  []action
	next    int
	waiting bool
	got     map[string]logical.Vector
	compare [2]string
}

func (p *vscript) Start(env proc.Env) {
	p.vc = logical.New(env.N())
	p.got = map[string]logical.Vector{}
	env.SetTimer(Tick, "step")
}

func (p *vscript) Timeout(env proc.Env, _ any) { p.run(env) }

// run performs actions until it must wait for a message or the script ends.
func (p *vscript) run(env proc.Env) {
	for p.next < len(p.script) {
		a := p.script[p.next]
		switch a.op {
		case 'r':
			if _, ok := p.got[a.name]; !ok {
				p.waiting = true
				return
			}
		case 's':
			p.vc.Increment(env.Self()) // rule 1, then rule 2: ts(m) = VC
			env.Send(a.to, VStamped{Name: a.name, TS: p.vc.Copy()})
			env.Output(VStamp{V: p.vc.Copy()})
		case 'l':
			p.vc.Increment(env.Self())
			env.Output(VStamp{V: p.vc.Copy()})
		}
		p.next++
		if a.op != 'r' && p.next < len(p.script) {
			env.SetTimer(Tick, "step") // one action per tick, for a readable diagram
			return
		}
	}
}

func (p *vscript) Receive(env proc.Env, _ proc.ID, m proc.Message) {
	msg := m.(VStamped)
	p.vc.Merge(msg.TS) // rule 3: component-wise max, then rule 1
	p.vc.Increment(env.Self())
	env.Output(VStamp{V: p.vc.Copy()})
	p.got[msg.Name] = msg.TS
	a, b := p.compare[0], p.compare[1]
	if ta, ok := p.got[a]; ok && a != "" && (msg.Name == a || msg.Name == b) {
		if tb, ok := p.got[b]; ok {
			env.Output(compare(a, b, ta, tb))
		}
	}
	if p.waiting && p.next < len(p.script) && p.script[p.next].name == msg.Name {
		p.waiting = false
		p.next++
		p.run(env)
	}
}

func (p *vscript) Input(proc.Env, proc.Input) {}

// compare states what the timestamps of two messages tell, in the words of
// Tanenbaum & van Steen's table (§6.2).
func compare(a, b string, ta, tb logical.Vector) Compared {
	c := Compared{A: a, B: b, TA: ta, TB: tb, Order: logical.Compare(ta, tb).String()}
	switch logical.Compare(ta, tb) {
	case logical.Before:
		c.Conclusion = a + " may causally precede " + b
	case logical.After:
		c.Conclusion = b + " may causally precede " + a
	case logical.Equal:
		c.Conclusion = a + " and " + b + " have equal timestamps"
	default:
		c.Conclusion = a + " and " + b + " may conflict"
	}
	return c
}

// The two situations of Tanenbaum & van Steen's table (§6.2), as scripts
// for P1, P2, P3 (processes 0, 1, 2). Following the three rules:
//
// (a) P2 sends m1 (0,1,0); P1 receives it (1,1,0) and sends m2 (2,1,0);
// P2 has a local event (0,2,0) and sends m3 (0,3,0); P1 receives it
// (3,3,0) and sends m4 (4,3,0). P3 receives m2 and m4: (2,1,0) < (4,3,0).
//
// (b) P2 sends m1 (0,1,0); P1 receives it (1,1,0), sends m3 to P2
// (2,1,0), has a local event (3,1,0) and sends m2 (4,1,0); P2 receives m3
// (2,2,0) and sends m4 (2,3,0). (4,1,0) and (2,3,0) are incomparable.
var vectorScripts = map[string][3][]action{
	"a": {
		{{op: 'r', name: "m1"}, {op: 's', to: 2, name: "m2"}, {op: 'r', name: "m3"}, {op: 's', to: 2, name: "m4"}},
		{{op: 's', to: 0, name: "m1"}, {op: 'l'}, {op: 's', to: 0, name: "m3"}},
		nil,
	},
	"b": {
		{{op: 'r', name: "m1"}, {op: 's', to: 1, name: "m3"}, {op: 'l'}, {op: 's', to: 2, name: "m2"}},
		{{op: 's', to: 0, name: "m1"}, {op: 'r', name: "m3"}, {op: 's', to: 2, name: "m4"}},
		nil,
	},
}

func newVectorFigure(situation string) func(proc.ID, int) proc.Process {
	return func(id proc.ID, _ int) proc.Process {
		p := &vscript{script: vectorScripts[situation][id]}
		if id == 2 {
			p.compare = [2]string{"m2", "m4"}
		}
		return p
	}
}
