package queue

// RaceEnabled: the race detector is on (the heavy tests shrink).
const RaceEnabled = raceEnabled
