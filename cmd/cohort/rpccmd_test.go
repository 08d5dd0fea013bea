package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/registry"
)

// rpcCluster starts n nodes in this process with RPC, data directories
// and a token, registers "add" and "fail" on every node, and returns the
// nodes' API endpoints and the count of add's runs.
func rpcCluster(t *testing.T, n int, token string) ([]string, *atomic.Int64) {
	t.Helper()
	ra, _ := registry.Find("mutex", "ricart-agrawala")
	seq, _ := group.Algorithm(group.DefaultAlgorithm)
	net, err := transport.NewInProc(n, transport.InProcConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rc := liverpc.DefaultConfig()
	var runs atomic.Int64
	var eps []string
	for i := range n {
		ep, _ := net.Endpoint(proc.ID(i))
		nd, err := node.New(node.Config{ID: proc.ID(i), N: n, Transport: ep, Lock: ra, Group: seq, Token: token, RPC: &rc,
			DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		liverpc.Register(nd.RPC(), "add", func(_ context.Context, a [2]int) (int, error) { runs.Add(1); return a[0] + a[1], nil })
		liverpc.Register(nd.RPC(), "fail", func(context.Context, int) (int, error) { return 0, errors.New("no such account") })
		srv := httptest.NewServer(nd.Handler())
		t.Cleanup(func() { srv.Close(); nd.Close() })
		eps = append(eps, strings.TrimPrefix(srv.URL, "http://"))
	}
	return eps, &runs
}

func TestRPCCommand(t *testing.T) {
	eps, runs := rpcCluster(t, 3, "tok")
	t.Setenv("COHORT_TOKEN", "tok")
	code, out, errs := cli(t, "rpc", "2", "add", "[2,40]", "--endpoints", eps[0])
	if code != 0 || out != "42\n" {
		t.Fatalf("rpc: %d %q %s", code, out, errs)
	}
	// Under one request id, through two nodes (the first down): one run.
	for _, e := range []string{eps[0], "127.0.0.1:1," + eps[1]} {
		withStdin(t, "[20,22]", func() {
			code, out, errs = cli(t, "rpc", "2", "add", "-", "--request-id", "job-1", "--json", "--endpoints", e)
		})
		var r struct {
			Server    int             `json:"server"`
			Proc      string          `json:"proc"`
			RequestID string          `json:"request_id"`
			Result    json.RawMessage `json:"result"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Server != 2 || r.Proc != "add" || r.RequestID != "job-1" || string(r.Result) != "42" {
			t.Fatalf("rpc --json through %s: %d %q %s", e, code, out, errs)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("add ran %d times, want 2 (once per request id)", n)
	}
	code, _, errs = cli(t, "rpc", "2", "fail", "0", "--endpoints", eps[0])
	if code != 1 || !strings.Contains(errs, "no such account") || !strings.Contains(errs, "HTTP 422") {
		t.Fatalf("a procedure's error: %d %s", code, errs)
	}
	code, _, errs = cli(t, "rpc", "2", "nothing", "0", "--endpoints", eps[0], "--timeout", "30s")
	if code != 1 || !strings.Contains(errs, `unknown procedure "nothing"`) {
		t.Fatalf("an unknown procedure: %d %s", code, errs)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"x", "add"}, `SERVER "x"`},
		{[]string{"2", "a b"}, `procedure name "a b"`},
		{[]string{"2", "add", "--request-id", "a b"}, `--request-id "a b"`},
		{[]string{"2", "add", "--semantics", "sometimes"}, `--semantics "sometimes"`},
		{[]string{"2", "add", "--timeout", "-1s"}, "--timeout -1s"},
		{[]string{"7", "add", "[1,1]"}, `server "7": want a member's id, 0 to 2`},
		{[]string{"0", "add", "[1,1]"}, "server 0 is this node"},
		{[]string{"2", "add", strings.Repeat("x", liverpc.MaxPayload+1)}, "BODY: more than"},
	} {
		code, _, errs := cli(t, append(append([]string{"rpc"}, bad.args...), "--endpoints", eps[0])...)
		if code != 2 || !strings.Contains(errs, bad.want) {
			t.Errorf("rpc %q: exit %d %q, want 2 naming %q", bad.args, code, errs, bad.want)
		}
	}
	if code, _, errs := cli(t, "rpc", "2", "add", "--endpoints", ""); code != 2 || !strings.Contains(errs, "--endpoints") {
		t.Errorf("no endpoints: %d %s", code, errs)
	}
	t.Setenv("COHORT_TOKEN", "wrong")
	if code, _, errs := cli(t, "rpc", "2", "add", "[1,1]", "--endpoints", eps[0]); code != 1 || !strings.Contains(errs, "401") {
		t.Errorf("a wrong token: %d %s", code, errs)
	}
}
