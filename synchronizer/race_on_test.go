//go:build race

package synchronizer_test

// raceEnabled shortens the sweeps under the race detector (the simulator
// is single-threaded: the detector finds nothing in it).
const raceEnabled = true
