package globalstate

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseRendersCanonically(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"count(cs) >= 2", "count(cs) >= 2"},
		{"cs(p1)", "cs(p1)"},
		{"  cs( p1 )&&!wanting(p0)", "cs(p1) && !wanting(p0)"},
		{"a_or_b(p0) == 1 || true", ""}, // unknown variable: see the errors test
		{"(cs(p0) || cs(p1)) && up(p2)", "(cs(p0) || cs(p1)) && up(p2)"},
		{"cs(p0) || cs(p1) && up(p2)", "cs(p0) || cs(p1) && up(p2)"},
		{"!(cs(p0) && cs(p1))", "!(cs(p0) && cs(p1))"},
		{"outputs[enter](p0) - outputs[exit](p0) > 0", "outputs[enter](p0) - outputs[exit](p0) > 0"},
		{`inputs["a b"](p0) == 1`, `inputs["a b"](p0) == 1`},
		{`outputs["enter"](p0) == 1`, `outputs[enter](p0) == 1`},
		{"sum(sent) - (sum(received) - 1) >= -3", "sum(sent) - (sum(received) - 1) >= -3"},
		{"cs(p0) == cs(p1)", "cs(p0) == cs(p1)"},
		{"((true))", "true"},
		{"all(up) && any(cs) && count(outputs[lent]) < 3", "all(up) && any(cs) && count(outputs[lent]) < 3"},
	} {
		p, err := Parse(c.src)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q parsed as %q, want an error", c.src, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if got := p.String(); got != c.want {
			t.Errorf("%q renders %q, want %q", c.src, got, c.want)
		}
	}
}

// Every error names the column and the text of the bad token.
func TestParseErrorsNameTheToken(t *testing.T) {
	for _, c := range []struct {
		src, token string
		col        int
		msg        string
	}{
		{"count(cs) >= x", "x", 14, `unknown variable "x"`},
		{"count(cs) >=", "", 13, "unexpected the end of the predicate"},
		{"cz(p1)", "cz", 1, `unknown variable "cz" (did you mean "cs"?)`},
		{"cs(1)", "1", 4, `unexpected "1": want a process such as p0`},
		{"cs(p01)", "p01", 4, `unexpected "p01": want a process such as p0`},
		{"cs(p1) & cs(p2)", "&", 8, `unexpected "&": want "&&"`},
		{"cs(p1) = 1", "=", 8, `want "=="`},
		{"count(cs)", "count(cs)", 1, "the predicate is a number, not a truth value"},
		{"cs(p0) + 1 > 0", "cs(p0)", 1, `"cs(p0)" is a truth value; "+" needs a number`},
		{"cs(p0) >= 1", "cs(p0)", 1, `"cs(p0)" is a truth value; ">=" needs a number`},
		{"!count(cs)", "count(cs)", 2, `"count(cs)" is a number; "!" needs a truth value`},
		{"cs(p0) == 1", "==", 8, `"==" compares a truth value with a number`},
		{"1 < 2 < 3", "<", 7, "comparisons do not chain"},
		{"outputs(p0) > 1", "(", 8, `"[": outputs takes a type, outputs[enter]`},
		{"cs[x](p0)", "[", 3, "cs takes no type"},
		{"count(p0)", "p0", 7, `unknown variable "p0"`},
		{"count cs", "count", 1, `"count" is an aggregate`},
		{"cs(p0) cs(p1)", "cs", 8, "want an operator"},
		{"(cs(p0)", "", 8, `unexpected the end of the predicate: want ")"`},
		{"cs(p0))", ")", 7, "want an operator"},
		{`outputs["x](p0)`, `"x](p0)`, 9, "unterminated string"},
		{"99999999999999999999 > 1", "99999999999999999999", 1, "too large"},
		{"cs(p0) $ 1", "$", 8, `unexpected "$"`},
		{"", "", 1, "unexpected the end of the predicate"},
		{"é", "é", 1, `unexpected "é"`},
		{strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200), "(", 102, "nested more than"},
	} {
		_, err := Parse(c.src)
		var pe *PredicateError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a *PredicateError", c.src, err)
			continue
		}
		if pe.Token != c.token || pe.Col != c.col || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v (token %q, column %d); want token %q at column %d saying %q", c.src, err, pe.Token, pe.Col, c.token, c.col, c.msg)
		}
		if !strings.HasPrefix(err.Error(), "predicate ") {
			t.Errorf("%q: %v does not name the predicate", c.src, err)
		}
	}
}

func TestParseRandomPredicatesRoundTrip(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 11))
		src := randomPredicate(r, 4, 4)
		p, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		roundTrip(t, p)
	}
}

func roundTrip(t *testing.T, p *Predicate) {
	t.Helper()
	q, err := Parse(p.String())
	if err != nil {
		t.Fatalf("%q renders %q, which does not parse: %v", p.Source(), p.String(), err)
	}
	if q.String() != p.String() {
		t.Fatalf("%q renders %q, which renders %q", p.Source(), p.String(), q.String())
	}
	if render(q.root, 0) != render(p.root, 0) || !sameTree(p.root, q.root) {
		t.Fatalf("%q and its rendering %q parse differently", p.Source(), p.String())
	}
}

func sameTree(a, b *node) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.op == b.op && a.typ == b.typ && a.num == b.num && a.v == b.v && a.proc == b.proc &&
		a.agg == b.agg && a.rel == b.rel && sameTree(a.l, b.l) && sameTree(a.r, b.r)
}

// FuzzParse checks that Parse never panics, that it rejects input only
// with a *PredicateError whose column is inside the input, and that what
// it accepts renders to a predicate that parses to the same tree. Run the
// fuzzer with
//
//	go test -run='^$' -fuzz=FuzzParse ./globalstate
func FuzzParse(f *testing.F) {
	for _, s := range []string{"count(cs) >= 2", "cs(p1)", "!(cs(p0) && wanting(p1)) || all(up)",
		`outputs["enter"](p3) - inputs[acquire](p0) >= -1`, "sum(sent) == sum(received)", "((", "cs(p"} {
		f.Add(s)
	}
	for seed := range uint64(10) {
		f.Add(randomPredicate(rand.New(rand.NewPCG(seed, 12)), 3, 3))
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			var pe *PredicateError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %v is not a *PredicateError", src, err)
			}
			if pe.Col < 1 || pe.Col > len([]rune(src))+1 {
				t.Fatalf("%q: error at column %d, outside the input", src, pe.Col)
			}
			return
		}
		roundTrip(t, p)
	})
}
