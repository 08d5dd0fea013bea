// Package trace is the record of a run: every send, receive, drop, timer,
// input, output, crash and recovery as an Event with the true time, the
// process, its local clock reading, a Lamport timestamp, an optional vector
// timestamp and a message id that links a send to its receipt.
//
// The native format is JSON Lines (one header line, then one event per line),
// written and read by this package; the same file can be rendered as a
// ShiViz log or an SVG space-time diagram. A vector timestamp is an array
// with an entry per process — or, in a trace of a live cluster that
// processes join while it runs (Header.IDs), where the vectors grow as
// they join, a map of its nonzero entries keyed by process ID,
// {"0":3,"7":1}. In memory both are arrays indexed by process ID. The package also answers
// happened-before questions over a trace and tests cuts for consistency, in
// the sense of the process model: a cut is a prefix of every process's
// history; it is consistent if, for every event it contains, it contains
// every event that happened before it.
//
// Both hosts produce traces; checkers (package check) read them and nothing
// else.
package trace
