package overlay_test

import (
	"strings"
	"testing"

	"github.com/cohort-go/cohort/overlay"
)

// FuzzInputs: the family's input parser never panics, and what it accepts
// names a key that prints back as the 32 hex digits given.
func FuzzInputs(f *testing.F) {
	for _, s := range []string{
		"lookup 0123456789abcdef0123456789abcdef",
		"put 0123456789abcdef0123456789abcdef v1",
		"get ffffffffffffffffffffffffffffffff",
		"show-tables", "put 00 x", "get", "lookup zz", "nosuch a b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return
		}
		in, err := overlay.Inputs(fields[0], fields[1:])
		if err != nil {
			return
		}
		var key overlay.GUID
		switch in := in.(type) {
		case overlay.Lookup:
			key = in.Key
		case overlay.Put:
			key = in.Key
		case overlay.Get:
			key = in.Key
		default:
			return
		}
		if got := key.String(); !strings.EqualFold(got, fields[1]) {
			t.Fatalf("%q: key %s", line, got)
		}
	})
}
