package globalstate

import (
	"fmt"

	"github.com/cohort-go/cohort/trace"
)

// bound is a predicate bound to a lattice: its variables are read from the
// local states of the trace's processes.
type bound struct {
	l    *Lattice
	pred *Predicate
	// vals[v][p][k] is variable v at process p after its first k events
	// (absent for "events", which is k).
	vals map[varRef][][]int32
	eval func(c trace.Cut) bool
}

// bind checks that the predicate fits the lattice's trace and compiles it.
func (l *Lattice) bind(p *Predicate) (*bound, error) {
	b := &bound{l: l, pred: p, vals: map[varRef][][]int32{}}
	var err error
	walk(p.root, func(n *node) {
		if err != nil {
			return
		}
		if n.op == opVar && n.proc >= l.n {
			err = &PredicateError{Src: p.src, Col: n.col, Token: n.tok,
				Msg: fmt.Sprintf("%s names process p%d, but the trace has %s", quoteShort(n.tok), n.proc, processRange(l.n))}
			return
		}
		if n.op == opVar || n.op == opAgg {
			b.values(n.v)
		}
	})
	if err != nil {
		return nil, err
	}
	b.eval = b.boolFn(p.root)
	return b, nil
}

func processRange(n int) string {
	if n == 1 {
		return "only p0"
	}
	return fmt.Sprintf("p0..p%d", n-1)
}

// values computes variable v at every local state of every process.
func (b *bound) values(v varRef) [][]int32 {
	if v.name == "events" {
		return nil
	}
	if a, ok := b.vals[v]; ok {
		return a
	}
	l := b.l
	out := make([][]int32, l.n)
	for p := range l.n {
		a := make([]int32, l.size[p]+1)
		var cur int32
		if v.name == "up" {
			cur = 1
		}
		a[0] = cur
		for k := 1; k <= l.size[p]; k++ {
			e := &l.t.Events[l.Event(p, k)]
			cur = step(v, cur, e)
			a[k] = cur
		}
		out[p] = a
	}
	b.vals[v] = out
	return out
}

// step is variable v after event e, from cur before it.
func step(v varRef, cur int32, e *trace.Event) int32 {
	switch v.name {
	case "cs":
		switch {
		case e.Kind == trace.Output && e.Type == "enter":
			return 1
		case e.Kind == trace.Output && e.Type == "exit", e.Kind.Stops(), e.Kind.Begins():
			return 0
		}
	case "wanting":
		switch {
		case e.Kind == trace.Input && e.Type == "acquire":
			return 1
		case e.Kind == trace.Output && e.Type == "enter", e.Kind.Stops(), e.Kind.Begins():
			return 0
		}
	case "up":
		switch {
		case e.Kind.Stops():
			return 0
		case e.Kind.Begins():
			return 1
		}
	case "sent":
		if e.Kind == trace.Send {
			return cur + 1
		}
	case "received":
		if e.Kind == trace.Recv {
			return cur + 1
		}
	case "inputs":
		if e.Kind == trace.Input && e.Type == v.param {
			return cur + 1
		}
	case "outputs":
		if e.Kind == trace.Output && e.Type == v.param {
			return cur + 1
		}
	}
	return cur
}

// at is variable v of process p in state c.
func (b *bound) reader(v varRef, p int) func(c trace.Cut) int64 {
	if v.name == "events" {
		return func(c trace.Cut) int64 { return int64(c[p]) }
	}
	a := b.vals[v][p]
	return func(c trace.Cut) int64 { return int64(a[c[p]]) }
}

func (b *bound) boolFn(n *node) func(c trace.Cut) bool {
	switch n.op {
	case opBool:
		v := n.num != 0
		return func(trace.Cut) bool { return v }
	case opVar:
		r := b.reader(n.v, n.proc)
		return func(c trace.Cut) bool { return r(c) != 0 }
	case opAgg:
		all := n.agg == "all"
		if n.v.name == "events" {
			return func(c trace.Cut) bool {
				for _, k := range c {
					if (k != 0) != all {
						return !all
					}
				}
				return all
			}
		}
		vals := b.vals[n.v]
		return func(c trace.Cut) bool {
			for p, a := range vals {
				if (a[c[p]] != 0) != all {
					return !all
				}
			}
			return all
		}
	case opNot:
		x := b.boolFn(n.l)
		return func(c trace.Cut) bool { return !x(c) }
	case opAnd:
		x, y := b.boolFn(n.l), b.boolFn(n.r)
		return func(c trace.Cut) bool { return x(c) && y(c) }
	case opOr:
		x, y := b.boolFn(n.l), b.boolFn(n.r)
		return func(c trace.Cut) bool { return x(c) || y(c) }
	case opCmp:
		var x, y func(c trace.Cut) int64
		if n.l.typ == tBool {
			x, y = asInt(b.boolFn(n.l)), asInt(b.boolFn(n.r))
		} else {
			x, y = b.intFn(n.l), b.intFn(n.r)
		}
		switch n.rel {
		case "==":
			return func(c trace.Cut) bool { return x(c) == y(c) }
		case "!=":
			return func(c trace.Cut) bool { return x(c) != y(c) }
		case "<":
			return func(c trace.Cut) bool { return x(c) < y(c) }
		case "<=":
			return func(c trace.Cut) bool { return x(c) <= y(c) }
		case ">":
			return func(c trace.Cut) bool { return x(c) > y(c) }
		case ">=":
			return func(c trace.Cut) bool { return x(c) >= y(c) }
		}
	}
	panic(fmt.Sprintf("globalstate: %s is not a truth value", render(n, 0)))
}

func asInt(f func(c trace.Cut) bool) func(c trace.Cut) int64 {
	return func(c trace.Cut) int64 {
		if f(c) {
			return 1
		}
		return 0
	}
}

func (b *bound) intFn(n *node) func(c trace.Cut) int64 {
	switch n.op {
	case opNum:
		v := n.num
		return func(trace.Cut) int64 { return v }
	case opVar:
		return b.reader(n.v, n.proc)
	case opAgg:
		count := n.agg == "count"
		if n.v.name == "events" {
			return func(c trace.Cut) int64 {
				var s int64
				for _, k := range c {
					if count {
						if k != 0 {
							s++
						}
					} else {
						s += int64(k)
					}
				}
				return s
			}
		}
		vals := b.vals[n.v]
		if count {
			return func(c trace.Cut) int64 {
				var s int64
				for p, a := range vals {
					if a[c[p]] != 0 {
						s++
					}
				}
				return s
			}
		}
		return func(c trace.Cut) int64 {
			var s int64
			for p, a := range vals {
				s += int64(a[c[p]])
			}
			return s
		}
	case opAdd:
		x, y := b.intFn(n.l), b.intFn(n.r)
		return func(c trace.Cut) int64 { return x(c) + y(c) }
	case opSub:
		x, y := b.intFn(n.l), b.intFn(n.r)
		return func(c trace.Cut) int64 { return x(c) - y(c) }
	}
	panic(fmt.Sprintf("globalstate: %s is not a number", render(n, 0)))
}

// Holds reports whether predicate p holds in the global state of cut c,
// which must be a cut of the lattice's trace (it need not be consistent).
func (l *Lattice) Holds(p *Predicate, c trace.Cut) (bool, error) {
	b, err := l.bind(p)
	if err != nil {
		return false, err
	}
	cc := make(trace.Cut, l.n)
	for q := range l.n {
		if q < len(c) {
			cc[q] = min(max(c[q], 0), l.size[q])
		}
	}
	return b.eval(cc), nil
}
