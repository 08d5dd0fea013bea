//go:build race

package multicast

// raceEnabled shortens the long runs under the race detector.
const raceEnabled = true
