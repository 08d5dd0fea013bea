//go:build race

package consensus_test

// raceEnabled shortens the seed sweeps under the race detector (the
// simulator is single-threaded: the detector finds nothing in it, and the
// full sweeps run without it).
const raceEnabled = true
