// Package viewer is Cohort's interactive space-time viewer: one HTML page,
// plain JavaScript over a <canvas>, that draws a trace with zoom and pan
// over true time or a Lamport-time layout, filters it by process and by
// message type, steps through its events (showing, where the run recorded
// them, each process's own description of its state: proc.Describer,
// cohort sim --states), highlights an event's causal
// past and future, lists the checkers' results with each violation's
// counterexample marked, and draws each deadlock's wait-for cycle: one a
// process declared, or one a checker found (its verdict's Edges). A
// live node records the states too (live.Config.TraceStates). A page
// may carry figures of its run (Page.Figures: a clock synchronization
// run's clock plot, accuracy and precision marked), shown over the
// diagram when picked. Charts
// draws figures rather than a run: cohort compare's, and the position
// family's.
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
