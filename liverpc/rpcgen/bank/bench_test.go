package bank

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/rpc"
)

// The hand-written path: liverpc.Register and liverpc.Call, whose stubs
// pack arguments and results as JSON, serving the same bank.

type depositArgs struct {
	ID     string
	Amount Cents
}

type statementArgs struct {
	ID string
	N  int
}

type balancesArgs struct {
	IDs   []string
	Floor *Cents
}

func registerByHand(m *Memory, ep *liverpc.Endpoint) {
	liverpc.Register(ep, "hand.Deposit", func(ctx context.Context, a depositArgs) (Cents, error) {
		return m.Deposit(ctx, a.ID, a.Amount)
	})
	liverpc.Register(ep, "hand.Statement", func(ctx context.Context, a statementArgs) ([]Transfer, error) {
		return m.Statement(ctx, a.ID, a.N)
	})
	liverpc.Register(ep, "hand.Balances", func(ctx context.Context, a balancesArgs) (map[string]Cents, error) {
		return m.Balances(ctx, a.IDs, a.Floor)
	})
}

// statementFixture opens two accounts and makes 10 transfers between
// them, each with a memo and two fees.
func statementFixture(b *testing.B, c *BankClient) string {
	ctx := context.Background()
	a, err := c.Open(ctx, "ada", 1<<40, []string{"gold"})
	if err != nil {
		b.Fatal(err)
	}
	o, err := c.Open(ctx, "bob", 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		tr := Transfer{From: a.ID, To: o.ID, Amount: Cents(100 + i), Memo: []byte(fmt.Sprintf("invoice %d", i)), Rate: 1,
			Fees: []Fee{{Name: "wire", Percent: 0.5}, {Name: "fx", Percent: 1, Waived: true}}}
		if _, _, err := c.Move(ctx, tr); err != nil {
			b.Fatal(err)
		}
	}
	return a.ID
}

// balancesFixture opens 16 accounts and returns their ids.
func balancesFixture(b *testing.B, c *BankClient) []string {
	var ids []string
	for i := range 16 {
		a, err := c.Open(context.Background(), fmt.Sprintf("owner %d", i), Cents(1000*i), nil)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	return ids
}

// Calls through the generated stubs and through the hand-written JSON
// stubs, on the same two nodes on loopback, one call at a time, under
// maybe semantics (no duplicate table to sync to disk, whose fsync would
// swamp the stubs' cost): Deposit (a string and an integer in, an integer out) and
// Statement (10 transfers out, 1 KB as JSON); and, at-least-once as it
// declares, Balances (16 ids and a pointer in, a map of 16 balances out).
func BenchmarkCall(b *testing.B) {
	p := newPair(b, registerByHand)
	c := p.client(rpc.Maybe)
	id := statementFixture(b, c)
	ids := balancesFixture(b, c)
	floor := Cents(0)
	alo := c.Options
	alo.Sem = rpc.AtLeastOnce
	ctx := context.Background()
	calls := map[string]func() error{
		"Deposit/generated": func() error { _, err := c.Deposit(ctx, id, 1); return err },
		"Deposit/hand": func() error {
			_, err := liverpc.Call[depositArgs, Cents](ctx, c.Endpoint, 1, "hand.Deposit", depositArgs{id, 1}, c.Options)
			return err
		},
		"Statement/generated": func() error {
			st, err := c.Statement(ctx, id, 10)
			if err == nil && len(st) != 10 {
				err = fmt.Errorf("%d transfers", len(st))
			}
			return err
		},
		"Statement/hand": func() error {
			st, err := liverpc.Call[statementArgs, []Transfer](ctx, c.Endpoint, 1, "hand.Statement", statementArgs{id, 10}, c.Options)
			if err == nil && len(st) != 10 {
				err = fmt.Errorf("%d transfers", len(st))
			}
			return err
		},
		"Balances/generated": func() error {
			bals, err := c.Balances(ctx, ids, &floor)
			if err == nil && len(bals) != 16 {
				err = fmt.Errorf("%d balances", len(bals))
			}
			return err
		},
		"Balances/hand": func() error {
			bals, err := liverpc.Call[balancesArgs, map[string]Cents](ctx, c.Endpoint, 1, "hand.Balances", balancesArgs{ids, &floor}, alo)
			if err == nil && len(bals) != 16 {
				err = fmt.Errorf("%d balances", len(bals))
			}
			return err
		},
	}
	// Generated and hand-written alternate within each method.
	for _, name := range []string{"Deposit/generated", "Deposit/hand", "Statement/generated", "Statement/hand", "Balances/generated", "Balances/hand"} {
		call := calls[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// The stubs' own work, without the network: packing a Statement's 10
// transfers and unpacking them, generated (package wire) and by JSON.
func BenchmarkPackStatement(b *testing.B) {
	ts := make([]Transfer, 10)
	for i := range ts {
		ts[i] = Transfer{From: "acct-1", To: "acct-2", Amount: Cents(100 + i), Memo: []byte(fmt.Sprintf("invoice %d", i)), Rate: 1,
			Fees: []Fee{{Name: "wire", Percent: 0.5}, {Name: "fx", Percent: 1, Waived: true}}}
	}
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendBankStatementResults(buf[:0], ts)
			if _, err := decodeBankStatementResults(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = json.Marshal(ts); err != nil {
				b.Fatal(err)
			}
			var back []Transfer
			if err := json.Unmarshal(buf, &back); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
}

// The stubs' own work on a map: packing Balances' result, 16 balances,
// and unpacking it, generated (sorted keys, package wire) and by JSON
// (which sorts map keys too).
func BenchmarkPackBalances(b *testing.B) {
	bals := map[string]Cents{}
	for i := range 16 {
		bals[fmt.Sprintf("acct-%d", i+1)] = Cents(1000 * i)
	}
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendBankBalancesResults(buf[:0], bals)
			if _, err := decodeBankBalancesResults(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = json.Marshal(bals); err != nil {
				b.Fatal(err)
			}
			var back map[string]Cents
			if err := json.Unmarshal(buf, &back); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
}
