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
// and slices and structs (of exported fields) of these, named or not.
// Pointers, maps, arrays, interfaces, channels, functions and recursive
// types are refused with an UnsupportedError naming the method, the
// value and its type.
//
// The client, IfaceClient, calls liverpc.Endpoint.Invoke with the
// procedure "Iface.Method", the packed arguments and its Options (the
// semantics: maybe, at-least-once or at-most-once; an attempt's timer; a
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
