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
