package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim"
)

// Parse parses a scenario. name is the file name errors are reported
// against.
func Parse(name string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, tooBig(name, int64(len(data)))
	}
	// Decoding into a yaml.Node keeps aliases as they are (the decoder
	// refuses them) and every value's line.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, yamlError(name, err)
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, &Error{File: name, Err: errors.New(`empty scenario (want at least "nodes: N")`)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		if err != nil {
			return nil, yamlError(name, err)
		}
		return nil, &Error{File: name, Line: more.Line, Err: errors.New("a second YAML document: a scenario file holds one")}
	}
	d := &decoder{file: name}
	return d.scenario(doc.Content[0])
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError turns an error of the YAML parser into an *Error.
func yamlError(name string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: name, Line: line, Err: errors.New(msg[len(m[0]):])}
	}
	return &Error{File: name, Err: errors.New(strings.TrimPrefix(msg, "yaml: "))}
}

// decoder reads the YAML tree of a scenario.
type decoder struct {
	file  string
	nodes int // once known
}

func (d *decoder) errf(n *yaml.Node, field, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Field: field, Err: fmt.Errorf(format, args...)}
}

func (d *decoder) wrap(n *yaml.Node, field string, err error) error {
	return &Error{File: d.file, Line: n.Line, Field: field, Err: err}
}

// join names the field name inside the mapping at path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

var topFields = []string{"family", "algo", "nodes", "initial", "seed", "topology", "degree", "network", "clocks", "faults", "inputs", "workload", "stop"}

func (d *decoder) scenario(root *yaml.Node) (*Scenario, error) {
	m, err := d.mapping(root, "", topFields)
	if err != nil {
		return nil, err
	}
	s := &Scenario{
		File:     d.file,
		Seed:     1,
		Topology: "full",
		Network:  sim.Network{Latency: sim.Constant(time.Millisecond)},
	}
	// Node ids are checked against nodes wherever they appear, so it is
	// read first; the rest in file order, so the first error reported is
	// the first in the file.
	nodes := m.get("nodes")
	if nodes == nil {
		return nil, d.errf(root, "", `missing field "nodes" (the number of processes)`)
	}
	n, err := d.integer(nodes, "nodes")
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxNodes {
		return nil, d.errf(nodes, "nodes", "want 1..%d, got %d", MaxNodes, n)
	}
	s.Nodes, d.nodes = int(n), int(n)

	for _, f := range m.list {
		v := f.val
		switch f.name {
		case "family":
			s.Family, err = d.str(v, "family", "a family name")
		case "algo":
			s.Algo, err = d.str(v, "algo", "an algorithm name")
		case "initial":
			var k int64
			if k, err = d.integer(v, "initial"); err == nil && (k < 1 || k > n) {
				err = d.errf(v, "initial", "want 1..%d (nodes), got %d", n, k)
			}
			s.Initial = int(k)
		case "seed":
			s.Seed, err = d.uinteger(v, "seed")
		case "topology":
			s.Topology, err = d.oneOf(v, "topology", topologies)
		case "degree":
			var deg int64
			if deg, err = d.integer(v, "degree"); err == nil && deg < 1 {
				err = d.errf(v, "degree", "want at least 1, got %d", deg)
			}
			s.Degree = int(min(deg, math.MaxInt32))
		case "network":
			err = d.network(v, &s.Network)
		case "clocks":
			s.Clocks, err = d.clocks(v)
		case "faults":
			err = d.faults(v, s)
		case "inputs":
			s.Inputs, err = d.inputs(v)
		case "workload":
			s.Workload, err = d.workload(v)
		case "stop":
			err = d.stop(v, s)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := d.crossCheck(m, s); err != nil {
		return nil, err
	}
	return s, nil
}

// crossCheck checks what depends on more than one field.
func (d *decoder) crossCheck(m *fields, s *Scenario) error {
	deg := m.get("degree")
	switch {
	case s.Topology == "random" && deg == nil:
		return d.errf(m.get("topology"), "topology", "random needs a degree (the least number of neighbours of a process)")
	case s.Topology == "random" && s.Degree >= s.Nodes:
		return d.errf(deg, "degree", "%d is too many neighbours for %d nodes (want 1..%d)", s.Degree, s.Nodes, s.Nodes-1)
	case s.Topology == "random" && s.Degree*s.Nodes > maxGraphSize:
		return d.errf(deg, "degree", "a random graph of %d nodes of degree %d is too large (nodes × degree at most %d)", s.Nodes, s.Degree, maxGraphSize)
	case s.Topology != "random" && deg != nil:
		return d.errf(deg, "degree", "only for topology random (this one is %s)", s.Topology)
	}
	if w := s.Workload; w != nil && int64(w.Count)*int64(s.Nodes) > maxGenerated {
		return d.errf(m.get("workload"), "workload.count", "%d inputs at each of %d nodes is too many (at most %d in all)", w.Count, s.Nodes, maxGenerated)
	}
	if p := len(s.Network.Partitions); int64(p)*int64(s.Nodes) > maxPartitionCells {
		return d.errf(m.get("faults"), "faults", "%d partitions of %d nodes is too many (partitions × nodes at most %d)", p, s.Nodes, maxPartitionCells)
	}
	return nil
}

var networkFields = []string{"latency", "fifo", "loss", "duplicate", "reorder", "links"}

func (d *decoder) network(n *yaml.Node, net *sim.Network) error {
	m, err := d.mapping(n, "network", networkFields)
	if err != nil {
		return err
	}
	for _, f := range m.list {
		path := join("network", f.name)
		switch f.name {
		case "latency":
			net.Latency, err = d.dist(f.val, path)
		case "fifo":
			net.FIFO, err = d.boolean(f.val, path)
		case "loss":
			net.Loss, err = d.prob(f.val, path)
		case "duplicate":
			net.Duplicate, err = d.prob(f.val, path)
		case "reorder":
			net.Reorder, err = d.prob(f.val, path)
		case "links":
			net.Links, err = d.links(f.val, path)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var linkFields = []string{"from", "to", "latency", "loss"}

func (d *decoder) links(n *yaml.Node, path string) ([]sim.Link, error) {
	items, err := d.seq(n, path)
	if err != nil {
		return nil, err
	}
	var links []sim.Link
	seen := map[[2]proc.ID]int{} // link → its line
	for i, item := range items {
		at := index(path, i)
		m, err := d.mapping(item, at, linkFields)
		if err != nil {
			return nil, err
		}
		var l sim.Link
		if l.From, err = d.requiredNode(m, item, at, "from"); err != nil {
			return nil, err
		}
		if l.To, err = d.requiredNode(m, item, at, "to"); err != nil {
			return nil, err
		}
		if v := m.get("latency"); v != nil {
			if l.Latency, err = d.dist(v, join(at, "latency")); err != nil {
				return nil, err
			}
		}
		if v := m.get("loss"); v != nil {
			p, err := d.prob(v, join(at, "loss"))
			if err != nil {
				return nil, err
			}
			l.Loss = &p
		}
		key := [2]proc.ID{l.From, l.To}
		if line, dup := seen[key]; dup {
			return nil, d.errf(item, at, "link %d→%d given twice (first at line %d)", l.From, l.To, line)
		}
		seen[key] = item.Line
		links = append(links, l)
	}
	return links, nil
}

var clockFields = []string{"max_offset", "max_drift", "nodes"}
var nodeClockFields = []string{"node", "offset", "drift"}

func (d *decoder) clocks(n *yaml.Node) (*Clocks, error) {
	m, err := d.mapping(n, "clocks", clockFields)
	if err != nil {
		return nil, err
	}
	c := &Clocks{}
	for _, f := range m.list {
		path := join("clocks", f.name)
		switch f.name {
		case "max_offset":
			if c.MaxOffset, err = d.duration(f.val, path, false); err == nil && c.MaxOffset > maxClockOffset {
				err = d.errf(f.val, path, "%v is too large (at most %v)", c.MaxOffset, maxClockOffset)
			}
		case "max_drift":
			if c.MaxDrift, err = d.float(f.val, path); err == nil && !(c.MaxDrift >= 0 && c.MaxDrift < 1) {
				err = d.errf(f.val, path, "want a number in [0, 1), got %v", c.MaxDrift)
			}
		case "nodes":
			c.Nodes, err = d.nodeClocks(f.val, path)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (d *decoder) nodeClocks(n *yaml.Node, path string) (map[proc.ID]sim.HWClock, error) {
	items, err := d.seq(n, path)
	if err != nil {
		return nil, err
	}
	clocks := map[proc.ID]sim.HWClock{}
	lines := map[proc.ID]int{}
	for i, item := range items {
		at := index(path, i)
		m, err := d.mapping(item, at, nodeClockFields)
		if err != nil {
			return nil, err
		}
		id, err := d.requiredNode(m, item, at, "node")
		if err != nil {
			return nil, err
		}
		var c sim.HWClock
		if v := m.get("offset"); v != nil {
			if c.Offset, err = d.duration(v, join(at, "offset"), true); err != nil {
				return nil, err
			}
			if c.Offset > maxClockOffset || c.Offset < -maxClockOffset {
				return nil, d.errf(v, join(at, "offset"), "%v is too large (at most %v either way)", c.Offset, maxClockOffset)
			}
		}
		if v := m.get("drift"); v != nil {
			if c.Drift, err = d.float(v, join(at, "drift")); err != nil {
				return nil, err
			}
			if !(c.Drift > -1 && c.Drift < 1) {
				return nil, d.errf(v, join(at, "drift"), "want a number between -1 and 1, got %v", c.Drift)
			}
		}
		if line, dup := lines[id]; dup {
			return nil, d.errf(item, at, "node %d given twice (first at line %d)", id, line)
		}
		clocks[id], lines[id] = c, item.Line
	}
	return clocks, nil
}

func (d *decoder) faults(n *yaml.Node, s *Scenario) error {
	items, err := d.seq(n, "faults")
	if err != nil {
		return err
	}
	for i, item := range items {
		at := index("faults", i)
		src, err := d.str(item, at, `a fault such as "crash 3 at 10ms"`)
		if err != nil {
			return err
		}
		e, err := parseFault(src, d.nodes)
		if err != nil {
			return d.wrap(item, at, err)
		}
		switch {
		case e.Partition != nil:
			s.Network.Partitions = append(s.Network.Partitions, *e.Partition)
		case e.Churn != nil:
			s.Churn = append(s.Churn, *e.Churn)
		default:
			s.Faults = append(s.Faults, e.Fault)
		}
	}
	return nil
}

func (d *decoder) inputs(n *yaml.Node) ([]Input, error) {
	items, err := d.seq(n, "inputs")
	if err != nil {
		return nil, err
	}
	var inputs []Input
	for i, item := range items {
		at := index("inputs", i)
		src, err := d.str(item, at, `an input such as "at 10ms node 3 acquire"`)
		if err != nil {
			return nil, err
		}
		in, err := parseInput(src, d.nodes)
		if err != nil {
			return nil, d.wrap(item, at, err)
		}
		in.Line = item.Line
		inputs = append(inputs, in)
	}
	return inputs, nil
}

var workloadFields = []string{"input", "think", "count"}

func (d *decoder) workload(n *yaml.Node) (*Workload, error) {
	m, err := d.mapping(n, "workload", workloadFields)
	if err != nil {
		return nil, err
	}
	if len(m.list) == 0 {
		return nil, nil
	}
	for _, name := range workloadFields {
		if m.get(name) == nil {
			return nil, d.errf(n, "workload", "missing field %q", name)
		}
	}
	w := &Workload{Line: m.get("input").Line}
	call, err := d.str(m.get("input"), "workload.input", "an input name")
	if err != nil {
		return nil, err
	}
	if w.Input, w.Args, err = parseCall(call); err != nil {
		return nil, d.wrap(m.get("input"), "workload.input", err)
	}
	if w.Think, err = d.dist(m.get("think"), "workload.think"); err != nil {
		return nil, err
	}
	count, err := d.integer(m.get("count"), "workload.count")
	if err != nil {
		return nil, err
	}
	if count < 1 || count > maxGenerated {
		return nil, d.errf(m.get("count"), "workload.count", "want 1..%d, got %d", maxGenerated, count)
	}
	w.Count = int(count)
	return w, nil
}

var stopFields = []string{"deadline", "max_events"}

func (d *decoder) stop(n *yaml.Node, s *Scenario) error {
	m, err := d.mapping(n, "stop", stopFields)
	if err != nil {
		return err
	}
	for _, f := range m.list {
		path := join("stop", f.name)
		switch f.name {
		case "deadline":
			s.Deadline, err = d.duration(f.val, path, false)
		case "max_events":
			if s.MaxEvents, err = d.integer(f.val, path); err == nil && s.MaxEvents < 0 {
				err = d.errf(f.val, path, "want 0 (no limit) or more, got %d", s.MaxEvents)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fields is a mapping's fields, in file order.
type fields struct {
	list []field
	by   map[string]*yaml.Node
}

type field struct {
	name     string
	key, val *yaml.Node
}

func (m *fields) get(name string) *yaml.Node { return m.by[name] }

// mapping reads the mapping at path, whose fields must be among known. An
// empty value (null) is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) (*fields, error) {
	m := &fields{by: map[string]*yaml.Node{}}
	if err := d.noAlias(n, path); err != nil || isNull(n) {
		return m, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, path, "want a mapping of fields, got %s", describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := d.noAlias(k, path); err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, d.errf(k, path, "want a field name, got %s", describe(k))
		}
		if k.Tag == "!!merge" {
			return nil, d.errf(k, path, "merge keys (<<) are not supported: write the fields out")
		}
		name := k.Value
		if !slices.Contains(known, name) {
			return nil, d.errf(k, path, "%v", unknown("field", name, known))
		}
		if prev, dup := m.by[name]; dup {
			return nil, d.errf(k, path, "field %q given twice (first at line %d)", name, prev.Line)
		}
		m.by[name] = v
		m.list = append(m.list, field{name, k, v})
	}
	return m, nil
}

// seq reads the list at path; an empty value (null) is an empty list.
func (d *decoder) seq(n *yaml.Node, path string) ([]*yaml.Node, error) {
	if err := d.noAlias(n, path); err != nil || isNull(n) {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, path, "want a list, got %s", describe(n))
	}
	if len(n.Content) > MaxEntries {
		return nil, d.errf(n, path, "%d entries is too many (at most %d)", len(n.Content), MaxEntries)
	}
	return n.Content, nil
}

// scalar checks that n is a plain value: no alias, no mapping or list, not
// empty. want says what is wanted.
func (d *decoder) scalar(n *yaml.Node, path, want string) error {
	if err := d.noAlias(n, path); err != nil {
		return err
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return d.errf(n, path, "want %s, got %s", want, describe(n))
	}
	return nil
}

func (d *decoder) str(n *yaml.Node, path, want string) (string, error) {
	if err := d.scalar(n, path, want); err != nil {
		return "", err
	}
	return n.Value, nil
}

// oneOf reads one of the words known.
func (d *decoder) oneOf(n *yaml.Node, path string, known []string) (string, error) {
	s, err := d.str(n, path, orList(known))
	if err == nil && !slices.Contains(known, s) {
		err = d.errf(n, path, "%v", unknown(path, s, known))
	}
	return s, err
}

// number checks that n is a YAML number.
func (d *decoder) number(n *yaml.Node, path, want string) error {
	if err := d.scalar(n, path, want); err != nil {
		return err
	}
	if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" {
		return d.errf(n, path, "want %s, got %s", want, describe(n))
	}
	return nil
}

// integer reads a whole number: an integer, or a float without a
// fraction (1e6).
func (d *decoder) integer(n *yaml.Node, path string) (int64, error) {
	if err := d.number(n, path, "an integer"); err != nil {
		return 0, err
	}
	var v int64
	if n.ShortTag() == "!!int" && n.Decode(&v) == nil {
		return v, nil
	}
	f, err := d.whole(n, path)
	if err != nil {
		return 0, err
	}
	if f < -(1<<63) || f >= 1<<63 {
		return 0, d.errf(n, path, "%s is out of range", cutShort(n.Value))
	}
	return int64(f), nil
}

func (d *decoder) uinteger(n *yaml.Node, path string) (uint64, error) {
	const want = "a non-negative integer"
	if err := d.number(n, path, want); err != nil {
		return 0, err
	}
	var v uint64
	if n.ShortTag() == "!!int" && n.Decode(&v) == nil {
		return v, nil
	}
	f, err := d.whole(n, path)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, d.errf(n, path, "want %s, got %s", want, cutShort(n.Value))
	}
	if f >= 1<<64 {
		return 0, d.errf(n, path, "%s is out of range", cutShort(n.Value))
	}
	return uint64(f), nil
}

// whole reads a number without a fraction, of any size.
func (d *decoder) whole(n *yaml.Node, path string) (float64, error) {
	var f float64
	if err := n.Decode(&f); err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, d.errf(n, path, "want an integer, got %s", describe(n))
	}
	return f, nil
}

func (d *decoder) float(n *yaml.Node, path string) (float64, error) {
	if err := d.number(n, path, "a number"); err != nil {
		return 0, err
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) {
		return 0, d.errf(n, path, "want a number, got %s", describe(n))
	}
	return v, nil
}

func (d *decoder) prob(n *yaml.Node, path string) (float64, error) {
	p, err := d.float(n, path)
	if err == nil && !(p >= 0 && p <= 1) {
		err = d.errf(n, path, "%v is not a probability (want a number in [0,1])", cutShort(n.Value))
	}
	return p, err
}

func (d *decoder) boolean(n *yaml.Node, path string) (bool, error) {
	if err := d.scalar(n, path, "true or false"); err != nil {
		return false, err
	}
	var v bool
	if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, d.errf(n, path, "want true or false, got %s", describe(n))
	}
	return v, nil
}

// duration reads a Go duration; only neg allows a negative one.
func (d *decoder) duration(n *yaml.Node, path string, neg bool) (time.Duration, error) {
	if err := d.scalar(n, path, "a duration such as 1ms"); err != nil {
		return 0, err
	}
	v, err := parseDuration(n.Value, neg)
	if err != nil {
		return 0, d.wrap(n, path, err)
	}
	return v, nil
}

func (d *decoder) dist(n *yaml.Node, path string) (sim.Dist, error) {
	const want = "a distribution such as exp:1ms"
	if err := d.scalar(n, path, want); err != nil {
		return nil, err
	}
	if len(n.Value) > 100 {
		return nil, d.errf(n, path, "want %s, got %s", want, describe(n))
	}
	v, err := sim.ParseDist(n.Value)
	if err != nil {
		return nil, d.wrap(n, path, err)
	}
	return v, nil
}

// requiredNode reads the node id in the field name of the mapping m (at
// n, path), which must be there.
func (d *decoder) requiredNode(m *fields, n *yaml.Node, path, name string) (proc.ID, error) {
	v := m.get(name)
	if v == nil {
		return 0, d.errf(n, path, "missing field %q", name)
	}
	id, err := d.integer(v, join(path, name))
	if err != nil {
		return 0, err
	}
	if id < 0 || id >= int64(d.nodes) {
		return 0, d.errf(v, join(path, name), "node %d out of range 0..%d", id, d.nodes-1)
	}
	return proc.ID(id), nil
}

// noAlias refuses YAML aliases: expanding them is how a small file becomes
// a huge one, and a scenario has no need for them.
func (d *decoder) noAlias(n *yaml.Node, path string) error {
	if n.Kind == yaml.AliasNode {
		return d.errf(n, path, "aliases (*%s) are not supported: write the value out", cutShort(n.Value))
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case isNull(n):
		return "nothing"
	case n.ShortTag() == "!!str":
		return quoteShort(n.Value)
	}
	return cutShort(n.Value)
}

// unknown reports an unknown name among known ones, with a suggestion when
// one is close.
func unknown(what, name string, known []string) error {
	if hint := didYouMean(name, known); hint != "" {
		return fmt.Errorf("unknown %s %s%s", what, quoteShort(name), hint)
	}
	return fmt.Errorf("unknown %s %s (want %s)", what, quoteShort(name), orList(known))
}
