// Package viewer is Cohort's interactive space-time viewer: one HTML page,
// plain JavaScript over a <canvas>, that draws a trace with zoom and pan
// over true time or a Lamport-time layout, filters it by process and by
// message type, steps through its events (showing, where the run recorded
// them, each process's own description of its state: proc.Describer,
// cohort sim --states), highlights an event's causal
// past and future, and lists the checkers' results with each violation's
// counterexample marked.
//
// The page is self-contained: its script and style are embedded in the
// binary (go:embed) and inlined, and the trace, the checker results and
// the fault periods are embedded in it as JSON, so the same bytes work
// served over HTTP (Serve) and opened from disk (WriteHTML) with no
// network at all.
//
// The page's script exposes window.cohortViewer for tests: stats() says
// what is drawn (lanes, arrows, events, highlighted events, the level of
// detail), and step, jump and selectViolation drive it as the keys and
// clicks do.
package viewer
