package suggest

import "testing"

func TestDidYouMean(t *testing.T) {
	known := []string{"peers", "listen", "timeout", "id"}
	for w, want := range map[string]string{
		"peerz":  ` (did you mean "peers"?)`,
		"PEERS":  ` (did you mean "peers"?)`,
		"lsiten": ` (did you mean "listen"?)`, // a swap costs 1
		"timout": ` (did you mean "timeout"?)`,
		"zzzzzz": "",
		"":       "",
	} {
		if got := DidYouMean(w, known); got != want {
			t.Errorf("DidYouMean(%q) = %q, want %q", w, got, want)
		}
	}
}
