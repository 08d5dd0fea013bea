// Command sweeps prints a go test -run pattern that selects, in the
// package directories given, the tests shortened or skipped under the
// race detector: those that reach, through their package's own
// declarations, simtest.Seeds, simtest.NotUnderRace or raceEnabled. CI
// runs them in full without the race detector, after the race run of
// everything (a name that also names another package's test runs that
// one too, which is harmless).
//
// Usage: go run ./.ci/sweeps DIR... prints "^(TestA|TestB|...)$".
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sweeps DIR...")
		os.Exit(2)
	}
	seen := map[string]bool{}
	var all []string
	for _, dir := range os.Args[1:] {
		tests, err := sweepTests(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sweeps:", err)
			os.Exit(1)
		}
		for _, t := range tests {
			if !seen[t] {
				seen[t] = true
				all = append(all, t)
			}
		}
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "sweeps: no test in", os.Args[1:], "reaches a marker")
		os.Exit(1)
	}
	sort.Strings(all)
	fmt.Printf("^(%s)$\n", strings.Join(all, "|"))
}

// sweepTests returns the names of dir's Test functions that reach a
// marker, sorted.
func sweepTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	refs := map[string]map[string]bool{} // declaration -> identifiers it names
	marked := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			for _, name := range declNames(d) {
				if refs[name] == nil {
					refs[name] = map[string]bool{}
				}
				ast.Inspect(d, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok && x.Name == "simtest" && (n.Sel.Name == "Seeds" || n.Sel.Name == "NotUnderRace") {
							marked[name] = true
						}
						refs[name][n.Sel.Name] = true // a method or field of the package's own
					case *ast.Ident:
						if n.Name == "raceEnabled" {
							marked[name] = true
						}
						refs[name][n.Name] = true
					}
					return true
				})
			}
		}
	}
	// Everything that names a marked declaration is marked, to a fixed point.
	for changed := true; changed; {
		changed = false
		for name, names := range refs {
			if marked[name] {
				continue
			}
			for ref := range names {
				if ref != name && marked[ref] {
					marked[name], changed = true, true
					break
				}
			}
		}
	}
	var tests []string
	for name := range marked {
		if strings.HasPrefix(name, "Test") && name != "TestMain" {
			tests = append(tests, name)
		}
	}
	sort.Strings(tests)
	return tests, nil
}

// declNames returns the names a top-level declaration declares.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return []string{d.Name.Name}
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			}
		}
		return names
	}
	return nil
}
