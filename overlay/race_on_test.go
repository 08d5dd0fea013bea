//go:build race

package overlay_test

// raceEnabled shortens the sweeps under the race detector.
const raceEnabled = true
