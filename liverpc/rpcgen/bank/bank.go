// Package bank is an example of a service whose RPC stubs are generated
// from its Go interface (package liverpc/rpcgen): Bank below, and
// bank_rpc.go, its client stub (BankClient) and server dispatcher
// (RegisterBank), written by
//
//	go generate ./liverpc/rpcgen/bank
//
// Memory is an implementation that keeps the accounts in memory, and
// counts the executions of each call and notes the semantics it came
// with, so that a test can check what each semantics promises.
//
// Two of Bank's methods declare their semantics with a //cohort:rpc line,
// which the generated client applies whatever its Options say: Balances,
// a read, at-least-once — which may run a call more than once, so it is
// only for idempotent methods — and Credit, which must not run twice,
// at-most-once. The others run with the client's Options.Sem.
package bank

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/rpc"
)

//go:generate go run github.com/cohort-go/cohort/cmd/cohort rpc gen --type Bank -o bank_rpc.go .

// Cents is an amount of money.
type Cents int64

// Account is an account's state.
type Account struct {
	ID      string
	Owner   string
	Balance Cents
	Tags    []string
}

// Transfer is a movement of money between two accounts.
type Transfer struct {
	From, To string
	Amount   Cents
	Memo     []byte
	Rate     float64 // an exchange rate, 1 for none
	Fees     []Fee
}

// Fee is a charge on a transfer.
type Fee struct {
	Name    string
	Percent float32
	Waived  bool
}

// Bank is the service. Every method takes the call's context first and
// returns an error last: the shape rpcgen makes stubs of.
type Bank interface {
	// Open opens an account for owner with an initial balance.
	Open(ctx context.Context, owner string, initial Cents, tags []string) (Account, error)
	// Deposit adds amount to account id and returns the new balance.
	Deposit(ctx context.Context, id string, amount Cents) (balance Cents, err error)
	// Move makes a transfer and returns both accounts after it.
	Move(ctx context.Context, t Transfer) (from, to Account, err error)
	// Statement returns the last n transfers of account id, newest last.
	Statement(ctx context.Context, id string, n int) ([]Transfer, error)
	// Audit checks that the accounts ids hold at least min each; it
	// returns whether they do and the balance of each, in units.
	Audit(ctx context.Context, ids []string, min uint32, strict bool) (ok bool, balances []float64, err error)
	// Hold holds the call for d, or until ctx ends (then it returns
	// ctx.Err()): a slow procedure, to try deadlines and cancellation on.
	Hold(ctx context.Context, d time.Duration) error
	// Balances returns the balance of each account of ids that holds at
	// least *floor (every one of them if floor is nil); unknown ids are
	// left out. It only reads, so running it twice does no harm: it may
	// be at-least-once, which retries until it gets an answer.
	//
	//cohort:rpc semantics=at-least-once
	Balances(ctx context.Context, ids []string, floor *Cents) (map[string]Cents, error)
	// Credit adds credits[id] to each account id, all or none, and
	// returns the accounts after it; memo, if not nil, goes into their
	// statements. Running it twice would credit twice: at-most-once.
	//
	//cohort:rpc semantics=at-most-once
	Credit(ctx context.Context, credits map[string]Cents, memo *string) (map[string]*Account, error)
}

// ErrNoAccount is returned for an account that does not exist.
var ErrNoAccount = errors.New("no such account")

// Memory is a Bank in memory. Its methods are safe for concurrent use.
type Memory struct {
	mu        sync.Mutex
	accounts  map[string]*Account
	log       map[string][]Transfer
	next      int
	calls     map[string]int           // executions per method
	sems      map[string]rpc.Semantics // the semantics of each method's last call
	holdStart chan struct{}            // a Hold began
	holdEnd   chan error               // a Hold ended, with its error
}

// NewMemory returns an empty bank.
func NewMemory() *Memory {
	return &Memory{accounts: map[string]*Account{}, log: map[string][]Transfer{}, calls: map[string]int{},
		sems: map[string]rpc.Semantics{}, holdStart: make(chan struct{}, 16), holdEnd: make(chan error, 16)}
}

var _ Bank = (*Memory)(nil)

// Calls returns how many times method ran.
func (m *Memory) Calls(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// Holds returns channels that receive a value when a Hold starts and its
// error when it ends.
func (m *Memory) Holds() (started <-chan struct{}, ended <-chan error) { return m.holdStart, m.holdEnd }

// Semantics returns the semantics method's last call came with.
func (m *Memory) Semantics(method string) rpc.Semantics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sems[method]
}

func (m *Memory) ran(ctx context.Context, method string) {
	sem, _ := liverpc.CallSemantics(ctx)
	m.mu.Lock()
	m.calls[method]++
	m.sems[method] = sem
	m.mu.Unlock()
}

func (m *Memory) Open(ctx context.Context, owner string, initial Cents, tags []string) (Account, error) {
	m.ran(ctx, "Open")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	a := &Account{ID: fmt.Sprintf("acct-%d", m.next), Owner: owner, Balance: initial, Tags: append([]string(nil), tags...)}
	m.accounts[a.ID] = a
	return *a, nil
}

func (m *Memory) Deposit(ctx context.Context, id string, amount Cents) (Cents, error) {
	m.ran(ctx, "Deposit")
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.accounts[id]
	if a == nil {
		return 0, fmt.Errorf("%w: %q", ErrNoAccount, id)
	}
	a.Balance += amount
	return a.Balance, nil
}

func (m *Memory) Move(ctx context.Context, t Transfer) (Account, Account, error) {
	m.ran(ctx, "Move")
	m.mu.Lock()
	defer m.mu.Unlock()
	from, to := m.accounts[t.From], m.accounts[t.To]
	if from == nil || to == nil {
		return Account{}, Account{}, fmt.Errorf("%w: %q or %q", ErrNoAccount, t.From, t.To)
	}
	fees := Cents(0)
	for _, f := range t.Fees {
		if !f.Waived {
			fees += Cents(float32(t.Amount) * f.Percent / 100)
		}
	}
	if from.Balance < t.Amount+fees {
		return Account{}, Account{}, fmt.Errorf("account %q: balance %d, short of %d", t.From, from.Balance, t.Amount+fees)
	}
	from.Balance -= t.Amount + fees
	to.Balance += Cents(float64(t.Amount) * t.Rate)
	m.log[t.From] = append(m.log[t.From], t)
	m.log[t.To] = append(m.log[t.To], t)
	return *from, *to, nil
}

func (m *Memory) Statement(ctx context.Context, id string, n int) ([]Transfer, error) {
	m.ran(ctx, "Statement")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.accounts[id] == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoAccount, id)
	}
	l := m.log[id]
	if n < len(l) {
		l = l[len(l)-n:]
	}
	return append([]Transfer(nil), l...), nil
}

func (m *Memory) Audit(ctx context.Context, ids []string, min uint32, strict bool) (bool, []float64, error) {
	m.ran(ctx, "Audit")
	m.mu.Lock()
	defer m.mu.Unlock()
	ids = append([]string(nil), ids...)
	sort.Strings(ids)
	ok := true
	var balances []float64
	for _, id := range ids {
		a := m.accounts[id]
		if a == nil {
			if strict {
				return false, nil, fmt.Errorf("%w: %q", ErrNoAccount, id)
			}
			ok = false
			continue
		}
		ok = ok && a.Balance >= Cents(min)
		balances = append(balances, float64(a.Balance)/100)
	}
	return ok, balances, nil
}

func (m *Memory) Hold(ctx context.Context, d time.Duration) error {
	m.ran(ctx, "Hold")
	m.holdStart <- struct{}{}
	t := time.NewTimer(d)
	defer t.Stop()
	var err error
	select {
	case <-t.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	m.holdEnd <- err
	return err
}

func (m *Memory) Balances(ctx context.Context, ids []string, floor *Cents) (map[string]Cents, error) {
	m.ran(ctx, "Balances")
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string]Cents
	for _, id := range ids {
		if a := m.accounts[id]; a != nil && (floor == nil || a.Balance >= *floor) {
			if out == nil {
				out = map[string]Cents{}
			}
			out[id] = a.Balance
		}
	}
	return out, nil
}

func (m *Memory) Credit(ctx context.Context, credits map[string]Cents, memo *string) (map[string]*Account, error) {
	m.ran(ctx, "Credit")
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range credits {
		if m.accounts[id] == nil {
			return nil, fmt.Errorf("%w: %q", ErrNoAccount, id)
		}
	}
	var out map[string]*Account
	for id, amount := range credits {
		a := m.accounts[id]
		a.Balance += amount
		t := Transfer{To: id, Amount: amount, Rate: 1}
		if memo != nil {
			t.Memo = []byte(*memo)
		}
		m.log[id] = append(m.log[id], t)
		if out == nil {
			out = map[string]*Account{}
		}
		copied := *a
		copied.Tags = append([]string(nil), a.Tags...)
		out[id] = &copied
	}
	return out, nil
}
