//go:build race

package rpc_test

// raceEnabled shortens the sweeps under the race detector.
const raceEnabled = true
