package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// phaseName is a backend's own trace step, as the code names it.
var phaseName = regexp.MustCompile(`^(start|close)\.[a-z-]+$`)

// TestPhasesInPackageComment: every trace phase a backend's code names is
// listed in its package comment (where a reader of a trace looks it up),
// and the comment lists none the code does not name.
func TestPhasesInPackageComment(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for _, b := range []string{"docker", "oci", "local"} {
		named, doc := backendPhases(t, filepath.Join(root, b))
		if len(named) == 0 {
			t.Errorf("%s: no trace phase found in its code: the scan is broken", b)
		}
		listed := map[string]bool{}
		for _, w := range strings.FieldsFunc(doc, func(r rune) bool { return r == ' ' || r == '\n' || r == ',' || r == ';' || r == '(' || r == ')' }) {
			if w = strings.TrimSuffix(w, "."); phaseName.MatchString(w) {
				listed[w] = true
			}
		}
		for p := range named {
			if !listed[p] {
				t.Errorf("%s names trace phase %q; its package comment does not list it", b, p)
			}
		}
		for p := range listed {
			if !named[p] {
				t.Errorf("%s's package comment lists trace phase %q, which its code does not name", b, p)
			}
		}
	}
}

// backendPhases reads a backend's non-test sources: the phase names in
// its string literals, and its package comment.
func backendPhases(t *testing.T, dir string) (map[string]bool, string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	named, doc := map[string]bool{}, ""
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && phaseName.MatchString(s) {
					named[s] = true
				}
			}
			return true
		})
	}
	return named, doc
}
