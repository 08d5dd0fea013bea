package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

// FuzzParse checks that Parse never panics, that every error it returns is
// an *Error naming the file, and that every scenario it accepts makes a
// valid sim.Config. The seed corpus is in testdata/fuzz/FuzzParse; the
// example scenarios are added to it.
func FuzzParse(f *testing.F) {
	examples, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range examples {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %q (%T) does not name the file", err, err)
			}
			return
		}
		if s.Nodes > 1<<16 || s.Nodes*s.Degree > 1<<16 {
			// Large graphs are valid but take seconds to build; the
			// fuzzer checks everything else about them.
			s.Topology, s.Degree = "full", 0
		}
		cfg, err := s.Config(anyInput)
		if err != nil {
			t.Fatalf("accepted scenario makes no config: %v", err)
		}
		cfg.New = newEcho
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted scenario makes an invalid config: %v", err)
		}
	})
}

func anyInput(name string, args []string) (proc.Input, error) { return call{name, args}, nil }
