package simtest

import (
	"flag"
	"strconv"
	"testing"
	"time"
)

// Sweep runs every seed once, each in a subtest named by its seed, two or
// more at once when -parallel allows (the first two seeds wait for each
// other), and returns only when every one has ended, saying that all ran.
func TestSweepRunsEverySeedInParallel(t *testing.T) {
	parallel, err := strconv.Atoi(flag.Lookup("test.parallel").Value.String())
	if err != nil {
		t.Fatal(err)
	}
	const first, last = 3, 12
	ran := make([]int, last+1)
	names := make([]string, last+1)
	met := make(chan struct{})
	waited := make([]bool, last+1)
	all := Sweep(t, first, last, func(t *testing.T, seed uint64) {
		ran[seed]++
		names[seed] = t.Name()
		if parallel >= 2 && seed <= first+1 {
			// Each of the first two seeds gives way to the other, or
			// finds it waiting: only two runs at once can do both.
			select {
			case met <- struct{}{}:
			case <-met:
			case <-time.After(time.Minute):
				t.Errorf("seed %d: no other seed ran beside it for a minute (-parallel %d)", seed, parallel)
			}
			waited[seed] = true
		}
	})
	if !all {
		t.Error("Sweep returned that not every seed ran")
	}
	for seed := range uint64(last + 1) {
		want := 0
		if seed >= first {
			want = 1
		}
		if ran[seed] != want {
			t.Errorf("seed %d ran %d times by the time Sweep returned, want %d", seed, ran[seed], want)
		}
		if want == 1 && names[seed] != t.Name()+"/seeds/"+strconv.FormatUint(seed, 10) {
			t.Errorf("seed %d ran as %q", seed, names[seed])
		}
	}
	if parallel >= 2 && (!waited[first] || !waited[first+1]) {
		t.Errorf("the first two seeds did not meet")
	}
}
