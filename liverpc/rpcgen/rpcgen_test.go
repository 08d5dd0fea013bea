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
	if out, err := withStub(t, src, "testdata/names/names_rpc.go", "vet"); err != nil {
		t.Fatalf("the package does not build with its stub: %v\n%s\n%s", err, out, src)
	}
}

// Values that nest pointers, maps, slices and structs in one another, as
// deep as a package would write them, survive the stub's encoder and
// decoder: random values of each argument and result round-trip, and
// re-encode to the same bytes (testdata/shapes' tests, run with its
// stub).
func TestNestedShapesRoundTrip(t *testing.T) {
	src, err := Generate(Config{Type: "Shapes", Inputs: []string{"testdata/shapes"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := withStub(t, src, "testdata/shapes/shapes_rpc.go", "test", "-count=1"); err != nil {
		t.Fatalf("testdata/shapes fails with its stub: %v\n%s\n%s", err, out, src)
	}
}

// withStub runs the go command (go vet, go test) on the package of the
// stub path, with src as the stub's content (an overlay).
func withStub(t *testing.T, src []byte, path string, args ...string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	stub := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(stub, src, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: stub}})
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, "-overlay", filepath.Join(dir, "overlay.json"), "./"+filepath.Dir(path))
	return exec.Command("go", args...).CombinedOutput()
}

// Each signature the generator cannot make a stub of is refused with an
// error that names the method, the value and its type.
func TestUnsupportedSignatures(t *testing.T) {
	cases := []struct{ method, want string }{
		{"M(ctx context.Context, x map[float64]int) error", "method I.M, parameter x: type map[float64]int: unsupported: map keys of floats"},
		{"M(ctx context.Context, x map[bool]int) error", "method I.M, parameter x: type map[bool]int: unsupported: map keys must be integers or strings"},
		{"M(ctx context.Context, x map[S]int) error", "method I.M, parameter x: type map[S]int: unsupported: map keys must be integers or strings"},
		{"M(ctx context.Context, x map[*int]int) error", "method I.M, parameter x: type map[*int]int: unsupported: map keys must be integers or strings"},
		{"M(ctx context.Context, x map[string]chan int) error", "method I.M, parameter x: type map[string]chan int: unsupported: channels"},
		{"M(ctx context.Context, x *func()) error", "method I.M, parameter x: type *func(): unsupported: functions"},
		{"M(ctx context.Context, x deep) error", "method I.M, parameter x: type deep: unsupported: pointers, slices and maps nested more than 100 deep"},
		{"M(ctx context.Context, x list) error", "method I.M, parameter x: type list: unsupported: field Next: recursive type list"},
		{"M(ctx context.Context, x chan int) error", "method I.M, parameter x: type chan int: unsupported: channels"},
		{"M(ctx context.Context, x func()) error", "method I.M, parameter x: type func(): unsupported: functions"},
		{"M(ctx context.Context, x any) error", "method I.M, parameter x: type any: unsupported: interfaces"},
		{"M(ctx context.Context, x [4]int) error", "method I.M, parameter x: type [4]int: unsupported: arrays"},
		{"M(ctx context.Context, x complex128) error", "method I.M, parameter x: type complex128: unsupported: complex"},
		{"M(ctx context.Context, x uintptr) error", "method I.M, parameter x: type uintptr: unsupported: uintptr cannot"},
		{"M(ctx context.Context, ok bool, x hidden) error", "method I.M, parameter x: type hidden: unsupported: unexported field secret"},
		{"M(ctx context.Context, x withMap) error", "method I.M, parameter x: type withMap: unsupported: field M: map keys of floats"},
		{"M(ctx context.Context, x node) error", "method I.M, parameter x: type node: unsupported: field Kids: recursive type node"},
		{"M(ctx context.Context, x []struct{}) error", "method I.M, parameter x: type []struct{}: unsupported: its elements encode to no bytes"},
		{"M(ctx context.Context, x []myByte) error", "method I.M, parameter x: type []myByte: unsupported: a slice of a named byte type"},
		{"M(ctx context.Context, x box[int]) error", "method I.M, parameter x: type box[int]: unsupported: instances of generic types"},
		{"M(ctx context.Context, x nowhere.T) error", "method I.M, parameter x: type invalid type: unsupported: the type does not type-check"},
		{"M(context.Context, int, chan int) error", "method I.M, parameter 2: type chan int: unsupported"},
		{"M(ctx context.Context) (map[int]any, error)", "method I.M, result 0: type map[int]any: unsupported: interfaces"},
		{"M(ctx context.Context) (n int, p *[2]int, err error)", "method I.M, result p: type *[2]int: unsupported: arrays"},
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
type withMap struct{ M map[float32]int }
type list struct{ V int; Next *list }
type deep [][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][]**************************************************map[string]int
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

// A //cohort:rpc semantics= line on a method fixes the semantics its
// client stub calls with; on the interface, that of the methods that
// declare none; without any, the client's Options decide (and the stub
// does not import package rpc).
func TestDeclaredSemantics(t *testing.T) {
	dir := writePackage(t, `
// D has a default.
//
//cohort:rpc semantics=at-most-once
type D interface {
	A(ctx context.Context) error
	//cohort:rpc semantics=maybe
	B(ctx context.Context) error
	C(ctx context.Context) error //cohort:rpc semantics=at-least-once
	// cohort:rpc semantics=maybe is prose, not a directive (a space).
	E(ctx context.Context) error
}

type (
	// P is declared in a group.
	//cohort:rpc semantics=maybe
	P interface{ A(ctx context.Context) error }
)

type N interface {
	A(ctx context.Context) error
}
`)
	for _, c := range []struct {
		iface string
		want  map[string]string // method → the semantics its stub sets, or "" for none
	}{
		{"D", map[string]string{"A": "AtMostOnce", "B": "Maybe", "C": "AtLeastOnce", "E": "AtMostOnce"}},
		{"P", map[string]string{"A": "Maybe"}},
		{"N", map[string]string{"A": ""}},
	} {
		src, err := Generate(Config{Type: c.iface, Inputs: []string{dir}})
		if err != nil {
			t.Fatalf("%s: %v", c.iface, err)
		}
		for m, sem := range c.want {
			body := regexp.MustCompile(`(?s)func \(c \*` + c.iface + `Client\) ` + m + `\(.*?\n}\n`).Find(src)
			set := regexp.MustCompile(`o.Sem = rpc\.(\w+)`).FindSubmatch(body)
			switch {
			case sem == "" && (set != nil || !bytes.Contains(body, []byte(", c.Options)"))):
				t.Errorf("%s.%s declares no semantics, but its stub sets them:\n%s", c.iface, m, body)
			case sem != "" && (set == nil || string(set[1]) != sem):
				t.Errorf("%s.%s: want its stub to call with rpc.%s:\n%s", c.iface, m, sem, body)
			}
		}
		if imports := bytes.Contains(src, []byte(`"github.com/cohort-go/cohort/rpc"`)); imports != (c.iface != "N") {
			t.Errorf("%s: imports package rpc: %v", c.iface, imports)
		}
	}
}

// A directive that is not understood is refused, naming the value, the
// option, and the method or interface it is on.
func TestBadDirectives(t *testing.T) {
	cases := []struct{ decl, want string }{
		{"type I interface {\n\t//cohort:rpc semantics=exactly-once\n\tM(ctx context.Context) error\n}",
			`method I.M: //cohort:rpc semantics=exactly-once: bad //cohort:rpc directive: unknown semantics "exactly-once" (known: maybe, at-least-once, at-most-once)`},
		{"//cohort:rpc semantics=once\ntype I interface {\n\tM(ctx context.Context) error\n}",
			`interface I: //cohort:rpc semantics=once: bad //cohort:rpc directive: unknown semantics "once"`},
		{"type I interface {\n\tM(ctx context.Context) error //cohort:rpc semantics=At-Most-Once\n}",
			`method I.M: //cohort:rpc semantics=At-Most-Once: bad //cohort:rpc directive: unknown semantics "At-Most-Once"`},
		{"type I interface {\n\t//cohort:rpc retries=3\n\tM(ctx context.Context) error\n}",
			`method I.M: //cohort:rpc retries=3: bad //cohort:rpc directive: unknown option "retries" (known: semantics)`},
		{"type I interface {\n\t//cohort:rpc semantics\n\tM(ctx context.Context) error\n}",
			`method I.M: //cohort:rpc semantics: bad //cohort:rpc directive: option "semantics": want key=value`},
		{"type I interface {\n\t//cohort:rpc\n\tM(ctx context.Context) error\n}",
			`method I.M: //cohort:rpc: bad //cohort:rpc directive: no options`},
		{"type I interface {\n\t//cohort:rpc semantics=maybe semantics=at-most-once\n\tM(ctx context.Context) error\n}",
			`method I.M: //cohort:rpc semantics=maybe semantics=at-most-once: bad //cohort:rpc directive: option "semantics" given twice`},
		{"type I interface {\n\t//cohort:rpc semantics=maybe\n\tTaken\n}",
			`interface I: bad //cohort:rpc directive on an embedded interface: put it on the methods of Taken, or on I`},
	}
	for _, c := range cases {
		dir := writePackage(t, c.decl)
		_, err := Generate(Config{Type: "I", Inputs: []string{dir}})
		if !errors.Is(err, ErrDirective) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\nerr = %v\nwant %q", c.decl, err, c.want)
		}
	}
}
