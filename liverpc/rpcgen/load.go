package rpcgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// load parses and type-checks the package of the inputs: one directory,
// or .go files of one directory. The output file, test files and files
// this generator wrote are left out, so that a stale or missing stub
// cannot stop its own regeneration. Type errors elsewhere in the package
// are tolerated (a file may use the stub being generated); an interface
// that mentions a type the checker could not resolve is refused later.
//
// The files are returned too, with their comments, for the directives
// (//cohort:rpc) on the interface and its methods.
func load(inputs []string, output string) (*types.Package, []*ast.File, error) {
	if len(inputs) == 0 {
		return nil, nil, errors.New("no input: want a package directory or .go files")
	}
	var dir string
	var names []string
	if st, err := os.Stat(inputs[0]); err == nil && st.IsDir() {
		if len(inputs) > 1 {
			return nil, nil, fmt.Errorf("input %q: a directory must be the only input", inputs[0])
		}
		dir = inputs[0]
		p, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("input %q: %w", dir, err)
		}
		names = p.GoFiles
	} else {
		for _, in := range inputs {
			if !strings.HasSuffix(in, ".go") {
				return nil, nil, fmt.Errorf("input %q: want a package directory or .go files", in)
			}
			if d := filepath.Dir(in); dir == "" {
				dir = d
			} else if d != dir {
				return nil, nil, fmt.Errorf("input %q: not in %s, the directory of the first file", in, dir)
			}
			names = append(names, filepath.Base(in))
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if name == filepath.Base(output) && output != "" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("input %q: %w", path, err)
		}
		if bytes.HasPrefix(src, []byte(headerPrefix)) {
			continue
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, nil, fmt.Errorf("input: %w", err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("input %q: no Go files to read", strings.Join(inputs, " "))
	}
	exported, err := exportData(dir, files)
	if err != nil {
		return nil, nil, err
	}
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exported[path]
			if !ok || file == "" {
				return nil, fmt.Errorf("no export data for %q", path)
			}
			return os.Open(file)
		}),
		Error: func(error) {}, // tolerated; see above
	}
	pkg, _ := conf.Check(files[0].Name.Name, fset, files, nil)
	return pkg, files, nil
}

// exports caches exportData's answers, by directory and import paths.
var exports struct {
	sync.Mutex
	m map[string]map[string]string
}

// exportData asks the go command for the compiled export data of the
// packages the files import (and theirs), as go/packages does.
func exportData(dir string, files []*ast.File) (map[string]string, error) {
	seen := map[string]bool{}
	var paths []string
	for _, f := range files {
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, "`\"")
			if !seen[p] && p != "C" && p != "unsafe" {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	sort.Strings(paths)
	key := dir + "\x00" + strings.Join(paths, "\x00")
	exports.Lock()
	defer exports.Unlock()
	if m, ok := exports.m[key]; ok {
		return m, nil
	}
	args := append([]string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %v: %s", strings.Join(paths, " "), err, strings.TrimSpace(stderr.String()))
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[path] = file
		}
	}
	if exports.m == nil {
		exports.m = map[string]map[string]string{}
	}
	exports.m[key] = m
	return m, nil
}
