package config

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// fieldOf returns the name of the struct field a key stores its value in.
func fieldOf[S any](t *testing.T, k keySpec[S]) string {
	t.Helper()
	var s S
	addr := reflect.ValueOf(k.field(&s)).Pointer()
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if v.Field(i).Addr().Pointer() == addr {
			return v.Type().Field(i).Name
		}
	}
	t.Fatalf("key %s stores its value outside %T", k.name, s)
	return ""
}

// checkKeys fails when a field of S has no key, two keys share a field or a
// name, or a key's documentation cannot be a README table cell.
func checkKeys[S any](t *testing.T, keys []keySpec[S]) {
	t.Helper()
	byField := map[string]string{}
	names := map[string]bool{}
	for _, k := range keys {
		if names[k.name] {
			t.Errorf("key %s is in the table twice", k.name)
		}
		names[k.name] = true
		f := fieldOf(t, k)
		if other, ok := byField[f]; ok {
			t.Errorf("keys %s and %s both store %s", other, k.name, f)
		}
		byField[f] = k.name
		if k.doc == "" || strings.ContainsAny(k.doc, "|\n") || k.example == "" {
			t.Errorf("key %s: doc %q and example %q must be one line without |", k.name, k.doc, k.example)
		}
	}
	typ := reflect.TypeFor[S]()
	for i := range typ.NumField() {
		if _, ok := byField[typ.Field(i).Name]; !ok {
			t.Errorf("%s.%s has no key in the table", typ.Name(), typ.Field(i).Name)
		}
	}
}

func TestKeysCoverStruct(t *testing.T) {
	t.Run("sandbox", func(t *testing.T) { checkKeys(t, sandboxKeys) })
	t.Run("guard", func(t *testing.T) { checkKeys(t, guardKeys) })
	t.Run("mcp", func(t *testing.T) { checkKeys(t, mcpKeys) })
}

// only returns a Sandbox with nothing set but the field k stores, taken from s.
func only(k keySpec[Sandbox], s *Sandbox) Sandbox {
	var out, none Sandbox
	k.merge(&out, &none, s)
	return out
}

// TestEveryKeyParsedAndResolved sets each key in a role table and in
// [sandbox] and checks Resolve returns it, and nothing else, for that role.
func TestEveryKeyParsedAndResolved(t *testing.T) {
	for _, k := range sandboxKeys {
		t.Run(k.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte("[sandbox.agent]\n"+k.name+" = "+k.example+"\n"), "/ws")
			if err != nil {
				t.Fatalf("example %s: %v", k.example, err)
			}
			if reflect.ValueOf(k.field(&f.Agent)).Elem().IsZero() {
				t.Fatalf("%s = %s left %s unset", k.name, k.example, fieldOf(t, k))
			}
			if got, want := f.Resolve(profiles.RoleAgent), only(k, &f.Agent); !reflect.DeepEqual(got, want) {
				t.Errorf("Resolve(agent) differs from the agent table's %s in %v", k.name, differ(got, want))
			}
			if got := f.Resolve(profiles.RoleReproducer); !isZero(got) {
				t.Errorf("Resolve(reproducer) sets %v, want nothing", differ(got, Sandbox{}))
			}

			f, err = Parse("triage.toml", []byte("[sandbox]\n"+k.name+" = "+k.example+"\n"), "/ws")
			if err != nil {
				t.Fatalf("example %s in [sandbox]: %v", k.example, err)
			}
			for _, role := range []profiles.Role{profiles.RoleAgent, profiles.RoleReproducer, "other"} {
				if got, want := f.Resolve(role), only(k, &f.Sandbox); isZero(got) || !reflect.DeepEqual(got, want) {
					t.Errorf("Resolve(%s) differs from [sandbox]'s %s in %v", role, k.name, differ(got, want))
				}
			}
		})
	}
	for _, k := range guardKeys {
		t.Run("guard."+k.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte("[sandbox.guard]\n"+k.name+" = "+k.example+"\n"), "/ws")
			if err != nil {
				t.Fatalf("example %s: %v", k.example, err)
			}
			if reflect.ValueOf(k.field(&f.Guard)).Elem().IsZero() {
				t.Fatalf("%s = %s left %s unset", k.name, k.example, fieldOf(t, k))
			}
		})
	}
	for _, k := range mcpKeys {
		t.Run("mcp."+k.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte("[sandbox.mcp]\n"+k.name+" = "+k.example+"\n"), "/ws")
			if err != nil {
				t.Fatalf("example %s: %v", k.example, err)
			}
			if reflect.ValueOf(k.field(&f.MCP)).Elem().IsZero() {
				t.Fatalf("%s = %s left %s unset", k.name, k.example, fieldOf(t, k))
			}
		})
	}
}

// fill sets every field of s to a value derived from seed.
func fill(s *Sandbox, seed int) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			setScalar(p.Elem(), seed)
			f.Set(p)
		case reflect.Slice:
			l := reflect.MakeSlice(f.Type(), 1, 1)
			setScalar(l.Index(0), seed)
			f.Set(l)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			key, val := reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem()
			setScalar(key, seed)
			setScalar(val, seed)
			m.SetMapIndex(key, val)
			f.Set(m)
		default:
			panic("no fill for " + f.Type().String())
		}
	}
}

func setScalar(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("v", seed))
	case reflect.Bool:
		v.SetBool(seed%2 == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.Slice {
				l := reflect.MakeSlice(f.Type(), 1, 1)
				setScalar(l.Index(0), seed)
				f.Set(l)
				continue
			}
			setScalar(f, seed)
		}
	default:
		panic("no value for " + v.Type().String())
	}
}

// differ names the fields of a and b that hold different values.
func differ(a, b Sandbox) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// sharesMemory names the fields of a and b that point at the same memory.
func sharesMemory(a, b *Sandbox) []string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var shared []string
	for i := range va.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		if !fa.IsNil() && !fb.IsNil() && fa.Pointer() == fb.Pointer() {
			shared = append(shared, va.Type().Field(i).Name)
		}
	}
	return shared
}

// TestResolveEveryField: with every field set in [sandbox] and in the role
// table, the role's values win; with the role table empty, [sandbox]'s
// show through; and the result shares no memory with the File.
func TestResolveEveryField(t *testing.T) {
	f := &File{}
	fill(&f.Sandbox, 1)
	fill(&f.Agent, 2)
	if got := f.Resolve(profiles.RoleAgent); !reflect.DeepEqual(got, f.Agent) {
		t.Errorf("Resolve(agent) differs from the agent table in %v", differ(got, f.Agent))
	} else if s := sharesMemory(&got, &f.Agent); len(s) > 0 {
		t.Errorf("Resolve(agent) shares %v with the agent table", s)
	}
	for _, role := range []profiles.Role{profiles.RoleReproducer, "other"} {
		got := f.Resolve(role)
		if !reflect.DeepEqual(got, f.Sandbox) {
			t.Errorf("Resolve(%s) differs from [sandbox] in %v", role, differ(got, f.Sandbox))
		}
		if s := sharesMemory(&got, &f.Sandbox); len(s) > 0 {
			t.Errorf("Resolve(%s) shares %v with [sandbox]", role, s)
		}
	}
}

// readmeKeys returns the README's key table: the first cell (without its
// backquotes) to the second.
func readmeKeys(t *testing.T) map[string]string {
	t.Helper()
	file, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	rows := map[string]string{}
	in := false
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "| key | meaning | default |":
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			if len(cells) != 3 {
				t.Fatalf("README key table row %q has %d cells, want 3", line, len(cells))
			}
			key := strings.Trim(strings.TrimSpace(cells[0]), "`")
			if _, dup := rows[key]; dup {
				t.Errorf("README key table has %s twice", key)
			}
			rows[key] = strings.TrimSpace(cells[1])
		case in:
			return rows
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !in {
		t.Fatal("README.md has no | key | meaning | default | table")
	}
	return rows
}

// TestREADMEKeyTable: the README has a row for every key, with the key's
// doc as its meaning, and no row for a key the tables do not have.
func TestREADMEKeyTable(t *testing.T) {
	rows := readmeKeys(t)
	type entry struct{ key, doc string }
	var keys []entry
	for _, k := range sandboxKeys {
		keys = append(keys, entry{k.name, k.doc})
	}
	for _, k := range guardKeys {
		keys = append(keys, entry{"[sandbox.guard] " + k.name, k.doc})
	}
	for _, k := range mcpKeys {
		keys = append(keys, entry{"[sandbox.mcp] " + k.name, k.doc})
	}
	want := map[string]bool{}
	for _, e := range keys {
		want[e.key] = true
		got, ok := rows[e.key]
		switch {
		case !ok:
			t.Errorf("README key table has no row for %s; add:\n| `%s` | %s | ... |", e.key, e.key, e.doc)
		case got != e.doc:
			t.Errorf("README meaning of %s differs from its doc in keys.go:\n README: %s\nkeys.go: %s", e.key, got, e.doc)
		}
	}
	for key := range rows {
		// [project] and [repro] belong to the harness; only the few keys
		// the sandbox reads are listed.
		if !want[key] && !strings.HasPrefix(key, "[project] ") && !strings.HasPrefix(key, "[repro] ") {
			t.Errorf("README key table lists %s, which is not a key", key)
		}
	}
}

// TestBackendsFromCaller: the names the caller passes are the ones accepted
// and listed.
func TestBackendsFromCaller(t *testing.T) {
	o := Options{Backends: []string{"alpha", "beta"}}
	f, err := o.Parse("triage.toml", []byte("[sandbox]\nbackend = \"beta\"\n"), "/ws")
	if err != nil || *f.Sandbox.Backend != "beta" {
		t.Fatalf("Parse = %+v, %v; want backend beta", f, err)
	}
	_, err = o.Parse("triage.toml", []byte("[sandbox.agent]\nbackend = \"docker\"\n"), "/ws")
	want := `triage.toml:2: sandbox.agent.backend: unknown backend "docker"; use one of "alpha", "beta"`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	path := t.TempDir() + "/triage.toml"
	if err := os.WriteFile(path, []byte("[sandbox]\nbackend = \"alpha\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := o.Load(path); err != nil || *f.Sandbox.Backend != "alpha" {
		t.Errorf("Load = %+v, %v; want backend alpha", f, err)
	}
	// Without names (a caller that does not know the registry) any name
	// passes here: the registry refuses an unknown one when it is made.
	if f, err := Load(path); err != nil || *f.Sandbox.Backend != "alpha" {
		t.Errorf("Load without names = %+v, %v; want the name kept for the registry to judge", f, err)
	}
}
