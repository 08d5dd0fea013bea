// Package rpcgen generates the RPC stubs of a Go interface, over package
// liverpc: a client stub that implements the interface and a server
// dispatcher that registers each of its methods as a procedure. It is
// what `cohort rpc gen` runs, usually from a //go:generate line.
//
// The stubs are generated, not reflective: the generator reads the
// interface with go/parser and go/types (the compiled export data of the
// packages it imports comes from `go list -export`, as golang.org/x/tools'
// go/packages gets it, without that dependency), and writes, for each
// method, a function that appends its arguments to a byte slice field by
// field, and one that reads them back, with package wire's primitives
// (wire.AppendInt, wire.Reader ...). The bytes are the wire encoding of
// the arguments taken as a struct: what wire.Codec writes for such a
// message after its tag, so the stubs and the codec agree on every
// value, and a Reader accepts only what Codec.Decode accepts (canonical
// varints, lengths the input can pay for).
//
// A method must look like
//
//	Method(ctx context.Context, args ...) (results ..., error)
//
// with arguments and results of the kinds the wire encoding carries and
// the generator supports: booleans, integers, floats, strings, []byte,
// and slices, structs (of exported fields), pointers and maps of these,
// named or not, nested in one another up to wire.MaxDepth pointers,
// slices and maps deep. A pointer is a presence byte (0 for nil; 1, then
// the value), as the codec writes a pointer field. A map is its length,
// then its entries in strictly ascending order of their keys, which must
// be integers or strings, so that the same map is always the same bytes
// (a duplicate table compares them) and a decoder refuses entries out of
// order or repeated. Arrays, interfaces, channels, functions, complex
// numbers, maps keyed by floats, booleans or structs, and recursive types
// are refused with an UnsupportedError naming the method, the value and
// its type.
//
// A method's semantics can be declared with a directive line in its doc
// comment (or after it, on its line), and a default for the interface's
// methods in the interface's:
//
//	// Credit adds money: running it twice would add it twice.
//	//
//	//cohort:rpc semantics=at-most-once
//	Credit(ctx context.Context, credits map[string]Cents) error
//
// The values are maybe, at-least-once and at-most-once (rpc.Semantics'
// names); anything else is refused, naming it. The client stub calls a
// method that declares semantics with them, whatever its Options.Sem,
// which applies to the methods that declare none: whether a procedure may
// run twice is a fact about the procedure, known where it is declared.
// At-least-once retransmits until it gets a reply and the server runs
// every retransmission it receives, so a call may run more than once: it
// is only for idempotent methods (a read, or a write of an absolute
// value), never for one like Credit; the server stub of a method
// declared maybe or at-most-once refuses an at-least-once call (made by
// hand, or by a client generated from another declaration) before the
// method runs. Maybe runs a call at most once and does not retry;
// at-most-once retries and filters the duplicates at the server (its
// duplicate table), at the cost of a synced write per call.
//
// The client, IfaceClient, calls liverpc.Endpoint.Invoke with the
// procedure "Iface.Method", the packed arguments and its Options (the
// semantics, unless the method declares its own; an attempt's timer; a
// key), so a call ends when its context does, by deadline or
// cancellation, and is then abandoned at the server, whose procedure
// sees its own context cancelled. RegisterIface registers the
// implementation's methods on an endpoint. An error the implementation
// returns reaches the client as a *liverpc.RemoteError holding its text.
//
// The output is gofmt'd, starts with a "Code generated ... DO NOT EDIT."
// line, and is the same bytes for the same input: methods in name order,
// helpers in order of first use, imports sorted.
package rpcgen
