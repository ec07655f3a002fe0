package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// hostReads are the calls that read the host's filesystem around the
// recorder (hostread): a compile that made one would read a
// path its record lacks, and a keeper would reuse a policy that path no
// longer gives.
var hostReads = map[string]map[string]bool{
	"os":       {"Stat": true, "Lstat": true, "ReadFile": true, "Open": true, "OpenFile": true, "ReadDir": true, "Readlink": true, "DirFS": true},
	"filepath": {"EvalSymlinks": true, "Glob": true, "Walk": true, "WalkDir": true},
	"unix":     {"Open": true, "Stat": true, "Lstat": true, "Fstatat": true, "Openat": true, "Readlinkat": true, "Access": true, "Faccessat": true},
	"syscall":  {"Open": true, "Stat": true, "Lstat": true, "Readlink": true, "Access": true},
}

// readsAllowed are the functions that may read around the recorder, and why.
var readsAllowed = map[string]string{
	"policy/gocache.go (*GoCachePrepare).Commit": "prepare's commit of a built cache, after the run: no compile",
	"policy/gocache.go removeAllWritable":        "prepare's clean-up: no compile",
	"policy/readdir_linux.go readDir":            "notes the directory (rd.NoteList) before its getdents loop",
	"policy/readdir_other.go readDir":            "notes the directory (rd.NoteList) before reading it",
	"policy/readdir_linux.go parseDirent":        "the type of an entry of the directory readDir noted as listed (its times change with any entry's)",
	"profiles/credname.go LooksLikeSecretValue":  "callers outside a compile; a compile calls LooksLikeSecretValueOn with the recorder",
}

// TestCompileReadsGoThroughTheRecorder: no function of the compiler's
// packages reads the host but through the recorder (readsAllowed
// excepted, each with its reason). TestCompileReadsAreRecorded
// (cmd/triage-sandbox) proves the record complete for the layouts it
// compiles under strace; this covers the code paths they do not take.
func TestCompileReadsGoThroughTheRecorder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		files[i] = filepath.Join("policy", f)
	}
	more, _ := filepath.Glob("../config/*.go")
	for _, f := range more {
		files = append(files, strings.TrimPrefix(f, "../"))
	}
	files = append(files, "sandbox/discover.go", "sandbox/secrets.go", "sandbox/sandbox.go", "profiles/credname.go")
	var found []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		found = append(found, readsIn(t, f)...)
	}
	seen := map[string]bool{}
	for _, where := range found {
		key := where[:strings.LastIndex(where, ": ")]
		seen[key] = true
		if _, ok := readsAllowed[key]; !ok {
			t.Errorf("%s reads the host around the recorder: read through Host.Reads (hostread) or, if it is no part of a compile, add it to readsAllowed with why", where)
		}
	}
	for key := range readsAllowed {
		if !seen[key] {
			t.Errorf("readsAllowed lists %s, which reads nothing around the recorder: remove it", key)
		}
	}
}

// readsIn lists "FILE FUNC: CALL" for each host read in the file
// (relative to the repository root).
func readsIn(t *testing.T, rel string) []string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join("..", rel), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			name = "(" + exprString(fn.Recv.List[0].Type) + ")." + name
		}
		if rel == "sandbox/sandbox.go" && name != "Compile" && name != "Build" {
			continue // the rest of sandbox.go runs after the compile
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if ok && hostReads[pkg.Name][sel.Sel.Name] {
				out = append(out, rel+" "+name+": "+pkg.Name+"."+sel.Sel.Name)
			}
			return true
		})
	}
	return out
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
