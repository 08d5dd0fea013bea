package bank

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/rpc"
)

// pair is two nodes on loopback: node 1 serves a Memory bank through the
// generated dispatcher, node 0 calls it through the generated client.
type pair struct {
	bank *Memory
	eps  [2]*liverpc.Endpoint
}

func newPair(t testing.TB, setup func(*Memory, *liverpc.Endpoint)) *pair {
	t.Helper()
	cfg := liverpc.DefaultConfig()
	cfg.RPC.Timeout = 300 * time.Millisecond
	cfg.RPC.Retry.InitialBackoff = 5 * time.Millisecond
	cfg.RPC.Retry.MaxBackoff = 50 * time.Millisecond
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := &pair{bank: NewMemory()}
	var lns [2]net.Listener
	var addrs [2]string
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	for i := range 2 {
		tr, err := transport.NewTCP(transport.Config{Self: proc.ID(i), Listener: lns[i],
			Peers: map[proc.ID]string{proc.ID(1 - i): addrs[1-i]}, Secret: []byte("bank test secret, 32 bytes long!"),
			DialBackoffMin: 5 * time.Millisecond, DialBackoffMax: 50 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		node, err := live.NewNode(live.Config{Self: proc.ID(i), N: 2, Transport: tr,
			DataDir: filepath.Join(t.TempDir(), "node"), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := liverpc.New(node, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := RegisterBank(ep, p.bank); err != nil {
				t.Fatal(err)
			}
			if setup != nil {
				setup(p.bank, ep)
			}
		}
		if err := node.Start(); err != nil {
			t.Fatal(err)
		}
		p.eps[i] = ep
		t.Cleanup(func() { node.Close(); ep.Close() })
	}
	return p
}

// client calls node 1 from node 0 with semantics sem. An attempt's timer
// of 5 s, far above a loopback round trip even on a loaded machine, keeps
// maybe from giving up and at-least-once from running a call twice, so
// that every call runs exactly once.
func (p *pair) client(sem rpc.Semantics) *BankClient {
	return &BankClient{Endpoint: p.eps[0], Server: 1, Options: liverpc.Options{Sem: sem, Attempt: 5 * time.Second}}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// Every method, through the generated client and dispatcher, under each
// semantics: the results are the implementation's, and on a loss-free
// network each call runs once.
func TestBankOverLoopbackEachSemantics(t *testing.T) {
	p := newPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce} {
		c := p.client(sem)
		a, err := c.Open(ctx, "ada", 1000, []string{"gold", "ünïcode\xff"})
		if err != nil || a.Owner != "ada" || a.Balance != 1000 || !reflect.DeepEqual(a.Tags, []string{"gold", "ünïcode\xff"}) {
			t.Fatalf("%s: Open = %+v, %v", sem, a, err)
		}
		b, err := c.Open(ctx, "bob", 0, nil)
		if err != nil || b.Tags != nil {
			t.Fatalf("%s: Open = %+v, %v", sem, b, err)
		}
		if bal, err := c.Deposit(ctx, b.ID, -5); err != nil || bal != -5 {
			t.Fatalf("%s: Deposit = %d, %v", sem, bal, err)
		}
		tr := Transfer{From: a.ID, To: b.ID, Amount: 200, Memo: []byte{0, 0xff, 'x'}, Rate: 0.5,
			Fees: []Fee{{Name: "wire", Percent: 1.5}, {Name: "waived", Percent: 50, Waived: true}}}
		from, to, err := c.Move(ctx, tr)
		if err != nil || from.Balance != 797 || to.Balance != 95 {
			t.Fatalf("%s: Move = %+v, %+v, %v", sem, from, to, err)
		}
		st, err := c.Statement(ctx, a.ID, 10)
		if err != nil || !reflect.DeepEqual(st, []Transfer{tr}) {
			t.Fatalf("%s: Statement = %+v, %v", sem, st, err)
		}
		ok, bals, err := c.Audit(ctx, []string{b.ID, a.ID}, 100, true)
		if err != nil || ok || len(bals) != 2 {
			t.Fatalf("%s: Audit = %v, %v, %v", sem, ok, bals, err)
		}
		if err := c.Hold(ctx, time.Millisecond); err != nil {
			t.Fatalf("%s: Hold = %v", sem, err)
		}
		wait(t, p.bank.holdEnd, "the hold to end")
		<-p.bank.holdStart
		// An error of the implementation reaches the caller as its text.
		_, err = c.Deposit(ctx, "nobody", 1)
		var re *liverpc.RemoteError
		if !errors.As(err, &re) || re.Proc != "Bank.Deposit" || !strings.Contains(re.Msg, ErrNoAccount.Error()) {
			t.Fatalf("%s: Deposit to nobody: err = %v; want the bank's error", sem, err)
		}
		for method, want := range map[string]int{"Open": 2, "Deposit": 2, "Move": 1, "Statement": 1, "Audit": 1, "Hold": 1} {
			if got := p.bank.Calls(method); got != (i+1)*want {
				t.Fatalf("%s: %s ran %d times after %d calls on a loss-free network", sem, method, got, (i+1)*want)
			}
		}
	}
}

// A call ends with its context: at its deadline, or when cancelled, the
// client returns the context's error and the server's procedure sees its
// own context end.
func TestBankDeadlineAndCancel(t *testing.T) {
	p := newPair(t, nil)
	for _, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce} {
		c := p.client(sem)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := c.Hold(ctx, time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Hold past the deadline: err = %v", sem, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: the call returned %v after its 100ms deadline", sem, d)
		}
		wait(t, p.bank.holdStart, "the hold to start")
		if err := wait(t, p.bank.holdEnd, "the server to end the hold"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: the server's hold ended with %v; want its context cancelled", sem, err)
		}

		ctx, cancel = context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- c.Hold(ctx, time.Minute) }()
		wait(t, p.bank.holdStart, "the hold to start")
		cancel()
		if err := wait(t, errc, "the call to return"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled Hold: err = %v", sem, err)
		}
		if err := wait(t, p.bank.holdEnd, "the server to end the hold"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: the server's hold ended with %v; want its context cancelled", sem, err)
		}
	}
}

// Bytes that are not the arguments' encoding are refused by the
// dispatcher before the implementation runs.
func TestBankRefusesMalformedArguments(t *testing.T) {
	p := newPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]byte{nil, {0x05, 'a'}, append(appendBankDepositArgs(nil, "x", 1), 0)} {
		_, err := p.eps[0].Invoke(ctx, 1, "Bank.Deposit", args, liverpc.Options{})
		var re *liverpc.RemoteError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "unpacking the arguments") {
			t.Fatalf("Deposit(%x): err = %v; want the arguments refused", args, err)
		}
	}
	if n := p.bank.Calls("Deposit"); n != 0 {
		t.Fatalf("Deposit ran %d times on malformed arguments", n)
	}
}

// Over TCP, a method that declares its semantics is called with them
// whatever the client's Options say, and one that declares none with the
// Options': Balances (a read, at-least-once) and Credit (at-most-once)
// from a client set to maybe, then to at-least-once. Their maps and
// pointers arrive as sent, nil as nil.
func TestBankDeclaredSemanticsOverTCP(t *testing.T) {
	p := newPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce} {
		c := p.client(sem)
		a, err := c.Open(ctx, "ada", 100, []string{"gold"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Open(ctx, "bob", 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		memo := "refund"
		accts, err := c.Credit(ctx, map[string]Cents{a.ID: 10, b.ID: -2}, &memo)
		if err != nil || len(accts) != 2 || accts[a.ID].Balance != 110 || accts[b.ID].Balance != 3 ||
			!reflect.DeepEqual(accts[a.ID].Tags, []string{"gold"}) || accts[b.ID].Tags != nil {
			t.Fatalf("%s: Credit = %+v, %v", sem, accts, err)
		}
		if st, err := c.Statement(ctx, b.ID, 1); err != nil || len(st) != 1 || string(st[0].Memo) != memo {
			t.Fatalf("%s: Statement after a credit with a memo = %+v, %v", sem, st, err)
		}
		if _, err := c.Credit(ctx, map[string]Cents{a.ID: 1, "nobody": 1}, nil); err == nil {
			t.Fatalf("%s: Credit to nobody succeeded", sem)
		}
		if _, err := c.Credit(ctx, nil, nil); err != nil {
			t.Fatalf("%s: Credit of nothing: %v", sem, err)
		}
		all, err := c.Balances(ctx, []string{a.ID, b.ID, "nobody"}, nil)
		if err != nil || !reflect.DeepEqual(all, map[string]Cents{a.ID: 110, b.ID: 3}) {
			t.Fatalf("%s: Balances = %v, %v", sem, all, err)
		}
		floor := Cents(50)
		if rich, err := c.Balances(ctx, []string{a.ID, b.ID}, &floor); err != nil || !reflect.DeepEqual(rich, map[string]Cents{a.ID: 110}) {
			t.Fatalf("%s: Balances above %d = %v, %v", sem, floor, rich, err)
		}
		if _, err := c.Deposit(ctx, a.ID, 1); err != nil {
			t.Fatal(err)
		}
		for method, want := range map[string]rpc.Semantics{"Balances": rpc.AtLeastOnce, "Credit": rpc.AtMostOnce, "Deposit": sem, "Open": sem} {
			if got := p.bank.Semantics(method); got != want {
				t.Errorf("client set to %s: %s ran under %s; want %s", sem, method, got, want)
			}
		}
	}
}

// The server holds a method to its declaration too: Credit, declared
// at-most-once, refuses a call made at-least-once (which could credit
// twice) before it runs, and takes one made at-most-once or maybe.
func TestBankRefusesUndeclaredAtLeastOnce(t *testing.T) {
	p := newPair(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := p.client(rpc.AtMostOnce).Open(ctx, "ada", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := appendBankCreditArgs(nil, map[string]Cents{a.ID: 1}, nil)
	_, err = p.eps[0].Invoke(ctx, 1, "Bank.Credit", args, liverpc.Options{Sem: rpc.AtLeastOnce, Attempt: 5 * time.Second})
	var re *liverpc.RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "Bank.Credit is declared at-most-once: refusing an at-least-once call") {
		t.Fatalf("Credit at-least-once by hand: err = %v; want it refused", err)
	}
	if n := p.bank.Calls("Credit"); n != 0 {
		t.Fatalf("Credit ran %d times on an at-least-once call", n)
	}
	for _, sem := range []rpc.Semantics{rpc.AtMostOnce, rpc.Maybe} {
		if _, err := p.eps[0].Invoke(ctx, 1, "Bank.Credit", args, liverpc.Options{Sem: sem, Attempt: 5 * time.Second}); err != nil {
			t.Fatalf("Credit %s by hand: %v", sem, err)
		}
	}
	// Balances, declared at-least-once, takes any call.
	if _, err := p.eps[0].Invoke(ctx, 1, "Bank.Balances", appendBankBalancesArgs(nil, nil, nil), liverpc.Options{Sem: rpc.Maybe, Attempt: 5 * time.Second}); err != nil {
		t.Fatalf("Balances maybe by hand: %v", err)
	}
}
