//go:build race

package main

// raceEnabled skips the longest runs under the race detector.
const raceEnabled = true
