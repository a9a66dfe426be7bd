package audit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTypesComplete: every Type… constant declared in the package's source
// is in Types exactly once, so that what reads the list (audit show
// --type, the README) cannot miss a record type a log holds.
func TestTypesComplete(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var declared []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Type") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					declared = append(declared, v)
				}
			}
			return true
		})
	}
	if len(declared) < 10 {
		t.Fatalf("found only %d Type constants in the source: %q", len(declared), declared)
	}
	types := Types()
	for _, d := range declared {
		if n := countOf(types, d); n != 1 {
			t.Errorf("Types() holds %q %d times, want once", d, n)
		}
	}
	if len(types) != len(declared) {
		t.Errorf("Types() = %q, want the %d declared types %q", types, len(declared), declared)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for i := slices.Index(list, s); i >= 0; i = slices.Index(list, s) {
		n++
		list = list[i+1:]
	}
	return n
}
