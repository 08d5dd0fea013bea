// Package rpc is remote procedure call as the middleware chapters teach
// it (Tanenbaum & van Steen §4.2; Coulouris et al. §5.3): a client stub
// and a server stub, state machines run by a host, and what each call
// semantics promises when messages are lost or duplicated and processes
// crash.
//
// The path of a call: the client process hands the client stub a Call;
// the stub packs it into a Request and sends it; the server stub unpacks
// it, runs the procedure — which takes simulated time, Config.Work — and
// sends a Reply; the client stub returns it. Process Config.Server (0) is
// the server; every other process is a client.
//
// The semantics is a per-call option (Call.Sem):
//
//   - maybe: the request is sent once, never again; a lost request or
//     reply, or a server crash, leaves the call without a reply, and the
//     stub returns an error after its timer. The procedure ran at most
//     once (the server filters a duplicate the network makes, as for
//     at-most-once), perhaps not at all.
//   - at-least-once: the stub keeps a timer and resends until a reply
//     comes (within the retry budget); the server runs every request it
//     receives. A reply means the procedure ran once or more.
//   - at-most-once: per-client sequence numbers and, at the server, a
//     duplicate table keyed by them that keeps each call's reply: a
//     retransmission of a call that ran gets the stored reply, one of a
//     call still running gets nothing, one of a call that was running
//     when the server crashed gets an error ("crashed": it may or may not
//     have run). The table is on the server's stable storage, so it
//     survives a restart, and the client's acknowledgements (every
//     request carries the sequence number below which all of the client's
//     calls are finished) trim it, so its size is bounded by the calls in
//     progress.
//
// Exactly once is impossible: after a server crash the client cannot tell
// a call that ran and whose reply was lost from one that never ran. The
// at-most-once stub says so ("crashed"); the tests show such a run.
//
// The five failures and their remedies:
//
//  1. the server cannot be located: the stub returns an error (here: the
//     call fails after the retry budget, with "timeout");
//  2. the request is lost: a timer, and resend (at-least-once,
//     at-most-once);
//  3. the server crashes after receipt: at-least-once resends and the
//     procedure runs again; at-most-once gives up with an error; maybe
//     promises nothing;
//  4. the reply is lost: at-least-once runs the procedure again;
//     at-most-once filters the duplicate and resends the stored reply;
//  5. the client crashes: its calls still running at the server are
//     orphans. The remedies (Nelson 1981), chosen by Config.Orphans:
//     extermination (the client logs each call on stable storage before
//     sending it and, after its reboot, has the server kill every logged
//     call that did not return), reincarnation (after its reboot the
//     client announces a new epoch, and the server kills every call of an
//     older epoch of that client) and expiration (each call has a lease
//     the client renews while it waits; the server kills a call whose
//     lease lapsed).
//
// Retries are bounded as gRPC's retry policy bounds them (gRFC A6): at
// most five attempts per call, an exponential backoff with jitter between
// them, and a token bucket per client (retryThrottling: maxTokens,
// tokenRatio) that stops retrying while most attempts fail.
//
// A host that runs real procedures (package liverpc, on the live
// runtime) sets Config.Host: the server stub then outputs Execute where
// the simulator's work timer would start, and the host answers with the
// Finished input carrying the procedure's result, which the duplicate
// table stores (on stable storage, synced) before the reply leaves. Calls
// carry the procedure's name and packed arguments, a host's reference,
// and a per-call attempt timer; Cancel abandons a call (a deadline
// passed) and kills it at the server if it still runs.
//
// Outputs, for the checkers (package check: rpc-maybe, rpc-at-least-once,
// rpc-at-most-once) and the metrics: the client's "call" when a call
// begins and "return" when it ends, its "incarnation" when it starts; the
// server's "exec" when the procedure begins to run, "done" when it
// finishes and "killed" when an orphan (or a call whose lease lapsed) is
// killed.
package rpc
