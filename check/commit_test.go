package check_test

import (
	"testing"

	"github.com/cohort-go/cohort/check/checktest"
	"github.com/cohort-go/cohort/commit"
	"github.com/cohort-go/cohort/trace"
)

func TestCommitConsistency(t *testing.T) {
	runFixtures(t, "commit-consistency", []fixture{
		{name: "all commit", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			b.Output(1, commit.Committed{})
			b.Output(2, commit.Committed{})
			return &b.Trace, nil
		}},
		{name: "one aborts alone", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			b.Output(2, commit.Aborted{})
			b.Output(1, commit.Aborted{})
			return &b.Trace, nil
		}},
		{name: "one commits, one aborts", build: func() (*trace.Trace, []int) {
			b := checktest.New(3)
			a := b.Output(2, commit.Aborted{})
			c := b.Output(1, commit.Committed{})
			return &b.Trace, []int{a, c}
		}, detail: "p1 committed"},
	})
}
