//go:build !race

package simtest

// RaceEnabled says the race detector is on (see Seeds).
const RaceEnabled = false
