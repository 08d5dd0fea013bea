package epidemic

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

func TestNextVersion(t *testing.T) {
	for _, c := range []struct {
		seen Version
		self int32
		want Version
	}{
		{0, 0, 1 << 32},
		{0, 7, 1<<32 | 7},
		{1<<32 | 7, 3, 2<<32 | 3}, // above what was seen, whoever wrote it
		{5<<32 | 9, 9, 6<<32 | 9},
	} {
		if got := nextVersion(c.seen, procID(c.self)); got != c.want {
			t.Errorf("nextVersion(%s, p%d) = %s, want %s", versionString(c.seen), c.self, versionString(got), versionString(c.want))
		}
	}
	// Racing writers: the same sequence number, the larger ID wins.
	if a, b := nextVersion(0, 2), nextVersion(0, 5); !(b > a) {
		t.Errorf("racing versions %s and %s: the larger writer must win", versionString(a), versionString(b))
	}
}

func TestStoreDigests(t *testing.T) {
	s := store{items: []item{
		{Entry: Entry{Key: "a", Value: "1", Version: 2 << 32}},
		{Entry: Entry{Key: "b", Version: 3 << 32, Deleted: true}},
		{Entry: Entry{Key: "c", Value: "3", Version: 1 << 32}},
	}}
	for _, c := range []struct {
		name   string
		digest []Sum
		newer  []string // keys s would send
		wants  []string // keys s lacks
	}{
		{"empty peer", nil, []string{"a", "b", "c"}, nil},
		{"same", []Sum{{"a", 2 << 32}, {"b", 3 << 32}, {"c", 1 << 32}}, nil, nil},
		{"peer older and newer", []Sum{{"a", 1 << 32}, {"b", 4 << 32}, {"c", 1 << 32}, {"d", 1 << 32}}, []string{"a"}, []string{"b", "d"}},
	} {
		var newer, wants []string
		for _, e := range s.newer(c.digest) {
			newer = append(newer, e.Key)
		}
		for _, x := range s.wants(c.digest) {
			wants = append(wants, x.Key)
		}
		if !slices.Equal(newer, c.newer) || !slices.Equal(wants, c.wants) {
			t.Errorf("%s: newer %v wants %v; want %v and %v", c.name, newer, wants, c.newer, c.wants)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string // "" for valid
	}{
		{Params{}, ""},
		{Params{Fanout: 3, K: 4, Counter: true, Blind: true}, ""},
		{Params{Fanout: -1}, "fanout"},
		{Params{K: -2}, "k -2"},
		{Params{Period: -time.Millisecond}, "period"},
		{Params{ReapAfter: -1}, "reap-after"},
		{Params{Aggregate: "median"}, "aggregate"},
		{Params{IndirectK: 5, NoLHM: true, NoBuddy: true, NoDynamicSuspicion: true}, ""},
		{Params{IndirectK: -1}, "indirect-k"},
		{Params{ProbeTimeout: -1}, "probe-timeout"},
		{Params{SuspicionMult: -1}, "suspicion-mult"},
		{Params{Retransmit: -3}, "retransmit"},
	} {
		err := c.p.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.p, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrParams) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an ErrParams naming %q", c.p, err, c.want)
		}
	}
	d := Params{}.withDefaults()
	if d.Fanout != 1 || d.K != 1 || d.Period != DefaultPeriod || d.ReapAfter != 100*DefaultPeriod || d.Aggregate != "average" {
		t.Errorf("defaults: %+v", d)
	}
}

func TestResidueSolvesTheNotesEquation(t *testing.T) {
	// The notes' figures: k = 1 .. 5 leave 0.203, 0.060, 0.020, 0.0070, 0.0025.
	want := []float64{0.203, 0.060, 0.020, 0.0070, 0.0025}
	for k := 1; k <= 5; k++ {
		s := Residue(k)
		if d := s - exp(-float64(k+1)*(1-s)); d > 1e-12 || d < -1e-12 {
			t.Errorf("k=%d: s=%g is not a root (off by %g)", k, s, d)
		}
		if r := s / want[k-1]; r < 0.95 || r > 1.05 {
			t.Errorf("k=%d: residue %.4f, the notes say %.4f", k, s, want[k-1])
		}
	}
}

func TestRoundsToAll(t *testing.T) {
	// log₂(1024) + ln(1024) = 10 + 6.93; with f = 3: log₄(1024) + ln(1024)/3 = 5 + 2.31.
	for _, c := range []struct {
		n, f int
		want float64
	}{{1024, 1, 16.931}, {1024, 3, 7.310}} {
		if got := RoundsToAll(c.n, c.f); got < c.want-0.001 || got > c.want+0.001 {
			t.Errorf("RoundsToAll(%d, %d) = %.3f, want %.3f", c.n, c.f, got, c.want)
		}
	}
}

func procID(i int32) proc.ID { return proc.ID(i) }

// stubEnv is the Env of a store test: a clock and a record of outputs.
type stubEnv struct {
	proc.Env
	now time.Duration
	out []proc.Output
}

func (e *stubEnv) Now() time.Duration   { return e.now }
func (e *stubEnv) Self() proc.ID        { return 0 }
func (e *stubEnv) Output(o proc.Output) { e.out = append(e.out, o) }

// A death certificate older than ReapAfter is not kept: it deletes an
// older value it finds and is forgotten; where there is nothing to delete
// it does nothing — so reaped certificates are not handed back and forth.
func TestExpiredCertificates(t *testing.T) {
	tomb := Entry{Key: "x", Version: 2 << 32, Deleted: true, Born: time.Second}
	for _, c := range []struct {
		name string
		have []item
		now  time.Duration
		kept bool
		outs []string
	}{
		{"fresh: adopted", []item{{Entry: Entry{Key: "x", Value: "1", Version: 1 << 32}}}, 1500 * time.Millisecond, true, []string{"x@2.0†"}},
		{"expired over an old value: deletes it", []item{{Entry: Entry{Key: "x", Value: "1", Version: 1 << 32}}}, 3 * time.Second, false, []string{"x@2.0†", "reaped x@2.0"}},
		{"expired, nothing held: ignored", nil, 3 * time.Second, false, nil},
		{"expired, newer value held: ignored", []item{{Entry: Entry{Key: "x", Value: "3", Version: 3 << 32}}}, 3 * time.Second, true, nil},
	} {
		s := store{items: slices.Clone(c.have), reapAfter: time.Second}
		env := &stubEnv{now: c.now}
		s.apply(env, tomb)
		var outs []string
		for _, o := range env.out {
			outs = append(outs, o.(interface{ String() string }).String())
		}
		if _, ok := s.find("x"); ok != c.kept || !slices.Equal(outs, c.outs) {
			t.Errorf("%s: key kept %v, outputs %q; want %v, %q", c.name, ok, outs, c.kept, c.outs)
		}
	}
	// Reaping counts from Born, not from the adoption.
	s := store{items: []item{{Entry: tomb, since: 1900 * time.Millisecond}}, reapAfter: time.Second}
	s.reap(&stubEnv{now: 2 * time.Second})
	if len(s.items) != 0 {
		t.Errorf("a tombstone born at 1s, adopted at 1.9s, is kept at 2s with ReapAfter 1s")
	}
}

// Das et al.'s expected first detection, and the suspicion timeouts.
func TestSwimFormulas(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{
		{2, 1},
		{3, 1 / (1 - 0.25)},
		{1_000_000, math.E / (math.E - 1)},
	} {
		if got := FirstDetectionPeriods(c.n); math.Abs(got-c.want) > 1e-5 {
			t.Errorf("FirstDetectionPeriods(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		p      Params
		n      int
		lo, hi time.Duration
	}{
		{Params{}, 10, 40 * time.Millisecond, 240 * time.Millisecond},
		{Params{}, 1000, 120 * time.Millisecond, 720 * time.Millisecond},
		{Params{NoDynamicSuspicion: true}, 1000, 120 * time.Millisecond, 120 * time.Millisecond},
		{Params{SuspicionMult: 5, Period: time.Second}, 5, 5 * time.Second, 30 * time.Second},
	} {
		lo, hi := SuspicionTimeouts(c.p, c.n)
		if lo != c.lo || hi != c.hi {
			t.Errorf("SuspicionTimeouts(%+v, %d) = %v, %v; want %v, %v", c.p, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// TestChecksumTellsDigestsApart: replicas with the same keys at the same
// versions have one checksum whatever the values' order of arrival; a
// newer version, a missing key, or the same bytes split differently
// between key and version change it.
func TestChecksumTellsDigestsApart(t *testing.T) {
	mk := func(es ...Entry) *store {
		s := &store{reapAfter: time.Hour}
		for _, e := range es {
			i, _ := s.find(e.Key)
			s.items = slices.Insert(s.items, i, item{Entry: e})
		}
		return s
	}
	a := mk(Entry{Key: "a", Version: 1 << 32}, Entry{Key: "b", Version: 2 << 32})
	same := mk(Entry{Key: "b", Version: 2 << 32, Value: "other value"}, Entry{Key: "a", Version: 1 << 32})
	if a.checksum() != same.checksum() {
		t.Errorf("same digest, checksums %x and %x", a.checksum(), same.checksum())
	}
	for name, o := range map[string]*store{
		"newer":   mk(Entry{Key: "a", Version: 1 << 32}, Entry{Key: "b", Version: 3 << 32}),
		"missing": mk(Entry{Key: "a", Version: 1 << 32}),
		"empty":   mk(),
		"split":   mk(Entry{Key: "a\x00\x00\x00\x00\x01", Version: 0}, Entry{Key: "b", Version: 2 << 32}),
	} {
		if o.checksum() == a.checksum() {
			t.Errorf("%s: the checksum %x does not tell it apart", name, o.checksum())
		}
	}
}
