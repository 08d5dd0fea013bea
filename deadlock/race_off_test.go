//go:build !race

package deadlock_test

const raceEnabled = false
