// Package check holds Cohort's property checkers: functions that read a
// trace (and nothing else) and judge whether a run kept a property.
//
// A checker never answers with a bare boolean. Its Result has a Status (ok,
// violated, or unknown when the trace cannot decide), a Detail that says
// what went wrong in the terms of the property ("m3: sent at C=60 by p2,
// received at C=56 by p1"), and the indexes of the events that make up the
// counterexample, so the space-time diagram and the viewer can mark them.
// When a trace breaks a property in several places, the Result describes
// the earliest and counts the rest.
//
// Checkers are registered by name; an algorithm's registry entry
// (proc.Algorithm.Checks) lists the names that apply to every run of it, and
// Run runs them. The generic checkers, which apply to any run, are
//
//   - "integrity": every message received, dropped or duplicated was sent,
//     between the same processes, with the same type;
//   - "no-duplicates": no message is received more often than sent and
//     duplicated by the network;
//   - "clock-condition": Lamport timestamps, vector timestamps and the
//     algorithm's own stamps (proc.Stamp) respect happened-before.
package check
