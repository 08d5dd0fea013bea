// Package live runs Cohort's algorithms as a real cluster: the same state
// machines the simulator checks, driven by real time and a network.
//
// A Node is one process of the cluster (one proc.ID). It hosts services:
// named instances of registered algorithms (a lock named "db-migrations"
// is one Ricart–Agrawala instance on every node). Each service handles one
// event at a time — a message, a timer firing, an application input — so
// the algorithm's code stays single-threaded exactly as in the simulator.
// An event that finds the service idle is handled at once by the goroutine
// that brings it (the transport's reader, the application calling Input);
// otherwise it waits in the service's inbox for the service's own actor
// goroutine, in order — except urgent messages (proc.Urgent: SWIM's
// probes), which go ahead of those waiting. Env.Now is the monotonic clock since the node
// started; timers are real.
//
// Outputs go to whoever waits for them — Lock returns when the service
// outputs Enter — and to an optional trace in the simulator's JSONL format:
// one for the node (Config.Trace), or one per kind of service
// (Config.TraceDir: the locks', the groups', the DHT's ...), each a run of
// one algorithm that the nodes' traces of the kind merge into. In a
// cluster that members join, every node traces, joined ones too, and the
// vector clocks grow as members join (trace.Header.IDs).
//
// The network is a Transport (package live/transport: TCP with an
// authenticating handshake, or in-process channels); messages are
// serialized by a Codec (package wire). The host never imports an
// algorithm: it takes proc.Algorithm values from the registry.
package live
