package bank

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/cohort-go/cohort/wire"
	"pgregory.net/rapid"
)

// Random values of the pointer- and map-carrying methods' arguments and
// results survive the generated encoder and decoder (a nil and an empty
// slice or map alike), and their encoding is one: encoding again, or a
// copy of a map built in another order, gives the same bytes.
func TestPointersAndMapsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.Make[[]string]().Draw(t, "ids")
		floor := rapid.Make[*Cents]().Draw(t, "floor")
		b := appendBankBalancesArgs(nil, ids, floor)
		gotIDs, gotFloor, err := decodeBankBalancesArgs(b)
		if err != nil || !same(gotIDs, ids) || !same(gotFloor, floor) {
			t.Fatalf("BalancesArgs %q, %v: decoded %q, %v, %v", ids, floor, gotIDs, gotFloor, err)
		}
		if floor != nil && gotFloor == floor {
			t.Fatal("the decoded pointer is the encoded one")
		}

		bals := rapid.Make[map[string]Cents]().Draw(t, "balances")
		b = appendBankBalancesResults(nil, bals)
		got, err := decodeBankBalancesResults(b)
		if err != nil || !same(got, bals) {
			t.Fatalf("BalancesResults %v: decoded %v, %v", bals, got, err)
		}
		if again := appendBankBalancesResults(nil, rebuilt(bals)); !bytes.Equal(again, b) {
			t.Fatalf("BalancesResults %v: %x, and from a copy %x", bals, b, again)
		}

		credits := rapid.Make[map[string]Cents]().Draw(t, "credits")
		memo := rapid.Make[*string]().Draw(t, "memo")
		b = appendBankCreditArgs(nil, credits, memo)
		gotCredits, gotMemo, err := decodeBankCreditArgs(b)
		if err != nil || !same(gotCredits, credits) || !same(gotMemo, memo) {
			t.Fatalf("CreditArgs %v, %v: decoded %v, %v, %v", credits, memo, gotCredits, gotMemo, err)
		}

		accts := rapid.Make[map[string]*Account]().Draw(t, "accounts")
		b = appendBankCreditResults(nil, accts)
		gotAccts, err := decodeBankCreditResults(b)
		if err != nil || !same(gotAccts, accts) {
			t.Fatalf("CreditResults %v: decoded %v, %v", accts, gotAccts, err)
		}
		if again := appendBankCreditResults(nil, gotAccts); !bytes.Equal(again, b) {
			t.Fatalf("CreditResults %v: %x, re-encoded %x", accts, b, again)
		}
	})
}

// rebuilt is a copy of m, its keys inserted in descending order.
func rebuilt[V any](m map[string]V) map[string]V {
	keys := wire.SortedKeys(m)
	c := make(map[string]V, len(m))
	for i := len(keys) - 1; i >= 0; i-- {
		c[keys[i]] = m[keys[i]]
	}
	return c
}

// same reports whether a and b are deeply equal, taking a nil slice or
// map for an empty one (the encoding does not tell them apart).
func same(a, b any) bool { return sameValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func sameValue(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			v := b.MapIndex(k)
			if !v.IsValid() || !sameValue(a.MapIndex(k), v) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return a.Interface() == b.Interface()
}

// A map's entries must come in strictly ascending order of their keys: the
// same entries out of order, or a key repeated, are refused, so that a
// map has one encoding (and a key cannot be sent twice, the second
// silently winning). A nil pointer is the byte 0, a present one 1: any
// other presence byte is refused.
func TestDecodersRefuseNonCanonicalMapsAndPointers(t *testing.T) {
	entry := func(b []byte, k string, v Cents) []byte { return wire.AppendInt(wire.AppendString(b, k), int64(v)) }
	sorted := entry(entry(wire.AppendLen(nil, 2), "a", 1), "b", 2)
	if got, err := decodeBankBalancesResults(sorted); err != nil || len(got) != 2 {
		t.Fatalf("sorted entries: %v, %v", got, err)
	}
	for name, in := range map[string][]byte{
		"out of order":   entry(entry(wire.AppendLen(nil, 2), "b", 2), "a", 1),
		"repeated key":   entry(entry(wire.AppendLen(nil, 2), "a", 1), "a", 2),
		"repeated empty": entry(entry(wire.AppendLen(nil, 2), "", 1), "", 1),
	} {
		if got, err := decodeBankBalancesResults(in); !errors.Is(err, wire.ErrMalformed) || got != nil {
			t.Errorf("%s: %x decoded to %v, %v; want it refused", name, in, got, err)
		}
	}
	for _, in := range [][]byte{{0, 2, 1}, {0, 1}, {0, 1, 0x80}} {
		if ids, floor, err := decodeBankBalancesArgs(in); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%x: decoded to %q, %v; want it refused", in, ids, floor)
		}
	}
}

// A map's length is paid for before the map is made, as a slice's: a map
// claiming 2⁶² entries allocates nothing, and one whose accounts' tags
// claim the bytes its entries already claimed is refused at the tags.
func TestMapDecodersRefuseHostileLengths(t *testing.T) {
	huge := wire.AppendUint(nil, 1<<62)
	// 100 entries of 8 bytes at least (a key, a presence byte, an
	// account's four fields and its tags' length) ...
	nested := wire.AppendLen(nil, 100)
	nested = append(nested, 0, 1, 0, 0, 0) // key "", present, ID, Owner, Balance
	// ... whose first account's tags claim 700 more.
	nested = append(nested, wire.AppendLen(nil, 700)...)
	nested = append(nested, make([]byte, 700)...)
	for _, c := range []struct {
		name   string
		in     []byte
		decode func([]byte) error
		bound  uint64 // bytes allocated per decode
	}{
		{"2⁶² balances", huge, func(b []byte) error { _, err := decodeBankBalancesResults(b); return err }, 0},
		{"2⁶² credits", huge, func(b []byte) error { _, _, err := decodeBankCreditArgs(b); return err }, 0},
		// The 100 entries' map, and an account: a few KB.
		{"tags claiming the entries' bytes", nested, func(b []byte) error { _, err := decodeBankCreditResults(b); return err }, 8 * uint64(len(nested))},
	} {
		if err := c.decode(c.in); !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("%s: err = %v; want it refused", c.name, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			c.decode(c.in)
		}
		runtime.ReadMemStats(&after)
		if perCall := (after.TotalAlloc - before.TotalAlloc) / 100; perCall > c.bound+512 {
			t.Fatalf("%s: %d bytes allocated per refused decode of %d bytes; want at most %d", c.name, perCall, len(c.in), c.bound+512)
		}
	}
}
