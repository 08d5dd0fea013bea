// Package bench holds Cohort's reproducible performance runs, shared by the
// `go test -bench` benchmarks and the `cohort bench` command so that both
// measure exactly the same thing.
package bench
