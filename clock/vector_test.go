package clock_test

import (
	"slices"
	"testing"

	"github.com/cohort-go/cohort/clock"
	"github.com/cohort-go/cohort/proc"
)

// TestCompareSeedTable is the example table of seed 003 §6.2.
func TestCompareSeedTable(t *testing.T) {
	conclude := func(m2, m4 clock.Vector) string {
		switch clock.Compare(m2, m4) {
		case clock.Before:
			return "m2 may causally precede m4"
		case clock.After:
			return "m4 may causally precede m2"
		case clock.Concurrent:
			return "m2 and m4 may conflict"
		}
		return "m2 and m4 are the same event"
	}
	tests := []struct {
		name       string
		m2, m4     clock.Vector
		less, more bool // m2 < m4, m2 > m4
		conclusion string
	}{
		{"a", clock.Vector{2, 1, 0}, clock.Vector{4, 3, 0}, true, false, "m2 may causally precede m4"},
		{"b", clock.Vector{4, 1, 0}, clock.Vector{2, 3, 0}, false, false, "m2 and m4 may conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m2.Before(tt.m4); got != tt.less {
				t.Errorf("%v < %v: %v, want %v", tt.m2, tt.m4, got, tt.less)
			}
			if got := tt.m4.Before(tt.m2); got != tt.more {
				t.Errorf("%v > %v: %v, want %v", tt.m2, tt.m4, got, tt.more)
			}
			if got := conclude(tt.m2, tt.m4); got != tt.conclusion {
				t.Errorf("%v vs %v: %q, want %q", tt.m2, tt.m4, got, tt.conclusion)
			}
			if got := tt.m2.Concurrent(tt.m4); got != (!tt.less && !tt.more) {
				t.Errorf("Concurrent(%v, %v) = %v", tt.m2, tt.m4, got)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b clock.Vector
		want clock.Order
	}{
		{clock.Vector{0, 0, 0}, clock.Vector{0, 0, 0}, clock.Equal},
		{clock.Vector{1, 2, 3}, clock.Vector{1, 2, 3}, clock.Equal},
		{clock.Vector{1, 2, 3}, clock.Vector{1, 2, 4}, clock.Before},
		{clock.Vector{0, 0, 0}, clock.Vector{5, 5, 5}, clock.Before},
		{clock.Vector{2, 2, 3}, clock.Vector{1, 2, 3}, clock.After},
		{clock.Vector{1, 0}, clock.Vector{0, 1}, clock.Concurrent},
		{clock.Vector{3, 0, 1}, clock.Vector{2, 1, 1}, clock.Concurrent},
		// Missing entries are 0.
		{nil, nil, clock.Equal},
		{nil, clock.Vector{0, 0}, clock.Equal},
		{clock.Vector{1}, clock.Vector{1, 0, 0}, clock.Equal},
		{clock.Vector{1}, clock.Vector{1, 0, 2}, clock.Before},
		{clock.Vector{1, 0, 2}, clock.Vector{1}, clock.After},
		{clock.Vector{2}, clock.Vector{1, 1}, clock.Concurrent},
		{clock.Vector{1, 1}, clock.Vector{2}, clock.Concurrent},
	}
	for _, tt := range tests {
		if got := clock.Compare(tt.a, tt.b); got != tt.want {
			t.Errorf("Compare(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestOrderString(t *testing.T) {
	for o, want := range map[clock.Order]string{
		clock.Equal: "equal", clock.Before: "before", clock.After: "after",
		clock.Concurrent: "concurrent", 0: "order(0)", 9: "order(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Order(%d).String() = %q, want %q", uint8(o), got, want)
		}
	}
}

func TestVectorString(t *testing.T) {
	for _, tt := range []struct {
		v    clock.Vector
		want string
	}{
		{clock.Vector{2, 1, 0}, "(2,1,0)"},
		{clock.Vector{7}, "(7)"},
		{nil, "()"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String = %q, want %q", got, tt.want)
		}
	}
}

func TestVectorIncrement(t *testing.T) {
	v := clock.New(3)
	v.Increment(1)
	v.Increment(1)
	v.Increment(0)
	if want := (clock.Vector{1, 2, 0}); !slices.Equal(v, want) {
		t.Errorf("v = %v, want %v", v, want)
	}
	v.Increment(4) // grows
	if want := (clock.Vector{1, 2, 0, 0, 1}); !slices.Equal(v, want) {
		t.Errorf("after growing v = %v, want %v", v, want)
	}
	v.Increment(proc.None) // not a process: no change
	if want := (clock.Vector{1, 2, 0, 0, 1}); !slices.Equal(v, want) {
		t.Errorf("after Increment(None) v = %v, want %v", v, want)
	}
	if got := clock.New(-1); len(got) != 0 {
		t.Errorf("New(-1) = %v, want empty", got)
	}
}

func TestVectorMerge(t *testing.T) {
	tests := []struct {
		v, o, want clock.Vector
	}{
		{clock.Vector{1, 5, 0}, clock.Vector{3, 2, 0}, clock.Vector{3, 5, 0}},
		{clock.Vector{1}, clock.Vector{0, 2, 3}, clock.Vector{1, 2, 3}},
		{clock.Vector{1, 2, 3}, clock.Vector{4}, clock.Vector{4, 2, 3}},
		{nil, clock.Vector{1, 2}, clock.Vector{1, 2}},
		{clock.Vector{1, 2}, nil, clock.Vector{1, 2}},
	}
	for _, tt := range tests {
		v := tt.v.Copy()
		v.Merge(tt.o)
		if !slices.Equal(v, tt.want) {
			t.Errorf("%v merged with %v = %v, want %v", tt.v, tt.o, v, tt.want)
		}
	}
}

func TestVectorCopy(t *testing.T) {
	v := clock.Vector{1, 2, 3}
	c := v.Copy()
	c.Increment(0)
	if v[0] != 1 {
		t.Errorf("changing a copy changed the original: %v", v)
	}
	if clock.Vector(nil).Copy() != nil {
		t.Errorf("copy of nil is not nil")
	}
}

func TestDeliverable(t *testing.T) {
	tests := []struct {
		name       string
		local, msg clock.Vector
		sender     proc.ID
		want       bool
	}{
		{"next from sender", clock.Vector{0, 0, 0}, clock.Vector{1, 0, 0}, 0, true},
		{"next, with a dependency met", clock.Vector{1, 2, 0}, clock.Vector{1, 3, 0}, 1, true},
		{"next, sender knows less", clock.Vector{4, 2, 7}, clock.Vector{1, 3, 0}, 1, true},
		{"duplicate", clock.Vector{1, 0, 0}, clock.Vector{1, 0, 0}, 0, false},
		{"gap from sender", clock.Vector{0, 0, 0}, clock.Vector{2, 0, 0}, 0, false},
		{"missing a dependency", clock.Vector{0, 0, 0}, clock.Vector{1, 1, 0}, 1, false},
		{"missing entries are 0", nil, clock.Vector{0, 1}, 1, true},
		{"short message", clock.Vector{0, 0, 3}, clock.Vector{0, 1}, 1, true},
		{"dependency beyond local", clock.Vector{0, 0}, clock.Vector{0, 1, 1}, 1, false},
		{"sender beyond message", clock.Vector{0, 0, 0}, clock.Vector{0, 0}, 2, false},
		{"no sender", clock.Vector{0, 0}, clock.Vector{1, 0}, proc.None, false},
	}
	for _, tt := range tests {
		if got := clock.Deliverable(tt.local, tt.msg, tt.sender); got != tt.want {
			t.Errorf("%s: Deliverable(%v, %v, %v) = %v, want %v", tt.name, tt.local, tt.msg, tt.sender, got, tt.want)
		}
	}
}
