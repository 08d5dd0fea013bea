package globalstate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cohort-go/cohort/internal/suggest"
)

// Predicate is a parsed predicate over global states (see the package
// documentation for the language). It is not bound to a trace: the same
// predicate can be asked of many runs.
type Predicate struct {
	src  string
	root *node
}

// MaxPredicate is the longest predicate Parse accepts, in bytes.
const MaxPredicate = 4096

// maxDepth bounds the nesting of a predicate, so that a hostile one cannot
// exhaust the stack.
const maxDepth = 100

// PredicateError is a predicate that does not parse, or names what the
// trace it is asked of does not have (a process out of range). Col is the
// 1-based column (in characters) of the bad token, Token its text ("" at
// the end of the predicate).
type PredicateError struct {
	Src   string
	Col   int
	Token string
	Msg   string
}

func (e *PredicateError) Error() string {
	return fmt.Sprintf("predicate %s: column %d: %s", quoteShort(e.Src), e.Col, e.Msg)
}

// typ is the type of an expression.
type typ uint8

const (
	tBool typ = iota + 1
	tInt
)

func (t typ) String() string {
	if t == tBool {
		return "a truth value"
	}
	return "a number"
}

type opKind uint8

const (
	opNum  opKind = iota + 1 // num
	opBool                   // num: 0 or 1
	opVar                    // v at process proc
	opAgg                    // agg over v
	opNot                    // !l
	opAnd                    // l && r
	opOr                     // l || r
	opCmp                    // l rel r
	opAdd                    // l + r
	opSub                    // l - r
)

// varRef names a local variable: "cs", or "outputs" with param "enter".
type varRef struct {
	name, param string
}

func (v varRef) String() string {
	if v.param == "" {
		return v.name
	}
	return v.name + "[" + quoteParam(v.param) + "]"
}

// node is an expression of the predicate.
type node struct {
	op   opKind
	typ  typ
	num  int64
	v    varRef
	proc int    // process of an opVar
	agg  string // count, sum, any, all
	rel  string // == != < <= > >=
	l, r *node
	col  int    // column of the token the node comes from, for errors of meaning
	tok  string // that token
}

// variables are the local variables and their types; the parameterized
// ones take a type in brackets.
var variables = map[string]struct {
	typ   typ
	param bool
}{
	"cs":       {tBool, false},
	"wanting":  {tBool, false},
	"up":       {tBool, false},
	"events":   {tInt, false},
	"sent":     {tInt, false},
	"received": {tInt, false},
	"inputs":   {tInt, true},
	"outputs":  {tInt, true},
}

var variableNames = []string{"cs", "wanting", "up", "events", "sent", "received", "inputs", "outputs"}

var aggregates = map[string]typ{"count": tInt, "sum": tInt, "any": tBool, "all": tBool}

var aggregateNames = []string{"count", "sum", "any", "all"}

// Parse parses a predicate. The result must be a truth value.
func Parse(src string) (*Predicate, error) {
	if len(src) > MaxPredicate {
		return nil, &PredicateError{Src: src, Col: utf8.RuneCountInString(src[:MaxPredicate]), Msg: fmt.Sprintf("longer than %d bytes", MaxPredicate)}
	}
	p := &parser{src: src}
	p.lex()
	if p.err != nil {
		return nil, p.err
	}
	root := p.or(0)
	if p.err == nil && p.peek().kind != tkEOF {
		p.unexpected(p.peek(), "an operator (&& || == != < <= > >= + -) or the end")
	}
	if p.err == nil && root.typ != tBool {
		p.err = &PredicateError{Src: src, Col: 1, Token: src, Msg: "the predicate is a number, not a truth value: compare it (count(cs) >= 2)"}
	}
	if p.err != nil {
		return nil, p.err
	}
	return &Predicate{src: src, root: root}, nil
}

// MustParse is Parse that panics on error, for predicates written in code.
func MustParse(src string) *Predicate {
	p, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return p
}

// Source is the predicate as it was given to Parse.
func (p *Predicate) Source() string { return p.src }

// String renders the predicate canonically: Parse(p.String()) is the same
// predicate, and renders the same.
func (p *Predicate) String() string { return render(p.root, 0) }

// Processes lists the processes the predicate names (cs(p2) names 2), in
// increasing order.
func (p *Predicate) Processes() []int {
	seen := map[int]bool{}
	var out []int
	walk(p.root, func(n *node) {
		if n.op == opVar && !seen[n.proc] {
			seen[n.proc] = true
			out = append(out, n.proc)
		}
	})
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func walk(n *node, f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	walk(n.l, f)
	walk(n.r, f)
}

// Precedence levels for rendering: a child of lower precedence than its
// context is parenthesized.
const (
	precOr = iota + 1
	precAnd
	precNot
	precCmp
	precSum
	precPrim
)

func prec(n *node) int {
	switch n.op {
	case opOr:
		return precOr
	case opAnd:
		return precAnd
	case opNot:
		return precNot
	case opCmp:
		return precCmp
	case opAdd, opSub:
		return precSum
	}
	return precPrim
}

func render(n *node, ctx int) string {
	var s string
	switch n.op {
	case opNum:
		s = strconv.FormatInt(n.num, 10)
	case opBool:
		s = strconv.FormatBool(n.num != 0)
	case opVar:
		s = n.v.String() + "(p" + strconv.Itoa(n.proc) + ")"
	case opAgg:
		s = n.agg + "(" + n.v.String() + ")"
	case opNot:
		s = "!" + render(n.l, precNot)
	case opAnd:
		s = render(n.l, precAnd) + " && " + render(n.r, precAnd+1)
	case opOr:
		s = render(n.l, precOr) + " || " + render(n.r, precOr+1)
	case opCmp:
		s = render(n.l, precCmp+1) + " " + n.rel + " " + render(n.r, precCmp+1)
	case opAdd:
		s = render(n.l, precSum) + " + " + render(n.r, precSum+1)
	case opSub:
		s = render(n.l, precSum) + " - " + render(n.r, precSum+1)
	}
	if prec(n) < ctx {
		return "(" + s + ")"
	}
	return s
}

// quoteParam renders a variable's type parameter: bare if it reads back as
// one word, quoted otherwise.
func quoteParam(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !paramRune(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

func paramRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r == '/' || r == ':' ||
		('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}

// The lexer.

type tokKind uint8

const (
	tkEOF tokKind = iota
	tkName
	tkNum
	tkString // a quoted type parameter
	tkParam  // a bare type parameter, inside brackets
	tkPunct
)

type token struct {
	kind tokKind
	text string // the source text; for tkString the unquoted value
	col  int
}

type parser struct {
	src  string
	toks []token
	pos  int
	err  error
}

func (p *parser) fail(col int, tok, format string, args ...any) {
	if p.err == nil {
		p.err = &PredicateError{Src: p.src, Col: col, Token: tok, Msg: fmt.Sprintf(format, args...)}
	}
}

// describe is a token for "unexpected X".
func describe(t token) string {
	switch t.kind {
	case tkEOF:
		return "the end of the predicate"
	case tkString:
		return strconv.Quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) unexpected(t token, want string) {
	p.fail(t.col, t.text, "unexpected %s: want %s", describe(t), want)
}

var puncts = []string{"&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", "[", "]", "+", "-"}

func (p *parser) lex() {
	s := p.src
	col := 1
	inBrackets := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			p.fail(col, s[i:i+1], "invalid UTF-8")
			return
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			i += size
			col++
			continue
		case r == '"':
			v, err := strconv.QuotedPrefix(s[i:])
			if err != nil {
				p.fail(col, s[i:], "unterminated string %s", quoteShort(s[i:]))
				return
			}
			u, _ := strconv.Unquote(v)
			p.toks = append(p.toks, token{tkString, u, col})
			i += len(v)
			col += utf8.RuneCountInString(v)
			continue
		case inBrackets && paramRune(r):
			j := i
			for j < len(s) && paramRune(rune(s[j])) {
				j++
			}
			p.toks = append(p.toks, token{tkParam, s[i:j], col})
			col += j - i
			i = j
			continue
		case r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z'):
			j := i
			for j < len(s) && (s[j] == '_' || ('a' <= s[j] && s[j] <= 'z') || ('A' <= s[j] && s[j] <= 'Z') || ('0' <= s[j] && s[j] <= '9')) {
				j++
			}
			p.toks = append(p.toks, token{tkName, s[i:j], col})
			col += j - i
			i = j
			continue
		case '0' <= r && r <= '9':
			j := i
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			p.toks = append(p.toks, token{tkNum, s[i:j], col})
			col += j - i
			i = j
			continue
		}
		matched := false
		for _, pu := range puncts {
			if strings.HasPrefix(s[i:], pu) {
				p.toks = append(p.toks, token{tkPunct, pu, col})
				switch pu {
				case "[":
					inBrackets = true
				case "]":
					inBrackets = false
				}
				i += len(pu)
				col += len(pu)
				matched = true
				break
			}
		}
		if !matched {
			what := string(r)
			switch r {
			case '&', '|', '=':
				what = string(r)
				p.fail(col, what, "unexpected %q: want %s", what, map[rune]string{'&': `"&&"`, '|': `"||"`, '=': `"=="`}[r])
			default:
				p.fail(col, what, "unexpected %q", what)
			}
			return
		}
	}
	p.toks = append(p.toks, token{tkEOF, "", col})
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tkPunct && t.text == s
}

func (p *parser) expect(s, want string) token {
	t := p.peek()
	if t.kind != tkPunct || t.text != s {
		p.unexpected(t, want)
		return t
	}
	return p.next()
}

// errNode stands for an expression that failed to parse; the sticky error
// says why.
var errNode = &node{op: opBool, typ: tBool}

func (p *parser) deep(depth int) bool {
	if depth > maxDepth {
		t := p.peek()
		p.fail(t.col, t.text, "nested more than %d deep", maxDepth)
		return true
	}
	return false
}

// want checks that n has type t where the operator op needs it.
func (p *parser) want(n *node, t typ, op string) {
	if p.err == nil && n.typ != t {
		p.fail(n.col, n.tok, "%s is %s; %s needs %s", quoteShort(n.tok), n.typ, op, t)
	}
}

func (p *parser) or(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	n := p.and(depth)
	for p.err == nil && p.isPunct("||") {
		t := p.next()
		r := p.and(depth)
		p.want(n, tBool, `"||"`)
		p.want(r, tBool, `"||"`)
		n = &node{op: opOr, typ: tBool, l: n, r: r, col: t.col, tok: t.text}
	}
	return n
}

func (p *parser) and(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	n := p.not(depth)
	for p.err == nil && p.isPunct("&&") {
		t := p.next()
		r := p.not(depth)
		p.want(n, tBool, `"&&"`)
		p.want(r, tBool, `"&&"`)
		n = &node{op: opAnd, typ: tBool, l: n, r: r, col: t.col, tok: t.text}
	}
	return n
}

func (p *parser) not(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	if p.isPunct("!") {
		t := p.next()
		x := p.not(depth + 1)
		p.want(x, tBool, `"!"`)
		return &node{op: opNot, typ: tBool, l: x, col: t.col, tok: t.text}
	}
	return p.cmp(depth)
}

var relations = []string{"==", "!=", "<", "<=", ">", ">="}

func (p *parser) cmp(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	n := p.sum(depth)
	t := p.peek()
	if p.err != nil || t.kind != tkPunct || !contains(relations, t.text) {
		return n
	}
	p.next()
	r := p.sum(depth)
	if p.err != nil {
		return errNode
	}
	if t.text == "==" || t.text == "!=" {
		if n.typ != r.typ {
			p.fail(t.col, t.text, "%q compares %s with %s", t.text, n.typ, r.typ)
		}
	} else {
		p.want(n, tInt, strconv.Quote(t.text))
		p.want(r, tInt, strconv.Quote(t.text))
	}
	if nt := p.peek(); p.err == nil && nt.kind == tkPunct && contains(relations, nt.text) {
		p.fail(nt.col, nt.text, "unexpected %q: comparisons do not chain (write a < b && b < c)", nt.text)
	}
	return &node{op: opCmp, typ: tBool, rel: t.text, l: n, r: r, col: t.col, tok: t.text}
}

func (p *parser) sum(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	n := p.prim(depth)
	for p.err == nil && (p.isPunct("+") || p.isPunct("-")) {
		t := p.next()
		r := p.prim(depth)
		p.want(n, tInt, strconv.Quote(t.text))
		p.want(r, tInt, strconv.Quote(t.text))
		op := opAdd
		if t.text == "-" {
			op = opSub
		}
		n = &node{op: op, typ: tInt, l: n, r: r, col: t.col, tok: t.text}
	}
	return n
}

const wantOperand = "a number, true, false, \"(\", a variable at a process (cs(p0)) or count, sum, any, all"

func (p *parser) prim(depth int) *node {
	if p.err != nil || p.deep(depth) {
		return errNode
	}
	t := p.next()
	switch {
	case t.kind == tkNum:
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil || v > 1<<53 {
			p.fail(t.col, t.text, "number %s is too large", quoteShort(t.text))
			return errNode
		}
		return &node{op: opNum, typ: tInt, num: v, col: t.col, tok: t.text}
	case t.kind == tkPunct && t.text == "-":
		// A negative number.
		n := p.next()
		if n.kind != tkNum {
			p.unexpected(n, "a number after \"-\"")
			return errNode
		}
		v, err := strconv.ParseInt(n.text, 10, 64)
		if err != nil || v > 1<<53 {
			p.fail(n.col, n.text, "number %s is too large", quoteShort(n.text))
			return errNode
		}
		return &node{op: opNum, typ: tInt, num: -v, col: t.col, tok: "-" + n.text}
	case t.kind == tkPunct && t.text == "(":
		n := p.or(depth + 1)
		p.expect(")", `")"`)
		return n
	case t.kind == tkName && (t.text == "true" || t.text == "false"):
		var v int64
		if t.text == "true" {
			v = 1
		}
		return &node{op: opBool, typ: tBool, num: v, col: t.col, tok: t.text}
	case t.kind == tkName:
		if at, ok := aggregates[t.text]; ok && p.isPunct("(") {
			p.next()
			v, _ := p.variable()
			close := p.expect(")", `")" after the variable (an aggregate reads one variable over every process)`)
			if p.err != nil {
				return errNode
			}
			return &node{op: opAgg, typ: at, agg: t.text, v: v, col: t.col, tok: p.src[byteOffset(p.src, t.col-1):byteOffset(p.src, close.col)]}
		}
		p.pos--
		v, vt := p.variable()
		if p.err != nil {
			return errNode
		}
		p.expect("(", `"(" and a process: `+v.String()+"(p0)")
		pt := p.next()
		if p.err != nil {
			return errNode
		}
		proc, ok := processNumber(pt)
		if !ok {
			p.unexpected(pt, "a process such as p0")
			return errNode
		}
		close := p.expect(")", `")"`)
		if p.err != nil {
			return errNode
		}
		return &node{op: opVar, typ: vt, v: v, proc: proc, col: t.col, tok: p.src[byteOffset(p.src, t.col-1):byteOffset(p.src, close.col)]}
	}
	p.unexpected(t, wantOperand)
	return errNode
}

// variable reads var = name [ "[" type "]" ].
func (p *parser) variable() (varRef, typ) {
	t := p.next()
	if t.kind != tkName {
		p.unexpected(t, "a variable ("+strings.Join(variableNames, ", ")+")")
		return varRef{}, 0
	}
	spec, ok := variables[t.text]
	if !ok {
		hint := suggest.DidYouMean(t.text, append(append([]string(nil), variableNames...), aggregateNames...))
		if _, agg := aggregates[t.text]; agg {
			p.fail(t.col, t.text, "%q is an aggregate; it reads a variable over every process: %s(cs)", t.text, t.text)
		} else {
			p.fail(t.col, t.text, "unknown variable %q%s: want one of %s", t.text, hint, strings.Join(variableNames, ", "))
		}
		return varRef{}, 0
	}
	v := varRef{name: t.text}
	if spec.param {
		if !p.isPunct("[") {
			p.unexpected(p.peek(), fmt.Sprintf(`"[": %s takes a type, %s[enter]`, t.text, t.text))
			return varRef{}, 0
		}
		p.next()
		pt := p.next()
		if pt.kind != tkParam && pt.kind != tkString || pt.text == "" {
			p.unexpected(pt, "a type, such as enter or \"leader\"")
			return varRef{}, 0
		}
		v.param = pt.text
		p.expect("]", `"]"`)
	} else if p.isPunct("[") {
		b := p.peek()
		p.fail(b.col, b.text, "unexpected \"[\": %s takes no type", t.text)
	}
	return v, spec.typ
}

// processNumber reads "p3".
func processNumber(t token) (int, bool) {
	if t.kind != tkName || len(t.text) < 2 || t.text[0] != 'p' {
		return 0, false
	}
	digits := t.text[1:]
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v < 0 || v > 1<<30 {
		return 0, false
	}
	return v, true
}

// byteOffset is the byte offset of the character at index col (0-based)
// of s, or len(s).
func byteOffset(s string, col int) int {
	i := 0
	for j := range s {
		if i == col {
			return j
		}
		i++
	}
	return len(s)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// quoteShort quotes s, cut after 60 characters.
func quoteShort(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:max])) + "..."
}
