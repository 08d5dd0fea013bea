package logical_test

import (
	"slices"
	"testing"

	"github.com/cohort-go/cohort/logical"
	"github.com/cohort-go/cohort/proc"
)

// TestCompareTable is the example table of vector-timestamp comparisons of
// Tanenbaum & van Steen §6.2.
func TestCompareTable(t *testing.T) {
	conclude := func(m2, m4 logical.Vector) string {
		switch logical.Compare(m2, m4) {
		case logical.Before:
			return "m2 may causally precede m4"
		case logical.After:
			return "m4 may causally precede m2"
		case logical.Concurrent:
			return "m2 and m4 may conflict"
		}
		return "m2 and m4 are the same event"
	}
	tests := []struct {
		name       string
		m2, m4     logical.Vector
		less, more bool // m2 < m4, m2 > m4
		conclusion string
	}{
		{"a", logical.Vector{2, 1, 0}, logical.Vector{4, 3, 0}, true, false, "m2 may causally precede m4"},
		{"b", logical.Vector{4, 1, 0}, logical.Vector{2, 3, 0}, false, false, "m2 and m4 may conflict"},
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
		a, b logical.Vector
		want logical.Order
	}{
		{logical.Vector{0, 0, 0}, logical.Vector{0, 0, 0}, logical.Equal},
		{logical.Vector{1, 2, 3}, logical.Vector{1, 2, 3}, logical.Equal},
		{logical.Vector{1, 2, 3}, logical.Vector{1, 2, 4}, logical.Before},
		{logical.Vector{0, 0, 0}, logical.Vector{5, 5, 5}, logical.Before},
		{logical.Vector{2, 2, 3}, logical.Vector{1, 2, 3}, logical.After},
		{logical.Vector{1, 0}, logical.Vector{0, 1}, logical.Concurrent},
		{logical.Vector{3, 0, 1}, logical.Vector{2, 1, 1}, logical.Concurrent},
		// Missing entries are 0.
		{nil, nil, logical.Equal},
		{nil, logical.Vector{0, 0}, logical.Equal},
		{logical.Vector{1}, logical.Vector{1, 0, 0}, logical.Equal},
		{logical.Vector{1}, logical.Vector{1, 0, 2}, logical.Before},
		{logical.Vector{1, 0, 2}, logical.Vector{1}, logical.After},
		{logical.Vector{2}, logical.Vector{1, 1}, logical.Concurrent},
		{logical.Vector{1, 1}, logical.Vector{2}, logical.Concurrent},
	}
	for _, tt := range tests {
		if got := logical.Compare(tt.a, tt.b); got != tt.want {
			t.Errorf("Compare(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestOrderString(t *testing.T) {
	for o, want := range map[logical.Order]string{
		logical.Equal: "equal", logical.Before: "before", logical.After: "after",
		logical.Concurrent: "concurrent", 0: "order(0)", 9: "order(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Order(%d).String() = %q, want %q", uint8(o), got, want)
		}
	}
}

func TestVectorString(t *testing.T) {
	for _, tt := range []struct {
		v    logical.Vector
		want string
	}{
		{logical.Vector{2, 1, 0}, "(2,1,0)"},
		{logical.Vector{7}, "(7)"},
		{nil, "()"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String = %q, want %q", got, tt.want)
		}
	}
}

func TestVectorIncrement(t *testing.T) {
	v := logical.New(3)
	v.Increment(1)
	v.Increment(1)
	v.Increment(0)
	if want := (logical.Vector{1, 2, 0}); !slices.Equal(v, want) {
		t.Errorf("v = %v, want %v", v, want)
	}
	v.Increment(4) // grows
	if want := (logical.Vector{1, 2, 0, 0, 1}); !slices.Equal(v, want) {
		t.Errorf("after growing v = %v, want %v", v, want)
	}
	v.Increment(proc.None) // not a process: no change
	if want := (logical.Vector{1, 2, 0, 0, 1}); !slices.Equal(v, want) {
		t.Errorf("after Increment(None) v = %v, want %v", v, want)
	}
	if got := logical.New(-1); len(got) != 0 {
		t.Errorf("New(-1) = %v, want empty", got)
	}
}

func TestVectorMerge(t *testing.T) {
	tests := []struct {
		v, o, want logical.Vector
	}{
		{logical.Vector{1, 5, 0}, logical.Vector{3, 2, 0}, logical.Vector{3, 5, 0}},
		{logical.Vector{1}, logical.Vector{0, 2, 3}, logical.Vector{1, 2, 3}},
		{logical.Vector{1, 2, 3}, logical.Vector{4}, logical.Vector{4, 2, 3}},
		{nil, logical.Vector{1, 2}, logical.Vector{1, 2}},
		{logical.Vector{1, 2}, nil, logical.Vector{1, 2}},
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
	v := logical.Vector{1, 2, 3}
	c := v.Copy()
	c.Increment(0)
	if v[0] != 1 {
		t.Errorf("changing a copy changed the original: %v", v)
	}
	if logical.Vector(nil).Copy() != nil {
		t.Errorf("copy of nil is not nil")
	}
}

func TestDeliverable(t *testing.T) {
	tests := []struct {
		name       string
		local, msg logical.Vector
		sender     proc.ID
		want       bool
	}{
		{"next from sender", logical.Vector{0, 0, 0}, logical.Vector{1, 0, 0}, 0, true},
		{"next, with a dependency met", logical.Vector{1, 2, 0}, logical.Vector{1, 3, 0}, 1, true},
		{"next, sender knows less", logical.Vector{4, 2, 7}, logical.Vector{1, 3, 0}, 1, true},
		{"duplicate", logical.Vector{1, 0, 0}, logical.Vector{1, 0, 0}, 0, false},
		{"gap from sender", logical.Vector{0, 0, 0}, logical.Vector{2, 0, 0}, 0, false},
		{"missing a dependency", logical.Vector{0, 0, 0}, logical.Vector{1, 1, 0}, 1, false},
		{"missing entries are 0", nil, logical.Vector{0, 1}, 1, true},
		{"short message", logical.Vector{0, 0, 3}, logical.Vector{0, 1}, 1, true},
		{"dependency beyond local", logical.Vector{0, 0}, logical.Vector{0, 1, 1}, 1, false},
		{"sender beyond message", logical.Vector{0, 0, 0}, logical.Vector{0, 0}, 2, false},
		{"no sender", logical.Vector{0, 0}, logical.Vector{1, 0}, proc.None, false},
	}
	for _, tt := range tests {
		if got := logical.Deliverable(tt.local, tt.msg, tt.sender); got != tt.want {
			t.Errorf("%s: Deliverable(%v, %v, %v) = %v, want %v", tt.name, tt.local, tt.msg, tt.sender, got, tt.want)
		}
	}
}

func TestMergeIntoIsMergeForFixedSizes(t *testing.T) {
	a := logical.Vector{3, 0, 5, 1}
	b := logical.Vector{1, 4, 5, 0}
	want := a.Copy()
	want.Merge(b)
	got := []uint64(a.Copy())
	logical.MergeInto(got, b)
	if logical.Compare(got, want) != logical.Equal {
		t.Errorf("MergeInto %v, Merge %v", got, want)
	}
	logical.MergeInto(got, []uint64{9}) // a shorter source merges its entries only
	if got[0] != 9 || got[1] != 4 {
		t.Errorf("after a short source: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("MergeInto into a shorter vector did not panic")
		}
	}()
	logical.MergeInto(make([]uint64, 2), b)
}
