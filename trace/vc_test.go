package trace

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/cohort-go/cohort/logical"
)

// sparseOf is the vector of the given entries (process, count), read as
// an open trace reads an object keyed by process ID.
func sparseOf(t *testing.T, js string) VC {
	t.Helper()
	var v VC
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A vector naming a high process ID is held by process ID, and reads as
// the array indexed by process ID it stands for; a short one stays an
// array, as before.
func TestVCFormsReadAlike(t *testing.T) {
	high := sparseOf(t, `{"60000":1,"0":3,"2":0}`)
	if !high.Sparse() || high.Len() != 60001 || high.At(0) != 3 || high.At(60000) != 1 || high.At(2) != 0 || high.At(70000) != 0 {
		t.Fatalf("high: %v, sparse %v, len %d", high, high.Sparse(), high.Len())
	}
	if s := high.String(); s != "{p0:3,p60000:1}" {
		t.Errorf("String() = %q", s)
	}
	if b, _ := json.Marshal(high); string(b) != `{"0":3,"60000":1}` {
		t.Errorf("MarshalJSON = %s", b)
	}
	d := high.Dense()
	if len(d) != 60001 || d[0] != 3 || d[60000] != 1 {
		t.Errorf("Dense(): %d entries", len(d))
	}
	if again := CompactVC(d); !again.Sparse() || again.Compare(high) != logical.Equal {
		t.Errorf("CompactVC of the array: %v", again)
	}
	low := sparseOf(t, `{"7":3,"1":2,"4":1}`)
	if low.Sparse() || !slices.Equal(low.Dense(), []uint64{0, 2, 0, 0, 1, 0, 0, 3}) {
		t.Errorf("low IDs: %v (sparse %v), want the array [0,2,0,0,1,0,0,3]", low, low.Sparse())
	}
	if last := sparseOf(t, `{"60000":1,"60000":0,"5":1}`); last.Len() != 6 {
		t.Errorf("a key given twice: the last holds, got %v", last)
	}
	if z := sparseOf(t, `{}`); !z.IsZero() {
		t.Errorf("{} = %v, want none", z)
	}

	// Compare across forms, absent entries 0.
	for _, c := range []struct {
		a, b string
		want logical.Order
	}{
		{`{"0":3,"60000":1}`, `{"0":3,"60000":1}`, logical.Equal},
		{`{"0":3}`, `{"0":3,"60000":1}`, logical.Before},
		{`{"0":3,"60000":2}`, `{"0":3,"60000":1}`, logical.After},
		{`{"0":4}`, `{"0":3,"60000":1}`, logical.Concurrent},
		{`[3,0,0]`, `{"0":3,"60000":1}`, logical.Before},
		{`{"0":3,"60000":1}`, `[3,0,1]`, logical.Concurrent},
		{`[3,0,0]`, `[3]`, logical.Equal},
	} {
		a, b := sparseOf(t, c.a), sparseOf(t, c.b)
		if got := a.Compare(b); got != c.want {
			t.Errorf("%s vs %s: %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
