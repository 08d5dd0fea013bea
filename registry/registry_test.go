package registry

import (
	"strings"
	"testing"
)

func TestLookupAndFind(t *testing.T) {
	for _, f := range Families() {
		if len(f.Algorithms) == 0 {
			t.Errorf("family %s has no algorithms", f.Name)
		}
		seen := map[string]bool{}
		for _, a := range f.Algorithms {
			if a.Family != f.Name {
				t.Errorf("%s is registered in family %q but listed under %s", a.Name, a.Family, f.Name)
			}
			if seen[a.Name] {
				t.Errorf("%s/%s listed twice", f.Name, a.Name)
			}
			seen[a.Name] = true
			got, err := Find(f.Name, a.Name)
			if err != nil || got.Name != a.Name {
				t.Errorf("Find(%s, %s): %v", f.Name, a.Name, err)
			}
		}
	}
	if _, err := Lookup("dht"); err == nil || !strings.Contains(err.Error(), `unknown family "dht" (known: clocks, mutex, election, multicast, gossip, overlay, snapshot, deadlock, synchronizer, rpc, consensus)`) {
		t.Errorf("Lookup(dht): %v", err)
	}
	if _, err := Find("mutex", "bakery"); err == nil || !strings.Contains(err.Error(), `unknown mutex algorithm "bakery" (known: central, `) {
		t.Errorf("Find(mutex, bakery): %v", err)
	}
}
