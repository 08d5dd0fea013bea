package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cohort-go/cohort/internal/suggest"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// This file reads the one-line languages of fault and input entries:
//
//	fault     = crash | recover | pause | slow | partition | join | leave | churn
//	crash     = "crash" node "at" time
//	recover   = "recover" node "at" time
//	join      = "join" node "at" time
//	leave     = "leave" node "at" time
//	churn     = "churn" [ "join" rate ] [ "fail" rate ] [ "leave" rate ] [ "from" time ] "to" time
//	rate      = number "/s"
//	pause     = "pause" node "from" time "to" time
//	slow      = "slow" node "by" time "from" time "to" time
//	partition = "partition" group { "|" group } [ "from" time ] [ "to" time ]
//	group     = "{" node { "," node } "}"
//	input     = "at" time "node" node name { word }
//
// A syntax error names the column of the bad token; a meaning error (a node
// out of range, a pause that ends before it starts) does not.

// token is a word or a punctuation mark; col is its 1-based column in
// characters. The end of the text is a token with no text.
type token struct {
	text string
	col  int
}

// tokenize splits s into words separated by white space; each character of
// punct is a token of its own.
func tokenize(s, punct string) (toks []token, end int) {
	start, startCol, col := -1, 0, 0
	flush := func(i int) {
		if start >= 0 {
			toks = append(toks, token{s[start:i], startCol})
			start = -1
		}
	}
	for i, r := range s {
		col++
		switch {
		case unicode.IsSpace(r):
			flush(i)
		case strings.ContainsRune(punct, r):
			flush(i)
			toks = append(toks, token{string(r), col})
		case start < 0:
			start, startCol = i, col
		}
	}
	flush(len(s))
	return toks, col + 1
}

// parser reads one entry. Errors are sticky: after the first, every method
// does nothing, so a rule reads straight through and checks p.err once.
type parser struct {
	src   string
	toks  []token
	pos   int
	end   int // column just past the text
	nodes int // ids are 0 .. nodes-1
	err   error
}

func newParser(src, punct string, nodes int) *parser {
	toks, end := tokenize(src, punct)
	return &parser{src: src, toks: toks, end: end, nodes: nodes}
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{col: p.end}
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

// syntax records a syntax error at t.
func (p *parser) syntax(t token, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: column %d: %s", quoteShort(p.src), t.col, fmt.Sprintf(format, args...))
	}
}

// fail records an error of meaning.
func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

// got describes a token for "want X, got Y".
func got(t token) string {
	if t.text == "" {
		return "end of text"
	}
	return quoteShort(t.text)
}

// keyword reads the word w.
func (p *parser) keyword(w string) {
	if p.err != nil {
		return
	}
	if t := p.next(); t.text != w {
		p.syntax(t, "want %q, got %s", w, got(t))
	}
}

// accept reads the word w if it comes next.
func (p *parser) accept(w string) bool {
	if p.err == nil && p.peek().text == w {
		p.pos++
		return true
	}
	return false
}

// node reads a process id.
func (p *parser) node() proc.ID {
	if p.err != nil {
		return 0
	}
	t := p.next()
	if !isDigits(t.text) {
		p.syntax(t, "want a node id, got %s", got(t))
		return 0
	}
	id, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil || id >= int64(p.nodes) {
		p.fail("node %s out of range 0..%d", cutShort(t.text), p.nodes-1)
		return 0
	}
	return proc.ID(id)
}

// duration reads a time or a duration: a Go duration, not negative.
func (p *parser) duration() time.Duration {
	if p.err != nil {
		return 0
	}
	t := p.next()
	if t.text == "" {
		p.syntax(t, "want a time, got end of text")
		return 0
	}
	d, err := parseDuration(t.text, false)
	if err != nil {
		p.syntax(t, "%v", err)
		return 0
	}
	return d
}

// done checks that nothing follows the entry.
func (p *parser) done(what string) {
	if p.err != nil {
		return
	}
	if t := p.next(); t.text != "" {
		p.syntax(t, "unexpected %s after the end of the %s", got(t), what)
	}
}

var faultKinds = []string{"crash", "recover", "pause", "slow", "partition", "join", "leave", "churn"}

// FaultEntry is one parsed entry of the fault language: a fault, a
// partition or a churn — exactly one of the three.
type FaultEntry struct {
	Fault     sim.Fault      // set unless Partition or Churn is
	Partition *sim.Partition // a partition entry
	Churn     *sim.Churn     // a churn entry
}

// AddTo adds the entry to cfg: a fault to Faults, a partition to
// Network.Partitions, a churn to Churn.
func (e FaultEntry) AddTo(cfg *sim.Config) {
	switch {
	case e.Partition != nil:
		cfg.Network.Partitions = append(cfg.Network.Partitions, *e.Partition)
	case e.Churn != nil:
		cfg.Churn = append(cfg.Churn, *e.Churn)
	default:
		cfg.Faults = append(cfg.Faults, e.Fault)
	}
}

// parseFault reads one fault entry.
func parseFault(src string, nodes int) (FaultEntry, error) {
	var e FaultEntry
	f := &e.Fault
	p := newParser(src, "{},|", nodes)
	kw := p.next()
	switch kw.text {
	case "crash", "recover", "join", "leave":
		f.Kind = map[string]sim.FaultKind{"crash": sim.Crash, "recover": sim.Recover, "join": sim.Join, "leave": sim.Leave}[kw.text]
		f.Node = p.node()
		p.keyword("at")
		f.At = p.duration()
	case "pause":
		f.Kind = sim.Pause
		f.Node = p.node()
		f.At, f.Until = p.span()
	case "slow":
		f.Kind = sim.Slow
		f.Node = p.node()
		p.keyword("by")
		f.Delay = p.duration()
		f.At, f.Until = p.span()
		if p.err == nil && f.Delay <= 0 {
			p.fail("slow by %v: the delay must be positive", f.Delay)
		}
	case "partition":
		e.Partition = p.partition()
	case "churn":
		e.Churn = p.churn()
	case "":
		p.syntax(kw, "empty fault (want %s)", orList(faultKinds))
	default:
		p.syntax(kw, "%v", unknown("fault", kw.text, faultKinds))
	}
	p.done("fault")
	if p.err != nil {
		return FaultEntry{}, p.err
	}
	return e, nil
}

// churn reads "[join R/s] [fail R/s] [leave R/s] [from T1] to T2": at least
// one rate, each at most once, in that order.
func (p *parser) churn() *sim.Churn {
	c := &sim.Churn{}
	rates := 0
	for _, r := range []struct {
		word string
		v    *float64
	}{{"join", &c.Join}, {"fail", &c.Fail}, {"leave", &c.Leave}} {
		if p.accept(r.word) {
			*r.v = p.rate(r.word)
			rates++
		}
	}
	if p.err == nil && rates == 0 {
		p.syntax(p.peek(), "want a rate (join R/s, fail R/s or leave R/s), got %s", got(p.peek()))
	}
	if p.accept("from") {
		c.From = p.duration()
	}
	p.keyword("to")
	c.Until = p.duration()
	if p.err == nil && c.Until <= c.From {
		p.fail("ends at %v, not after it starts at %v", c.Until, c.From)
	}
	if p.err == nil {
		if n := (c.Join + c.Fail + c.Leave) * (c.Until - c.From).Seconds(); n > maxChurnEvents {
			p.fail("churn of %.0f expected events (rates × duration): at most %d", n, maxChurnEvents)
		}
	}
	return c
}

// maxChurnEvents bounds the expected number of events of one churn entry.
const maxChurnEvents = 10_000_000

// rate reads an event rate, "2/s" or "0.5/s": a finite number >= 0 per
// second of virtual time.
func (p *parser) rate(what string) float64 {
	if p.err != nil {
		return 0
	}
	t := p.next()
	num, ok := strings.CutSuffix(t.text, "/s")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(v >= 0) || math.IsInf(v, 0) {
		p.syntax(t, "%s rate: want events per second such as 2/s or 0.5/s, got %s", what, got(t))
		return 0
	}
	return v
}

// span reads "from T1 to T2", T2 after T1.
func (p *parser) span() (from, to time.Duration) {
	p.keyword("from")
	from = p.duration()
	p.keyword("to")
	to = p.duration()
	if p.err == nil && to <= from {
		p.fail("ends at %v, not after it starts at %v", to, from)
	}
	return from, to
}

// partition reads the groups and the span of a partition.
func (p *parser) partition() *sim.Partition {
	var part sim.Partition
	group := map[proc.ID]int{} // node → the group it is in
	for {
		open := p.next()
		if p.err == nil && open.text != "{" {
			p.syntax(open, "want \"{\" to open a group of nodes, got %s", got(open))
		}
		var g []proc.ID
		for p.err == nil {
			id := p.node()
			if p.err != nil {
				break
			}
			if other, ok := group[id]; ok {
				if other == len(part.Groups) {
					p.fail("node %d is listed twice in one group", id)
				} else {
					p.fail("node %d is in two groups: the groups of a partition must be disjoint", id)
				}
				break
			}
			group[id] = len(part.Groups)
			g = append(g, id)
			t := p.next()
			if t.text == "}" {
				break
			}
			if t.text != "," {
				p.syntax(t, "want \",\" or \"}\", got %s", got(t))
			}
		}
		part.Groups = append(part.Groups, g)
		if !p.accept("|") {
			break
		}
	}
	if p.accept("from") {
		part.From = p.duration()
	}
	if p.accept("to") {
		part.To = p.duration()
		if p.err == nil && part.To <= part.From {
			p.fail("partition ends at %v, not after it starts at %v", part.To, part.From)
		}
	}
	if p.err != nil {
		return nil
	}
	return &part
}

// parseInput reads one input entry (Line is left for the caller).
func parseInput(src string, nodes int) (Input, error) {
	p := newParser(src, "", nodes)
	var in Input
	p.keyword("at")
	in.At = p.duration()
	p.keyword("node")
	in.Node = p.node()
	if p.err == nil {
		t := p.next()
		if t.text == "" {
			p.syntax(t, "want the name of the input, got end of text")
		}
		in.Name = t.text
	}
	for p.err == nil && p.peek().text != "" {
		in.Args = append(in.Args, p.next().text)
	}
	return in, p.err
}

// parseCall reads "NAME [ARG ...]", the workload's input.
func parseCall(src string) (name string, args []string, err error) {
	words := strings.Fields(src)
	if len(words) == 0 {
		return "", nil, errors.New("want the name of an input")
	}
	if len(words) == 1 {
		return words[0], nil, nil
	}
	return words[0], words[1:], nil
}

// parseDuration reads a Go duration; only neg allows a negative one.
func parseDuration(s string, neg bool) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("bad duration %s (want e.g. 250us, 1ms, 2s)", quoteShort(s))
	}
	if d < 0 && !neg {
		return 0, fmt.Errorf("negative duration %s", quoteShort(s))
	}
	return d, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// quoteShort quotes s, cutting a long one short.
func quoteShort(s string) string {
	if short := cutShort(s); short != s {
		return strconv.Quote(strings.TrimSuffix(short, "...")) + "..."
	}
	return strconv.Quote(s)
}

// cutShort cuts s after 60 characters, for error messages.
func cutShort(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "..."
}

// orList renders ["a", "b", "c"] as "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// didYouMean suggests the closest of the known words to w, if one is close.
func didYouMean(w string, known []string) string { return suggest.DidYouMean(w, known) }

// ParseFault reads one entry of the fault language ("crash 3 at 10ms",
// "partition {0,1} | {2,3} from 20ms to 40ms", "churn join 2/s to 10s")
// for a run of nodes processes.
func ParseFault(src string, nodes int) (FaultEntry, error) {
	return parseFault(src, nodes)
}
