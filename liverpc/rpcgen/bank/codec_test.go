package bank

import (
	"bytes"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/wire"
)

// transferMsg and accountMsg are Transfer and Account as wire messages,
// for the codec to encode beside the generated code.
type transferMsg Transfer

func (transferMsg) Kind() string { return "transfer" }

type accountMsg Account

func (accountMsg) Kind() string { return "account" }

var sampleTransfers = []Transfer{
	{},
	{From: "a", To: "b", Amount: -1 << 63, Memo: []byte{0, 0xff}, Rate: math.Inf(-1)},
	{From: "\xff", Amount: math.MaxInt64, Rate: 0.25, Fees: []Fee{{Name: "x", Percent: -0.5}, {Waived: true}}},
}

// The generated encoders write what the wire codec writes for the same
// struct, after its tag: the stubs use the project's encoding.
func TestGeneratedCodeIsTheWireEncoding(t *testing.T) {
	codec, err := wire.NewCodec([]proc.Message{transferMsg{}, accountMsg{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range sampleTransfers {
		want, err := codec.Append(nil, transferMsg(tr))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTransfer(nil, &tr); !bytes.Equal(got, want[1:]) {
			t.Fatalf("%+v: generated %x; the codec %x after its tag", tr, got, want[1:])
		}
	}
	a := Account{ID: "acct-1", Owner: "ada", Balance: -7, Tags: []string{"", "x"}}
	want, err := codec.Append(nil, accountMsg(a))
	if err != nil {
		t.Fatal(err)
	}
	if got := appendAccount(nil, &a); !bytes.Equal(got, want[1:]) {
		t.Fatalf("%+v: generated %x; the codec %x after its tag", a, got, want[1:])
	}
}

// decoders are the generated decode functions, each with a function that
// re-encodes what it decoded, and a bound on what it may allocate: the
// number of elements of its slices, which the input must pay for.
var decoders = map[string]func([]byte) (out []byte, elems int, err error){
	"OpenArgs": func(b []byte) ([]byte, int, error) {
		o, i, tags, err := decodeBankOpenArgs(b)
		return appendBankOpenArgs(nil, o, i, tags), len(tags), err
	},
	"MoveArgs": func(b []byte) ([]byte, int, error) {
		t, err := decodeBankMoveArgs(b)
		return appendBankMoveArgs(nil, t), len(t.Fees), err
	},
	"MoveResults": func(b []byte) ([]byte, int, error) {
		f, t, err := decodeBankMoveResults(b)
		return appendBankMoveResults(nil, f, t), len(f.Tags) + len(t.Tags), err
	},
	"StatementResults": func(b []byte) ([]byte, int, error) {
		ts, err := decodeBankStatementResults(b)
		n := len(ts)
		for _, t := range ts {
			n += len(t.Fees)
		}
		return appendBankStatementResults(nil, ts), n, err
	},
	"AuditArgs": func(b []byte) ([]byte, int, error) {
		ids, min, strict, err := decodeBankAuditArgs(b)
		return appendBankAuditArgs(nil, ids, min, strict), len(ids), err
	},
	"AuditResults": func(b []byte) ([]byte, int, error) {
		ok, bals, err := decodeBankAuditResults(b)
		return appendBankAuditResults(nil, ok, bals), len(bals), err
	},
	"HoldArgs": func(b []byte) ([]byte, int, error) {
		d, err := decodeBankHoldArgs(b)
		return appendBankHoldArgs(nil, d), 0, err
	},
	"DepositArgs": func(b []byte) ([]byte, int, error) {
		id, amount, err := decodeBankDepositArgs(b)
		return appendBankDepositArgs(nil, id, amount), 0, err
	},
	"BalancesArgs": func(b []byte) ([]byte, int, error) {
		ids, floor, err := decodeBankBalancesArgs(b)
		return appendBankBalancesArgs(nil, ids, floor), len(ids), err
	},
	"BalancesResults": func(b []byte) ([]byte, int, error) {
		bals, err := decodeBankBalancesResults(b)
		return appendBankBalancesResults(nil, bals), len(bals), err
	},
	"CreditArgs": func(b []byte) ([]byte, int, error) {
		credits, memo, err := decodeBankCreditArgs(b)
		return appendBankCreditArgs(nil, credits, memo), len(credits), err
	},
	"CreditResults": func(b []byte) ([]byte, int, error) {
		accts, err := decodeBankCreditResults(b)
		n := len(accts)
		for _, a := range accts {
			if a != nil {
				n += len(a.Tags)
			}
		}
		return appendBankCreditResults(nil, accts), n, err
	},
}

// Any input to any generated decoder: no panic; what decodes re-encodes
// to the same bytes (the encoding is canonical: a map decodes only from
// its keys in ascending order, none repeated); and its slices and maps
// hold no more elements than the input has bytes — a length cannot make the
// decoder allocate beyond what the input pays for.
func FuzzDecoders(f *testing.F) {
	f.Add(appendBankOpenArgs(nil, "ada", 5, []string{"a", "b"}))
	f.Add(appendBankMoveArgs(nil, sampleTransfers[2]))
	f.Add(appendBankMoveResults(nil, Account{ID: "x", Tags: []string{"t"}}, Account{}))
	f.Add(appendBankStatementResults(nil, sampleTransfers))
	f.Add(appendBankAuditArgs(nil, []string{"a"}, 7, true))
	f.Add(appendBankAuditResults(nil, true, []float64{1, math.NaN()}))
	f.Add(appendBankHoldArgs(nil, time.Second))
	floor, memo := Cents(-3), "rent"
	f.Add(appendBankBalancesArgs(nil, []string{"a", "b"}, &floor))
	f.Add(appendBankBalancesResults(nil, map[string]Cents{"a": 1, "b": -1, "": 0}))
	f.Add(appendBankCreditArgs(nil, map[string]Cents{"x": 5, "y": 6}, &memo))
	f.Add(appendBankCreditResults(nil, map[string]*Account{"a": {ID: "a", Tags: []string{"t"}}, "b": nil}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		for name, decode := range decoders {
			out, elems, err := decode(in)
			if err != nil {
				continue
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%s: %x decodes, and re-encodes to %x", name, in, out)
			}
			if elems > len(in) {
				t.Fatalf("%s: %x (%d bytes) decoded to %d elements", name, in, len(in), elems)
			}
		}
	})
}

// Hostile lengths are refused before they are paid for: a slice of 2⁶²
// transfers allocates nothing, and a statement claiming 400 transfers
// (13 bytes each at least) whose first transfer's fees then claim the
// same bytes again is refused at the fees — the input's bytes are
// claimed once, by all the slices together (wire.Reader.Len), so what a
// decoder allocates stays within a few times the input.
func TestDecodersRefuseHostileLengths(t *testing.T) {
	huge := wire.AppendUint(nil, 1<<62)
	nested := wire.AppendLen(nil, 400)
	nested = append(nested, 0, 0, 0, 0)                   // From, To, Amount, Memo
	nested = append(nested, make([]byte, 8)...)           // Rate
	nested = append(nested, wire.AppendLen(nil, 1000)...) // Fees, 6 bytes each at least
	nested = append(nested, make([]byte, 6000)...)
	for _, c := range []struct {
		name  string
		in    []byte
		bound uint64 // bytes allocated per decode
	}{
		{"2⁶² transfers", huge, 0},
		// The 400 transfers' array is 400 × unsafe.Sizeof(Transfer{}) =
		// 38,400 bytes; the fees', if allocated, another 24,000.
		{"fees claiming the transfers' bytes", nested, 8 * uint64(len(nested))},
	} {
		if _, err := decodeBankStatementResults(c.in); err == nil {
			t.Fatalf("%s: decoded", c.name)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			decodeBankStatementResults(c.in)
		}
		runtime.ReadMemStats(&after)
		if perCall := (after.TotalAlloc - before.TotalAlloc) / 100; perCall > c.bound+512 {
			t.Fatalf("%s: %d bytes allocated per refused decode of %d bytes; want at most %d", c.name, perCall, len(c.in), c.bound+512)
		}
	}
}
