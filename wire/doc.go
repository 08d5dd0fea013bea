// Package wire is how Cohort's messages cross a network: a codec that turns
// an algorithm's messages into bytes and back. (The frames that carry the
// bytes between nodes are the transport's business: package
// live/transport.)
//
// # Messages
//
// An algorithm lists a value of every message type it sends
// (proc.Algorithm.Messages); NewCodec builds, once, an encoding plan for
// each by reflection, and a type's position in the list, from 1, is its
// tag. Tags are append-only: a new message type goes at the end, so that
// peers with an older list still agree on the old tags, and refuse the new
// one with ErrUnknownTag.
//
// A message is its tag as a uvarint, then its fields in declaration order,
// nested structs inline:
//
//	bool                 one byte, 0 or 1
//	uint8 … uint64, uint uvarint
//	int8 … int64, int    zigzag varint (−1 → 1, 1 → 2, −2 → 3 …)
//	float32, float64     4 or 8 bytes, little-endian IEEE 754 bits
//	string, []byte       length as a uvarint, then the bytes (any bytes:
//	                     invalid UTF-8 is kept as it is)
//	[N]byte              the N bytes
//	other slices         length as a uvarint, then each element
//	other arrays         each element
//	pointer              0 for nil; 1, then the value it points to
//	map                  length as a uvarint, then each entry, key then
//	                     value, in strictly ascending order of the keys:
//	                     integers by value, strings byte by byte
//
// So raRequest{T: Stamp{C: 42, P: 3}}, tag 1, is the three bytes 01 2a 06,
// and a zero-field message is its tag alone.
//
// Every field must be exported, so that the decoder may set it. A map's
// keys must be integers or strings, whose order makes one encoding of a
// map whatever order Go iterates it in (floats have no such order: NaN is
// not equal to itself; nor have bools or structs here). Interfaces,
// channels, functions and maps of other keys are refused, with an error
// naming the type and the field.
//
// The encoding is canonical: one value has one encoding, and Decode refuses
// any other spelling (a varint that is not in its shortest form, a bool
// byte of 2, an int8 field of 300, map keys out of order or repeated), so
// that whatever decodes re-encodes to the same bytes. An empty slice and a
// nil one encode alike and decode as nil; so do an empty map and a nil
// one. Decode checks every length against the remaining input, and the
// lengths of nested slices and maps together against the whole input,
// before it allocates: a ten-byte message cannot ask for a gigabyte, and
// nested slices cannot each claim the rest of the input anew. Nesting
// deeper than 100 levels is refused on both sides (a cyclic value fails to
// encode).
//
// Decode returns the message as the Go type registered — a value if the
// prototype was a value — so that the algorithm's type switch sees what
// the simulator would have delivered. Encoding and decoding a small
// message takes one allocation, the decoded value itself; the plan's
// field offsets are used with package unsafe to get there (see codec.go).
// Maps, rarer, go through package reflect and cost more.
package wire
