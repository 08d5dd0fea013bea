package live

import (
	"bytes"
	"testing"
)

// TestServiceNumbers: a numbered service's payloads begin with two bytes,
// any other's with its name, both read back; a malformed number is
// refused, not mistaken for a service.
func TestServiceNumbers(t *testing.T) {
	for _, name := range []string{"members", "locks", "m"} {
		b := appendService(nil, name)
		b = append(b, "body"...)
		if name == "members" && len(b) != 2+len("body") {
			t.Errorf("%s: %d bytes in front of the body, want 2", name, len(b)-len("body"))
		}
		got, rest, err := splitService(b)
		if err != nil || string(got) != name || !bytes.Equal(rest, []byte("body")) {
			t.Errorf("%s: read back %q, %q, %v", name, got, rest, err)
		}
	}
	for _, bad := range [][]byte{{0}, {0, 0}, {0, byte(len(serviceNumbers))}, {0, 255, 'x'}} {
		if name, _, err := splitService(bad); err == nil {
			t.Errorf("% x: read as service %q, want an error", bad, name)
		}
	}
}

// FuzzSplitService: any payload is either refused or split into a name
// that is valid (a known number's, or 1 to MaxServiceName bytes) and the
// rest of the payload; writing that name again and appending the rest
// reads back the same.
func FuzzSplitService(f *testing.F) {
	for _, seed := range [][]byte{appendService(nil, "members"), appendService([]byte{}, "locks"), {0}, {0, 1}, {3, 'a', 'b'}, {0x80, 0x80}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		name, rest, err := splitService(payload)
		if err != nil {
			return
		}
		if len(name) == 0 || len(name) > MaxServiceName {
			t.Fatalf("% x: a name of %d bytes", payload, len(name))
		}
		again, rest2, err := splitService(append(appendService(nil, string(name)), rest...))
		if err != nil || !bytes.Equal(again, name) || !bytes.Equal(rest2, rest) {
			t.Fatalf("% x: %q then %q, %v", payload, name, again, err)
		}
	})
}
