package rpcgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The checked-in stub of the example is what the generator writes now:
// the generator and the stub cannot drift apart. (After a change to the
// generator: go generate ./liverpc/rpcgen/bank.)
func TestBankStubIsUpToDate(t *testing.T) {
	want, err := os.ReadFile("bank/bank_rpc.go")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Generate(Config{Type: "Bank", Inputs: []string{"bank"}, Output: "bank_rpc.go"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bank/bank_rpc.go differs from what the generator writes (run go generate ./liverpc/rpcgen/bank):\n%s", firstDiff(got, want))
	}
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.\n`).Match(got) {
		t.Fatalf("the stub does not start with the generated-code line: %q", got[:min(80, len(got))])
	}
	// The same bytes again, and from the file rather than the directory
	// (the checked-in stub, if read, would be left out).
	for _, inputs := range [][]string{{"bank"}, {"bank/bank.go"}, {"bank/bank.go", "bank/bank_rpc.go"}} {
		again, err := Generate(Config{Type: "Bank", Inputs: inputs, Output: "bank_rpc.go"})
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("inputs %q: a different stub (%v):\n%s", inputs, err, firstDiff(again, got))
		}
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + bl[i] + "\n+ " + al[i]
		}
	}
	return "lengths " + strconv.Itoa(len(al)) + " and " + strconv.Itoa(len(bl)) + " lines"
}

// The stub of an interface whose parameters are named after everything
// the stub uses (types, packages, its own variables), unnamed, or of
// anonymous structs and other packages' types compiles: the package
// builds with it.
func TestStubAvoidsNameCollisions(t *testing.T) {
	src, err := Generate(Config{Type: "service", Inputs: []string{"testdata/names"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "names_rpc.go")
	if err := os.WriteFile(stub, src, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("testdata/names/names_rpc.go")
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: stub}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "-overlay", filepath.Join(dir, "overlay.json"), "./testdata/names")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the package does not build with its stub: %v\n%s\n%s", err, out, src)
	}
}

// Each signature the generator cannot make a stub of is refused with an
// error that names the method, the value and its type.
func TestUnsupportedSignatures(t *testing.T) {
	cases := []struct{ method, want string }{
		{"M(ctx context.Context, x map[string]int) error", "method I.M, parameter x: type map[string]int: unsupported: maps"},
		{"M(ctx context.Context, x *int) error", "method I.M, parameter x: type *int: unsupported: pointers"},
		{"M(ctx context.Context, x chan int) error", "method I.M, parameter x: type chan int: unsupported: channels"},
		{"M(ctx context.Context, x func()) error", "method I.M, parameter x: type func(): unsupported: functions"},
		{"M(ctx context.Context, x any) error", "method I.M, parameter x: type any: unsupported: interfaces"},
		{"M(ctx context.Context, x [4]int) error", "method I.M, parameter x: type [4]int: unsupported: arrays"},
		{"M(ctx context.Context, x complex128) error", "method I.M, parameter x: type complex128: unsupported: complex"},
		{"M(ctx context.Context, x uintptr) error", "method I.M, parameter x: type uintptr: unsupported: uintptr cannot"},
		{"M(ctx context.Context, ok bool, x hidden) error", "method I.M, parameter x: type hidden: unsupported: unexported field secret"},
		{"M(ctx context.Context, x withMap) error", "method I.M, parameter x: type withMap: unsupported: field M: maps"},
		{"M(ctx context.Context, x node) error", "method I.M, parameter x: type node: unsupported: field Kids: recursive type node"},
		{"M(ctx context.Context, x []struct{}) error", "method I.M, parameter x: type []struct{}: unsupported: its elements encode to no bytes"},
		{"M(ctx context.Context, x []myByte) error", "method I.M, parameter x: type []myByte: unsupported: a slice of a named byte type"},
		{"M(ctx context.Context, x box[int]) error", "method I.M, parameter x: type box[int]: unsupported: instances of generic types"},
		{"M(ctx context.Context, x nowhere.T) error", "method I.M, parameter x: type invalid type: unsupported: the type does not type-check"},
		{"M(context.Context, int, chan int) error", "method I.M, parameter 2: type chan int: unsupported"},
		{"M(ctx context.Context) (map[int]int, error)", "method I.M, result 0: type map[int]int: unsupported"},
		{"M(ctx context.Context) (n int, p *int, err error)", "method I.M, result p: type *int: unsupported"},
		{"M(x int) error", "method I.M: type func(x int) error: unsupported: the first parameter must be a context.Context"},
		{"M() error", "method I.M: type func() error: unsupported: the first parameter must be a context.Context"},
		{"M(ctx context.Context) int", "method I.M: type func(ctx context.Context) int: unsupported: the last result must be an error"},
		{"M(ctx context.Context, xs ...int) error", "method I.M: type func(ctx context.Context, xs ...int) error: unsupported: variadic"},
	}
	var decls strings.Builder
	for i, c := range cases {
		fmt.Fprintf(&decls, "type I%d interface {\n\tOK(ctx context.Context) error\n\t%s\n}\n", i, c.method)
	}
	dir := writePackage(t, decls.String())
	for i, c := range cases {
		name := fmt.Sprintf("I%d", i)
		_, err := Generate(Config{Type: name, Inputs: []string{dir}})
		want := strings.Replace(c.want, "I.M", name+".M", 1)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: err = %v\nwant an UnsupportedError starting %q", c.method, err, want)
		}
	}
}

// writePackage writes package p, with decl and the types the cases use,
// to a new directory.
func writePackage(t *testing.T, decl string) string {
	t.Helper()
	dir := t.TempDir()
	src := `package p

import (
	"context"
	"image"
)

type hidden struct{ Shown, secret int }
type withMap struct{ M map[string]int }
type node struct{ V int; Kids []node }
type myByte byte
type box[T any] struct{ V T }
type S struct{ A int }
type G[T any] interface{ M(context.Context, T) error }
type Empty interface{}
type Taken interface{ M(context.Context, int) error }
func appendTakenMArgs() {}
type ImagePoint struct{ A int }
type Twice interface{ M(context.Context, ImagePoint, image.Point) error }

` + decl
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Bad input other than a method: each error names what is wrong.
func TestBadInput(t *testing.T) {
	dir := writePackage(t, "")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Type: "Nope", Inputs: []string{dir}}, "--type Nope: no such type in package p"},
		{Config{Type: "S", Inputs: []string{dir}}, "--type S: struct{A int} is not an interface"},
		{Config{Type: "G", Inputs: []string{dir}}, "--type G: a generic interface has no stub"},
		{Config{Type: "Empty", Inputs: []string{dir}}, "--type Empty: the interface has no methods"},
		{Config{Type: "a-b", Inputs: []string{dir}}, `--type "a-b": want the name of an interface type`},
		{Config{Type: "S", Inputs: []string{filepath.Join(dir, "none")}}, "none"},
		{Config{Type: "S", Inputs: []string{filepath.Join(dir, "p.txt")}}, `p.txt": want a package directory or .go files`},
		{Config{Type: "S", Inputs: []string{dir, dir}}, "a directory must be the only input"},
		{Config{Type: "S"}, "no input"},
		{Config{Type: "Taken", Inputs: []string{dir}}, "the stub declares appendTakenMArgs, a name already taken in package p"},
		{Config{Type: "Twice", Inputs: []string{dir}}, "types ImagePoint and image.Point would both have the functions appendImagePoint"},
	} {
		if _, err := Generate(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v; want it to say %q", c.cfg, err, c.want)
		}
	}
}
