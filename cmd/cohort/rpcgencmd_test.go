package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cohort rpc gen writes the example's stub, to standard output or to a
// file; bad usage and interfaces it cannot make stubs of exit 2, naming
// what is wrong; and `cohort rpc SERVER PROC` still calls.
func TestRPCGen(t *testing.T) {
	const pkg = "../../liverpc/rpcgen/bank"
	want, err := os.ReadFile(filepath.Join(pkg, "bank_rpc.go"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, "rpc", "gen", "--type", "Bank", pkg)
	if code != 0 || stdout != string(want) {
		t.Fatalf("rpc gen to stdout: exit %d, stderr %q; the output differs from bank_rpc.go: %v", code, stderr, stdout != string(want))
	}
	out := filepath.Join(t.TempDir(), "stub.go")
	if code, _, stderr := cli(t, "rpc", "gen", "--type", "Bank", "-o", out, filepath.Join(pkg, "bank.go")); code != 0 {
		t.Fatalf("rpc gen -o: exit %d: %s", code, stderr)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != string(want) {
		t.Fatalf("rpc gen -o wrote a different stub (%v)", err)
	}

	bad := t.TempDir()
	src := "package p\n\nimport \"context\"\n\ntype KV interface {\n\tGet(ctx context.Context, keys map[float64]bool) (string, error)\n}\n" +
		"\ntype Once interface {\n\t//cohort:rpc semantics=exactly-once\n\tPut(ctx context.Context, key string, value *string) error\n}\n"
	if err := os.WriteFile(filepath.Join(bad, "kv.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rpc", "gen", "--type", "KV", bad}, "method KV.Get, parameter keys: type map[float64]bool: unsupported: map keys of floats"},
		{[]string{"rpc", "gen", "--type", "Once", bad}, `method Once.Put: //cohort:rpc semantics=exactly-once: bad //cohort:rpc directive: unknown semantics "exactly-once"`},
		{[]string{"rpc", "gen", pkg}, "--type: want the interface's name"},
		{[]string{"rpc", "gen", "--type", "Bank"}, "requires at least 1 arg"},
		{[]string{"rpc", "gen", "--type", "Nope", pkg}, "--type Nope: no such type in package bank"},
		{[]string{"rpc", "gen", "--type", "Account", pkg}, "is not an interface"},
		{[]string{"rpc", "gen", "--type", "Bank", filepath.Join(bad, "missing")}, "missing"},
		{[]string{"rpc", "gen", "--type", "Bank", "-o", "stub.txt", pkg}, `-o "stub.txt": want a .go file`},
	} {
		code, _, stderr := cli(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(pkg, "stub.txt")); err == nil {
		t.Fatal("a refused -o was written")
	}

	eps, _ := rpcCluster(t, 2, "tok")
	if code, stdout, stderr := cli(t, "rpc", "1", "add", "[2,40]", "--endpoints", eps[0], "--token", "tok"); code != 0 || strings.TrimSpace(stdout) != "42" {
		t.Fatalf("rpc 1 add beside rpc gen: exit %d, %q, %q", code, stdout, stderr)
	}
}
