package lab

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/sim/simtest"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/wire"
	"pgregory.net/rapid"
)

// The live runtime serializes what an algorithm sends with the codec of
// its Messages list, so a message type missing from the list would fail
// only on a real cluster. These tests run every algorithm in the simulator
// and watch what it sends.

// sentTypes records the Go type of every message sent, and checks that
// the algorithm's codec carries each one across unchanged.
type sentTypes struct {
	codec *wire.Codec
	types map[reflect.Type]int // messages sent, by type
	bad   []string             // messages the codec failed on
}

func (s *sentTypes) saw(m proc.Message) {
	s.types[reflect.TypeOf(m)]++
	b, err := s.codec.Append(nil, m)
	if err != nil {
		s.bad = append(s.bad, fmt.Sprintf("encoding %#v: %v", m, err))
		return
	}
	back, err := s.codec.Decode(b)
	if err != nil {
		s.bad = append(s.bad, fmt.Sprintf("decoding %#v (%x): %v", m, b, err))
		return
	}
	// The encoding is canonical, so equal encodings are equal messages
	// (up to a nil slice for an empty one, which the codec does not keep).
	again, err := s.codec.Append(nil, back)
	if reflect.TypeOf(back) != reflect.TypeOf(m) || err != nil || !bytes.Equal(again, b) {
		s.bad = append(s.bad, fmt.Sprintf("%#v came back as %#v", m, back))
	}
}

// recordingEnv is the host's Env, with Send watched.
type recordingEnv struct {
	proc.Env
	sent *sentTypes
}

func (e recordingEnv) Send(to proc.ID, m proc.Message) {
	e.sent.saw(m)
	e.Env.Send(to, m)
}

// recordingProcess hands its process a recordingEnv in every call.
type recordingProcess struct {
	p    proc.Process
	sent *sentTypes
}

func (r recordingProcess) env(env proc.Env) proc.Env { return recordingEnv{env, r.sent} }
func (r recordingProcess) Start(env proc.Env)        { r.p.Start(r.env(env)) }
func (r recordingProcess) Timeout(env proc.Env, tag any) {
	r.p.Timeout(r.env(env), tag)
}
func (r recordingProcess) Input(env proc.Env, in proc.Input) { r.p.Input(r.env(env), in) }
func (r recordingProcess) Receive(env proc.Env, from proc.ID, m proc.Message) {
	r.p.Receive(r.env(env), from, m)
}

// wireRuns are the runs of algorithm a that the test watches: its default
// run, and for the mutex family the seeded runs of the sweep — with the
// crashes its failure model allows, so that failover, token regeneration
// and recovery send their messages too.
func wireRuns(f Family, a proc.Algorithm, seeds int) []Options {
	runs := []Options{f.Options(a)}
	for _, n := range []int{3, 5, 8} {
		if a.Validate != nil && a.Validate(n) != nil {
			continue
		}
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			if f.Name == "mutex" {
				runs = append(runs, sweepOptions(f, a, n, seed))
				continue
			}
			o := f.Options(a)
			s := seed
			o.Nodes, o.Seed = n, &s
			runs = append(runs, o)
		}
	}
	return runs
}

func TestEverySentMessageIsListed(t *testing.T) {
	seeds := simtest.Seeds(6, 2)
	for _, f := range Families() {
		for _, a := range f.Algorithms {
			t.Run(f.Name+"/"+a.Name, func(t *testing.T) {
				codec, err := wire.NewCodec(a.Messages)
				if err != nil {
					t.Fatal(err)
				}
				listed := map[reflect.Type]bool{}
				kinds := map[string]bool{}
				for _, m := range a.Messages {
					listed[reflect.TypeOf(m)] = true
					kinds[m.Kind()] = true
				}
				sent := &sentTypes{codec: codec, types: map[reflect.Type]int{}}
				for _, o := range wireRuns(f, a, seeds) {
					inner := o.Algo.New
					o.Algo.New = func(id proc.ID, n int) proc.Process {
						return recordingProcess{inner(id, n), sent}
					}
					_, tr, err := Sim(o)
					if err != nil {
						t.Fatal(err)
					}
					// The trace names messages by Kind: a cross-check that
					// sees sends the Env wrapper might miss.
					for _, e := range tr.Events {
						if e.Kind == trace.Send && !kinds[e.Type] {
							t.Fatalf("the trace has a %q message, and no listed type has that kind", e.Type)
						}
					}
				}
				for typ, n := range sent.types {
					if !listed[typ] {
						t.Errorf("sends %d messages of type %s, which Messages does not list", n, typ)
					}
				}
				for _, bad := range sent.bad[:min(len(sent.bad), 5)] {
					t.Error(bad)
				}
				var unseen []string
				for _, m := range a.Messages {
					if sent.types[reflect.TypeOf(m)] == 0 {
						unseen = append(unseen, reflect.TypeOf(m).String())
					}
				}
				if len(unseen) > 0 {
					t.Logf("listed but not sent in these runs: %s", strings.Join(unseen, ", "))
				}
			})
		}
	}
}

// Every algorithm's list builds a codec, and each of its types round-trips
// as a zero value and with random contents.
func TestAlgorithmMessagesRoundTrip(t *testing.T) {
	for _, f := range Families() {
		for _, a := range f.Algorithms {
			t.Run(f.Name+"/"+a.Name, func(t *testing.T) {
				if len(a.Messages) == 0 {
					t.Fatal("Messages is empty: the live runtime could send nothing")
				}
				codec, err := wire.NewCodec(a.Messages)
				if err != nil {
					t.Fatal(err)
				}
				for _, proto := range a.Messages {
					zero := reflect.Zero(reflect.TypeOf(proto)).Interface().(proc.Message)
					roundTrip(t, codec, zero)
				}
				rapid.Check(t, func(rt *rapid.T) {
					proto := rapid.SampledFrom(a.Messages).Draw(rt, "type")
					v := reflect.New(reflect.TypeOf(proto)).Elem()
					fill(rt, v, "", 0)
					roundTrip(rt, codec, v.Interface().(proc.Message))
				})
			})
		}
	}
}

func roundTrip(t interface {
	Helper()
	Fatalf(string, ...any)
}, c *wire.Codec, m proc.Message) {
	t.Helper()
	b, err := c.Append(nil, m)
	if err != nil {
		t.Fatalf("encoding %#v: %v", m, err)
	}
	back, err := c.Decode(b)
	if err != nil {
		t.Fatalf("decoding %#v from %x: %v", m, b, err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("%#v came back as %#v", m, back)
	}
	if back.Kind() != m.Kind() {
		t.Fatalf("kind %q came back as %q", m.Kind(), back.Kind())
	}
}

// fill sets v, a settable value of any type the codec supports, to random
// contents: integers over their whole range, strings of arbitrary bytes,
// slices of up to four elements (nil when empty, the form they decode to),
// pointers to three levels.
func fill(t *rapid.T, v reflect.Value, path string, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, path))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		v.SetInt(rapid.Int64Range(-1<<(bits-1), 1<<(bits-1)-1).Draw(t, path))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rapid.Uint64Range(0, math.MaxUint64>>(64-v.Type().Bits())).Draw(t, path))
	case reflect.Float32:
		v.SetFloat(float64(rapid.Float32().Draw(t, path)))
	case reflect.Float64:
		v.SetFloat(rapid.Float64().Draw(t, path))
	case reflect.String:
		v.SetString(string(rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, path)))
	case reflect.Slice:
		n := rapid.IntRange(0, 4).Draw(t, path+".len")
		if n == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name, depth)
		}
	case reflect.Pointer:
		if depth < 3 && rapid.Bool().Draw(t, path+" present") {
			p := reflect.New(v.Type().Elem())
			fill(t, p.Elem(), path, depth+1)
			v.Set(p)
		}
	default:
		t.Fatalf("%s: fill cannot make a %s", path, v.Type())
	}
}

// The simulator and the codec agree on the application's message: every
// mutex algorithm tags App after its own messages.
func TestMutexAppIsTaggedLast(t *testing.T) {
	f, _ := Lookup("mutex")
	for _, a := range f.Algorithms {
		if i := slices.IndexFunc(a.Messages, func(m proc.Message) bool { return m.Kind() == "app" }); i != len(a.Messages)-1 {
			t.Errorf("%s: App is message %d of %d", a.Name, i+1, len(a.Messages))
		}
	}
}
