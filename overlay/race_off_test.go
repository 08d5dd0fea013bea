//go:build !race

package overlay_test

const raceEnabled = false
