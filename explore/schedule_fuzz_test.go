package explore

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseSchedule: any input is read or refused with an error, never a
// panic, and what is read writes back to a file that reads the same.
func FuzzParseSchedule(f *testing.F) {
	f.Add("# cohort explore schedule\nfamily mutex\nalgo maekawa\nnodes 4\ninputs 0:acquire,1:acquire\ntiming async\nfifo false\nnetwork queue\nfaults crash=0 loss=1 dup=0\nchecks ME2\nstep fire 1 input p0 acquire\nstep drop 4 deliver p1←p0 REQ\n")
	f.Add("# cohort explore schedule\nfamily commit\nalgo two-phase-commit\nnodes 4\nnetwork set\n")
	f.Add("# cohort explore schedule\nnodes 99\n")
	f.Add("# cohort explore schedule\nstep dup 18446744073709551615 x\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchedule(strings.NewReader(text))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := s.Write(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := ParseSchedule(&buf)
		if err != nil {
			t.Fatalf("a schedule read from %q writes back as %q, which does not read: %v", text, buf.String(), err)
		}
		if len(again.Steps) != len(s.Steps) || again.Family != s.Family || again.Nodes != s.Nodes || len(again.Checks) != len(s.Checks) {
			t.Fatalf("round trip changed the schedule: %+v → %+v", s, again)
		}
	})
}
