package explore

import (
	"math/rand/v2"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

type hashNode struct {
	Val  int
	Next *hashNode
}

type hashBytes []byte

type hashOnePtr struct{ p *int }

type hashStringer interface{ String() string }

type hashName string

func (n hashName) String() string { return string(n) }

type hashAll struct {
	B     bool
	I8    int8
	I16   int16
	U     uint
	U8    uint8
	U16   uint16
	Up    uintptr
	F32   float32
	F64   float64
	C64   complex64
	C128  complex128
	S     string
	Arr   [3]int64
	Sl    []proc.ID
	Nil   []int
	Empty []int
	Bs    []byte
	Named hashBytes
	M     map[string][]int
	NilM  map[int]int
	Ptr   *hashNode
	Any   any
	Iface hashStringer
	NilI  hashStringer
	Timer proc.TimerID
	ID    proc.ID
	Fn    func()
	Ch    chan int
	One   hashOnePtr
	Boxed []any
	_     [0]int
}

type hashVotes map[proc.ID]bool

// The compiled hash plans compute what the reflective walk computes: on
// values of every kind, with cycles and shared pointers, with process
// ids renamed and anonymised (symmetry), and on every process and
// payload of random walks over several models.
func TestCompiledHashIsReflective(t *testing.T) {
	cyc := &hashNode{Val: 1}
	cyc.Next = &hashNode{Val: 2, Next: cyc}
	shared := &hashNode{Val: 9}
	n := 4
	values := []any{
		nil, 1, int8(-3), proc.ID(2), proc.ID(-1), proc.TimerID(7), "s", 2.5, float32(-1.5), true,
		[]byte("bytes"), hashBytes(nil), hashName("x"), &n, cyc, hashOnePtr{&n}, map[int]string{1: "a", 2: "b"},
		[2]*hashNode{shared, shared}, []*hashNode{shared, nil, shared, cyc},
		hashAll{
			B: true, I8: -1, I16: 300, U: 5, U8: 6, U16: 7, Up: 8, F32: 1.25, F64: -2, C64: 1 + 2i, C128: 3 - 4i,
			S: "state", Arr: [3]int64{1, -2, 3}, Sl: []proc.ID{0, 2, 1}, Empty: []int{}, Bs: []byte{1, 2},
			Named: hashBytes("n"), M: map[string][]int{"a": {1}, "b": nil}, Ptr: cyc, Any: shared,
			Iface: hashName("p1"), Timer: 3, ID: 1, Fn: func() {}, Ch: make(chan int), One: hashOnePtr{&n},
			Boxed: []any{1, "x", shared, proc.ID(1), &n, []int{1}, hashName("y"), nil},
		},
		&hashAll{Ptr: shared, Any: shared},
		// Maps by process (ranged over without reflection), named too.
		map[proc.ID]bool{0: true, 2: false}, map[proc.ID]string{1: "a"}, map[proc.ID]int(nil),
		map[proc.ID]proc.ID{0: 2, 2: 1}, hashVotes{1: true}, []hashVotes{{}, {2: true, 0: false}},
	}
	x := newHasher()
	check := func(what string, v any) {
		t.Helper()
		if a, b := x.of(v), x.ofReflect(v); a != b {
			t.Fatalf("%s %#v: compiled %x, reflective %x", what, v, a, b)
		}
	}
	for _, v := range values {
		check("value", v)
		x.perm = []proc.ID{2, 0, 1}
		check("renamed", v)
		x.perm, x.anon = nil, []bool{false, true, true}
		check("anonymised", v)
		x.anon = nil
	}
	// The hashes tell values apart.
	if x.of(hashAll{ID: 1}) == x.of(hashAll{ID: 2}) || x.of([]int{1, 2}) == x.of([]int{2, 1}) || x.of(cyc) == x.of(cyc.Next) {
		t.Fatal("different values hash alike")
	}
	for _, m := range []walkModel{
		{"2pc", "commit", "two-phase-commit", 4, nil, nil},
		{"ra-faults", "mutex", "ricart-agrawala", 3, nil, func(c *Config) { c.Crashes, c.Losses, c.Dups = 1, 1, 1 }},
		{"maekawa", "mutex", "maekawa", 4, []string{"0:acquire", "1:acquire", "2:acquire"}, nil},
		{"suzuki-kasami", "mutex", "suzuki-kasami", 3, nil, nil},
		{"bully", "election", "bully", 3, nil, func(c *Config) { c.Crashes = 1 }},
	} {
		cfg := setup(t, m.family, m.algo, m.nodes, m.inputs)
		if m.tweak != nil {
			m.tweak(&cfg)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		compared := 0
		for walk := 0; walk < 30; walk++ {
			r, err := cfg.newRun(newHasher())
			if err != nil {
				t.Fatal(err)
			}
			for step := 0; step < 40; step++ {
				for id := 0; id < m.nodes; id++ {
					check(m.name+" process", r.s.Process(proc.ID(id)))
					compared++
				}
				for _, k := range r.q.keys {
					check(m.name+" payload", r.s.Payload(k.Slot))
					compared++
				}
				chs := r.choices(nil)
				if len(chs) == 0 {
					break
				}
				if err := r.apply(chs[rng.IntN(len(chs))]); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%s: %d values compared", m.name, compared)
	}
}
