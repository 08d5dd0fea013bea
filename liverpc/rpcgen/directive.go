package rpcgen

import (
	"errors"
	"fmt"
	"go/ast"
	"strings"

	"github.com/cohort-go/cohort/rpc"
)

// ErrDirective is wrapped by every error about a //cohort:rpc line.
var ErrDirective = errors.New("bad //cohort:rpc directive")

// directivePrefix starts a directive line: a comment with no space after
// the slashes, as //go:generate, which go/doc leaves out of the
// documentation.
const directivePrefix = "//cohort:rpc"

// directive is what //cohort:rpc lines say about a method, or, on the
// interface, about the methods that say nothing: their semantics (0:
// none said, the client's Options decide).
type directive struct {
	sem rpc.Semantics
}

// parseDirectives reads the //cohort:rpc lines of comment groups into d;
// where names what they are on ("method Bank.Deposit", "interface
// Bank"), for the errors. A line holds key=value options separated by
// spaces; the only key is semantics, whose values are rpc.Semantics'
// names.
func parseDirectives(where string, d *directive, groups ...*ast.CommentGroup) error {
	seen := map[string]bool{}
	for _, cg := range groups {
		if cg == nil {
			continue
		}
		for _, c := range cg.List {
			rest, ok := strings.CutPrefix(c.Text, directivePrefix)
			if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				continue
			}
			opts := strings.Fields(rest)
			if len(opts) == 0 {
				return fmt.Errorf("%s: %s: %w: no options (want semantics=maybe|at-least-once|at-most-once)", where, c.Text, ErrDirective)
			}
			for _, opt := range opts {
				key, value, ok := strings.Cut(opt, "=")
				switch {
				case !ok:
					return fmt.Errorf("%s: %s: %w: option %q: want key=value", where, c.Text, ErrDirective, opt)
				case key != "semantics":
					return fmt.Errorf("%s: %s: %w: unknown option %q (known: semantics)", where, c.Text, ErrDirective, key)
				case seen[key]:
					return fmt.Errorf("%s: %s: %w: option %q given twice", where, c.Text, ErrDirective, key)
				}
				seen[key] = true
				sem, err := rpc.ParseSemantics(value)
				if err != nil {
					return fmt.Errorf("%s: %s: %w: %v", where, c.Text, ErrDirective, err)
				}
				d.sem = sem
			}
		}
	}
	return nil
}

// directives returns the directive of the interface named name (the
// methods' default) and of each of its methods, by name, from its
// declaration in files. The methods of an embedded interface take the
// default (a directive on the embedding is refused: it would be unclear
// whether it is theirs).
func directives(files []*ast.File, name string) (directive, map[string]directive, error) {
	var def directive
	methods := map[string]directive{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || ts.Name.Name != name {
					continue
				}
				docs := []*ast.CommentGroup{ts.Doc, ts.Comment}
				if gd.Lparen == 0 { // type X interface{...}: the comment is the declaration's
					docs = append(docs, gd.Doc)
				}
				if err := parseDirectives("interface "+name, &def, docs...); err != nil {
					return def, nil, err
				}
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok {
					continue
				}
				for _, field := range it.Methods.List {
					if len(field.Names) == 0 {
						var d directive
						if err := parseDirectives("interface "+name+", an embedded interface", &d, field.Doc, field.Comment); err != nil {
							return def, nil, err
						}
						if d != (directive{}) {
							return def, nil, fmt.Errorf("interface %s: %w on an embedded interface: put it on the methods of %s, or on %s", name, ErrDirective, exprString(field.Type), name)
						}
						continue
					}
					for _, n := range field.Names {
						var d directive
						if err := parseDirectives("method "+name+"."+n.Name, &d, field.Doc, field.Comment); err != nil {
							return def, nil, err
						}
						methods[n.Name] = d
					}
				}
			}
		}
	}
	return def, methods, nil
}

// exprString writes an embedded interface's expression: io.Reader, Other.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "it"
}
