package bench

import (
	"strings"
	"testing"
	"time"
)

// The nemesis's lock check catches two holders at once and a token that
// goes back, and lets a grant that came too late to use go.
func TestCheckHoldings(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := []holding{{0, 5, at(0), at(10)}, {1, 9, at(10), at(20)}, {2, 7, at(15), at(12)}, {0, 12, at(25), at(30)}}
	if out := checkHoldings("lock", ok); len(out) != 0 {
		t.Errorf("handoffs in order, and a grant learned too late to use: %v", out)
	}
	overlap := []holding{{0, 5, at(0), at(10)}, {1, 9, at(5), at(20)}}
	if out := checkHoldings("lock", overlap); len(out) != 1 || !strings.Contains(out[0], "lock: client 1 (token 9) held it from") {
		t.Errorf("two holders at once: %v", out)
	}
	back := []holding{{0, 9, at(0), at(10)}, {1, 5, at(11), at(20)}}
	if out := checkHoldings("lock", back); len(out) != 1 || !strings.Contains(out[0], "token 5 after client 0 had token 9") {
		t.Errorf("a token that went back: %v", out)
	}
}
