package live

import (
	"bytes"
	"testing"
)

// TestServiceNumbers: a numbered service's payloads begin with two bytes
// and the flag byte follows, or, untraced, with one byte and nothing
// follows; any other's with its name, then the flag byte; all read back.
// A malformed number is refused, not mistaken for a service.
func TestServiceNumbers(t *testing.T) {
	for _, name := range []string{"members", "locks", "m"} {
		b := appendService(nil, name)
		b = append(b, "body"...)
		if name == "members" && len(b) != 2+len("body") {
			t.Errorf("%s: %d bytes in front of the body, want 2", name, len(b)-len("body"))
		}
		got, rest, flagged, err := splitService(b)
		if err != nil || string(got) != name || !bytes.Equal(rest, []byte("body")) || !flagged {
			t.Errorf("%s: read back %q, %q, flagged %v, %v", name, got, rest, flagged, err)
		}

		b = appendUntraced(nil, name)
		front := len(b)
		b = append(b, "body"...)
		got, rest, flagged, err = splitService(b)
		if err != nil || string(got) != name {
			t.Fatalf("%s untraced: read back %q, %v", name, got, err)
		}
		if flagged {
			rest, err = readFlags(t, rest)
		}
		if !bytes.Equal(rest, []byte("body")) {
			t.Errorf("%s untraced: body %q", name, rest)
		}
		if want := map[bool]int{true: 1, false: 2 + len(name)}[name == "members"]; front != want {
			t.Errorf("%s untraced: %d bytes in front of the body, want %d", name, front, want)
		}
	}
	for _, bad := range [][]byte{{0}, {0, 0}, {0, byte(len(serviceNumbers))}, {0, 255, 'x'},
		{untracedNumber}, {untracedNumber + byte(len(serviceNumbers))}, {0xFF, 'x'}} {
		if name, _, _, err := splitService(bad); err == nil {
			t.Errorf("% x: read as service %q, want an error", bad, name)
		}
	}
}

// readFlags reads an untraced message's flag byte.
func readFlags(t *testing.T, b []byte) ([]byte, error) {
	t.Helper()
	_, _, rest, err := readTrailer(b, 3)
	return rest, err
}

// FuzzSplitService: any payload is either refused or split into a name
// that is valid (a known number's, or 1 to MaxServiceName bytes) and the
// rest of the payload; writing that name again, in the same form, and
// appending the rest reads back the same.
func FuzzSplitService(f *testing.F) {
	for _, seed := range [][]byte{appendService(nil, "members"), appendService([]byte{}, "locks"), appendUntraced(nil, "members"),
		appendUntraced(nil, "locks"), {0}, {0, 1}, {3, 'a', 'b'}, {0x80, 0x80}, {untracedNumber}, {0xC8, 0x01}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		name, rest, flagged, err := splitService(payload)
		if err != nil {
			return
		}
		if len(name) == 0 || len(name) > MaxServiceName {
			t.Fatalf("% x: a name of %d bytes", payload, len(name))
		}
		front := appendService(nil, string(name))
		if !flagged {
			front = appendUntraced(nil, string(name))
		}
		again, rest2, flagged2, err := splitService(append(front, rest...))
		if err != nil || !bytes.Equal(again, name) || !bytes.Equal(rest2, rest) || flagged2 != flagged {
			t.Fatalf("% x: %q then %q, %v", payload, name, again, err)
		}
	})
}
