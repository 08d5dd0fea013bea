//go:build !race

package synchronizer_test

const raceEnabled = false
