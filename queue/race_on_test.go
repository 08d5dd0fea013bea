//go:build race

package queue

// raceEnabled shortens the crash loops under the race detector.
const raceEnabled = true
