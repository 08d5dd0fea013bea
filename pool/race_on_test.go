//go:build race

package pool

// raceEnabled shortens the simulations under the race detector.
const raceEnabled = true
