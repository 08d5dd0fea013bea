//go:build !race

package globalstate

// raceEnabled shortens the brute-force sweeps under the race detector.
const raceEnabled = false
