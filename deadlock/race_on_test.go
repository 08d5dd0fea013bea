//go:build race

package deadlock_test

// raceEnabled shortens the sweeps under the race detector.
const raceEnabled = true
