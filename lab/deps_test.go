package lab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cohort-go/cohort/"

// algorithmPackages hold state machines; every family package goes here.
var algorithmPackages = []string{"logical", "clock", "mutex", "election", "multicast", "consensus", "epidemic", "overlay", "snapshot", "deadlock", "synchronizer", "rpc"}

// What each layer may import from the module (standard library aside).
var allowed = map[string][]string{
	"proc":             {},
	"logical":          {"proc"},
	"clock":            {"proc", "logical"},
	"mutex":            {"proc", "logical"},
	"election":         {"proc"},
	"multicast":        {"proc", "logical"},
	"consensus":        {"proc"},
	"epidemic":         {"proc"},
	"overlay":          {"proc"},
	"snapshot":         {"proc"},
	"deadlock":         {"proc"},
	"synchronizer":     {"proc", "election"},
	"rpc":              {"proc"},
	"sim":              {"proc", "trace", "logical"},
	"trace":            {"proc", "logical"},
	"check":            {"trace", "proc", "logical", "clock", "overlay", "globalstate"},
	"globalstate":      {"trace", "internal/suggest"},
	"scenario":         {"proc", "sim", "internal/suggest"},
	"internal/suggest": {},
	"registry":         {"proc", "clock", "mutex", "election", "multicast", "consensus", "epidemic", "overlay", "snapshot", "deadlock", "synchronizer", "rpc"},
	"wire":             {"proc"},
	"ntp":              {},
	"position":         {},
	"viewer":           {"trace"},
}

// Standard packages a state machine must not use: they would make a run
// depend on the machine, the scheduler or the wall clock.
var forbiddenInAlgorithms = []string{"net", "net/http", "os", "os/exec", "sync", "sync/atomic", "math/rand", "math/rand/v2", "crypto/rand", "runtime", "unsafe", "syscall"}

// Functions of package time that read or wait on the wall clock.
var forbiddenTime = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", dir))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join("..", dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func TestDependencyRules(t *testing.T) {
	for pkg, ok := range allowed {
		for _, f := range parseDir(t, pkg) {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, in := strings.CutPrefix(path, module); in && !slices.Contains(ok, rest) {
					t.Errorf("%s imports %s: the layering allows only %v", pkg, rest, ok)
				}
			}
		}
	}
}

// nondeterminism lists what in a state machine's source could make a run
// depend on the machine, the scheduler or the wall clock. (Iterating a map
// without sorting its keys is the one such hazard a syntactic check cannot
// see; it is left to review.)
func nondeterminism(f *ast.File) []string {
	var found []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if slices.Contains(forbiddenInAlgorithms, path) {
			found = append(found, "import "+path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = append(found, "go statement")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && slices.Contains(forbiddenTime, n.Sel.Name) {
				found = append(found, "time."+n.Sel.Name)
			}
		}
		return true
	})
	return found
}

func TestAlgorithmsAreDeterministicStateMachines(t *testing.T) {
	for _, pkg := range algorithmPackages {
		for _, f := range parseDir(t, pkg) {
			for _, v := range nondeterminism(f) {
				t.Errorf("%s: %s: algorithms use Env for time, randomness and I/O, and never start goroutines", pkg, v)
			}
		}
	}
}

// The rule must catch what it forbids.
func TestDeterminismRuleCatchesViolations(t *testing.T) {
	src := `package bad
import ("time"; "sync")
var mu sync.Mutex
func f() { go f(); _ = time.Now(); _ = time.Duration(1) }`
	f, err := parser.ParseFile(token.NewFileSet(), "bad.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(nondeterminism(f), ", "); got != "import sync, go statement, time.Now" {
		t.Errorf("found %q, want import sync, go statement, time.Now", got)
	}
}

// The live path — the registry, the node host and the services — reaches no
// part of the simulator or of this harness: a live node does not carry the
// simulator, and the simulator's changes cannot break a running service.
func TestLivePathImportsNoSimulator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"registry", module+"live", module+"lock", module+"leader", module+"group", module+"node").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(dep, module)
		if ok && slices.Contains([]string{"sim", "lab", "scenario", "check"}, rest) {
			t.Errorf("the live path imports %s", rest)
		}
	}
}
