package explore

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Schedule is a path of the exploration, as a file that `cohort sim
// --schedule` replays: the settings of the run, then one step a line.
//
//	# cohort explore schedule
//	family mutex
//	algo maekawa
//	nodes 4
//	inputs 0:acquire,1:acquire,2:acquire
//	timing async
//	fifo false
//	network queue
//	faults crash=0 loss=0 dup=0
//	checks ME2
//	step fire 5 deliver p1←p0 REQ(1.0)
//
// A step names its act (fire, drop, dup) and the pending event by the
// order in which it was scheduled (Seq, which the same settings and the
// same earlier steps always give the same way); the rest of the line says
// what it was, for people, and is not read.
type Schedule struct {
	Family, Algo string
	Nodes        int
	Inputs       []string // "node:input args"
	Timing       Timing
	FIFO         bool
	SetNetwork   bool
	Crashes      int
	Losses       int
	Dups         int
	Checks       []string // the properties explored, and judged on replay
	Steps        []Step
}

// Step is one step of a schedule.
type Step struct {
	Act  Act
	Seq  uint64
	What string
}

const scheduleMagic = "# cohort explore schedule"

// Write writes the schedule in its file format.
func (s *Schedule) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	network := "queue"
	if s.SetNetwork {
		network = "set"
	}
	fmt.Fprintf(bw, "%s\nfamily %s\nalgo %s\nnodes %d\ninputs %s\ntiming %s\nfifo %t\nnetwork %s\nfaults crash=%d loss=%d dup=%d\n",
		scheduleMagic, s.Family, s.Algo, s.Nodes, strings.Join(s.Inputs, ","), s.Timing, s.FIFO, network, s.Crashes, s.Losses, s.Dups)
	if len(s.Checks) > 0 {
		fmt.Fprintf(bw, "checks %s\n", strings.Join(s.Checks, ","))
	}
	for _, st := range s.Steps {
		fmt.Fprintf(bw, "step %s %d %s\n", st.Act, st.Seq, st.What)
	}
	return bw.Flush()
}

// ParseSchedule reads a schedule file; errors name the line.
func ParseSchedule(r io.Reader) (*Schedule, error) {
	s := &Schedule{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	seen := map[string]bool{}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			if text != scheduleMagic {
				return nil, fmt.Errorf("line 1: %q is not a schedule (want %q)", text, scheduleMagic)
			}
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, rest, _ := strings.Cut(text, " ")
		bad := func(err error) error { return fmt.Errorf("line %d: %s: %v", line, key, err) }
		if key != "step" {
			if seen[key] {
				return nil, bad(fmt.Errorf("given twice"))
			}
			seen[key] = true
		}
		var err error
		switch key {
		case "family":
			s.Family = rest
		case "algo":
			s.Algo = rest
		case "nodes":
			s.Nodes, err = strconv.Atoi(rest)
			if err == nil && (s.Nodes < 1 || s.Nodes > MaxNodes) {
				err = fmt.Errorf("%d: want 1 to %d", s.Nodes, MaxNodes)
			}
		case "inputs":
			if rest != "" {
				s.Inputs = strings.Split(rest, ",")
			}
		case "timing":
			s.Timing, err = ParseTiming(rest)
		case "fifo":
			s.FIFO, err = strconv.ParseBool(rest)
		case "network":
			switch rest {
			case "set":
				s.SetNetwork = true
			case "queue":
			default:
				err = fmt.Errorf("%q: want queue or set", rest)
			}
		case "faults":
			_, err = fmt.Sscanf(rest, "crash=%d loss=%d dup=%d", &s.Crashes, &s.Losses, &s.Dups)
		case "checks":
			if rest != "" {
				s.Checks = strings.Split(rest, ",")
			}
			if len(s.Checks) > 64 {
				err = fmt.Errorf("%d checks: at most 64", len(s.Checks))
			}
		case "step":
			var st Step
			f := strings.SplitN(rest, " ", 3)
			if len(f) < 2 {
				return nil, bad(fmt.Errorf("%q: want an act and a number", rest))
			}
			switch f[0] {
			case "fire":
				st.Act = Fire
			case "drop":
				st.Act = Drop
			case "dup":
				st.Act = Dup
			default:
				return nil, bad(fmt.Errorf("act %q: want fire, drop or dup", f[0]))
			}
			if st.Seq, err = strconv.ParseUint(f[1], 10, 62); err != nil {
				return nil, bad(err)
			}
			if len(f) == 3 {
				st.What = f[2]
			}
			if len(s.Steps) >= MaxSteps {
				return nil, bad(fmt.Errorf("more than %d steps", MaxSteps))
			}
			s.Steps = append(s.Steps, st)
		default:
			return nil, fmt.Errorf("line %d: unknown key %q", line, key)
		}
		if err != nil {
			return nil, bad(err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if line == 0 {
		return nil, fmt.Errorf("empty file: not a schedule")
	}
	for _, k := range []string{"family", "algo", "nodes"} {
		if !seen[k] {
			return nil, fmt.Errorf("no %q line", k)
		}
	}
	return s, nil
}

// Bounds on what a schedule or a command line may ask for.
const (
	MaxNodes = 16
	MaxSteps = 100_000
)
