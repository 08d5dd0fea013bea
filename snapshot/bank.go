package snapshot

import (
	"fmt"

	"github.com/cohort-go/cohort/proc"
)

// Bank is one account of the bank-transfer workload, the classic example
// of the snapshot literature (Kshemkalyani & Singhal, ch. 4): money moves
// between accounts in messages, so at any instant some of it is in the channels;
// a snapshot is right only if the recorded balances and the money in the
// recorded channels add up to what there was at the start.
//
// An account opens with Initial money (output Opened). A Pay input makes
// it send a random amount between 1 and its balance to a random neighbour
// in a Money message (nothing if it is empty); the Money it receives is
// added to its balance. Its Snapshot is its balance.
type Bank struct {
	Initial int64
	balance int64
	paid    int // payments sent: numbers them, so each is told apart
}

// DefaultBalance is what every account opens with in the family's runs.
const DefaultBalance = 100

// NewBank opens an account with initial money.
func NewBank(initial int64) *Bank { return &Bank{Initial: initial} }

// Pay is the input that makes an account send a payment.
type Pay struct{}

func (Pay) Kind() string { return "pay" }

// Money is a payment: Amount, the N-th payment of its sender.
type Money struct {
	Amount int64 `json:"amount"`
	N      int   `json:"n"`
}

func (Money) Kind() string     { return "money" }
func (m Money) String() string { return fmt.Sprintf("$%d #%d", m.Amount, m.N) }

// Opened is output when an account opens, with its balance.
type Opened struct {
	Balance int64 `json:"balance"`
}

func (Opened) Kind() string { return "opened" }

func (b *Bank) Start(env proc.Env) {
	b.balance = b.Initial
	env.Output(Opened{Balance: b.balance})
}

func (b *Bank) Input(env proc.Env, in proc.Input) {
	nb := env.Neighbors()
	if _, ok := in.(Pay); !ok || b.balance <= 0 || len(nb) == 0 {
		return
	}
	amount := 1 + env.Rand().Int64N(b.balance)
	b.balance -= amount
	b.paid++
	env.Send(nb[env.Rand().IntN(len(nb))], Money{Amount: amount, N: b.paid})
}

func (b *Bank) Receive(_ proc.Env, _ proc.ID, m proc.Message) {
	if m, ok := m.(Money); ok {
		b.balance += m.Amount
	}
}

func (*Bank) Timeout(proc.Env, any) {}

// Snapshot is the balance.
func (b *Bank) Snapshot() any { return b.balance }
