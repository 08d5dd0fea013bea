package proc

import "testing"

func TestIDString(t *testing.T) {
	for id, want := range map[ID]string{0: "p0", 17: "p17", None: "none"} {
		if got := id.String(); got != want {
			t.Errorf("ID(%d).String() = %q, want %q", int32(id), got, want)
		}
	}
}

func TestAssumptionsString(t *testing.T) {
	cases := []struct {
		a    Assumptions
		want string
	}{
		{Assumptions{}, "asynchronous; failures=none; topology=full"},
		{Assumptions{Reliable: true, FIFO: true}, "reliable fifo; failures=none; topology=full"},
		{Assumptions{Synchronous: true, Failures: "crash-stop", Topology: "ring"}, "synchronous; failures=crash-stop; topology=ring"},
	}
	for _, c := range cases {
		if got := c.a.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.a, got, c.want)
		}
	}
}

func TestStampKindAndLabel(t *testing.T) {
	s := Stamp{C: 61}
	if s.Kind() != "stamp" || s.String() != "C=61" {
		t.Errorf("Stamp{61}: kind %q label %q", s.Kind(), s.String())
	}
}
