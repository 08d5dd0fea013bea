//go:build race

package bench

// raceEnabled shortens the queue benchmark's runs under the race detector.
const raceEnabled = true
