// Package liverpc is remote procedure call between the nodes of a live
// cluster, run by the very client and server stubs the simulator checks
// (package rpc): the same state machines, with the call's semantics —
// maybe, at-least-once or at-most-once — chosen per call, gRPC's bounded
// retries and throttle, the duplicate table on the node's stable storage,
// and the remedies against orphans; here with real timers, a real disk,
// and procedures that really run.
//
//	ep, err := liverpc.New(node, liverpc.DefaultConfig())
//	liverpc.Register(ep, "add", func(ctx context.Context, a [2]int) (int, error) { return a[0] + a[1], nil })
//	sum, err := liverpc.Call[[2]int, int](ctx, ep, 0, "add", [2]int{2, 3}, liverpc.Options{Sem: rpc.AtMostOnce})
//
// Each server is a service of the node, "rpc/<id>": on node id it is the
// server stub, on every other node that calls it a client stub (so a
// client keeps, per server, its own sequence numbers and epoch, on its own
// log). The server stub outputs rpc.Execute for every execution; the
// endpoint runs the registered procedure on its worker pool (package
// pool, self-sized by default) and hands the result back as rpc.Finished;
// the stub stores it in the duplicate table (synced) before replying, so
// an at-most-once call retransmitted after a server restart gets the
// result of its one execution, or rpc.ErrCrashed if the server died while
// it ran — never a second execution.
//
// Stubs are typed by generics, without reflection on the procedure or
// code generation: Register[Req, Resp] and Call[Req, Resp] pack the
// arguments and results as JSON (encoding/json) — canonical enough for
// a duplicate table (struct fields in declaration order, map keys
// sorted), readable in a trace, and any Go type works without a schema;
// a []byte travels as it is, unencoded (the benchmark's payload). The
// project's wire codec would be smaller, but it takes only message
// structs, and the stubs treat the bytes as opaque either way.
//
// Stubs can also be generated from a Go interface (package
// liverpc/rpcgen, `cohort rpc gen`): a client that implements the
// interface and a dispatcher that registers its methods, which pack
// arguments and results field by field in the wire encoding, without
// reflection or JSON — smaller and cheaper than Register and Call, for
// the types the generator supports — and call each method with the
// semantics its declaration names, if it names any.
//
// A procedure learns the semantics of the call it runs for from its
// context (CallSemantics): one that is not idempotent may refuse an
// at-least-once call, which can run it more than once.
//
// Deadlines and cancellation come from the context: when it ends the call
// returns ctx.Err() and the client stub abandons it (rpc.Cancel), which
// kills it at the server if it still runs there — the procedure's context
// is cancelled. A call may therefore have run once (or, at-least-once,
// more) though its caller saw an error: exactly once is impossible.
//
// Only members of the cluster can call: the transport authenticates every
// connection (a shared secret or mutual TLS) before a byte of a request
// is read. A client outside the cluster calls through a node's HTTP API
// (HTTPHandler, behind the node's bearer token; Client): the node makes
// the call with its own stub, and the request id the client gives is the
// call's key (Options.Key) in the server's duplicate table — a resend
// whose answer was lost, through any node and across restarts, gets the
// first call's result, never a second run.
package liverpc
