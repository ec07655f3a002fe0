package gate

import (
	"slices"
	"strings"
)

// optionSpec says how a command's options are spelled, for scanOptions.
type optionSpec struct {
	values     string   // short options that take a value: -Xvalue or -X value
	attached   string   // short options whose value is optional and attached only: -i{}
	longValues []string // long options (without --) that take a value: --k=v or --k v
	// posix stops at the first operand: what follows is another command's
	// argv (wrappers). Otherwise options and operands may mix, as in GNU tools.
	posix bool
	// last are short options after which everything is an operand
	// (python -c code args…, python -m module args…).
	last string
}

// option is one option found: name is "-x" or "--long".
type option struct {
	name     string
	value    arg
	hasValue bool
}

// scanOptions splits args into options and operands. A dynamic argument
// counts as an operand; callers that care ask it mayBeOption.
func scanOptions(args []arg, spec optionSpec) (opts []option, operands []arg) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if a.dynamic || a.implicit || t == "-" || !strings.HasPrefix(t, "-") {
			if spec.posix {
				return opts, append(operands, args[i:]...)
			}
			operands = append(operands, a)
			continue
		}
		if t == "--" {
			return opts, append(operands, args[i+1:]...)
		}
		if long, ok := strings.CutPrefix(t, "--"); ok {
			name, value, hasValue := strings.Cut(long, "=")
			o := option{name: "--" + name}
			if hasValue {
				o.value, o.hasValue = literal(value), true
			} else if slices.Contains(spec.longValues, name) && i+1 < len(args) {
				i++
				o.value, o.hasValue = args[i], true
			}
			opts = append(opts, o)
			continue
		}
		cluster := t[1:]
		for k := 0; k < len(cluster); k++ {
			c := cluster[k]
			o := option{name: "-" + string(c)}
			rest := cluster[k+1:]
			switch {
			case strings.IndexByte(spec.values, c) >= 0:
				if rest != "" {
					o.value, o.hasValue = literal(rest), true
				} else if i+1 < len(args) {
					i++
					o.value, o.hasValue = args[i], true
				}
				if strings.IndexByte(spec.last, c) >= 0 {
					return append(opts, o), append(operands, args[i+1:]...)
				}
				k = len(cluster)
			case strings.IndexByte(spec.attached, c) >= 0:
				o.value, o.hasValue = literal(rest), rest != ""
				k = len(cluster)
			}
			opts = append(opts, o)
		}
	}
	return opts, operands
}

// has reports whether any of names ("-f", "--force") was given.
func has(opts []option, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

// values lists the values given to any of names.
func values(opts []option, names ...string) []arg {
	var out []arg
	for _, o := range opts {
		if o.hasValue && slices.Contains(names, o.name) {
			out = append(out, o.value)
		}
	}
	return out
}

// hasPrefixed reports whether a long option starting with prefix was given
// (--force-with-lease, --force-with-lease=main).
func hasPrefixed(opts []option, prefix string) bool {
	for _, o := range opts {
		if strings.HasPrefix(o.name, prefix) {
			return true
		}
	}
	return false
}

// mayHideOption reports whether a dynamic argument could be an option the
// scan could not see: one before any "--" that could start with "-".
func mayHideOption(args []arg) bool {
	for _, a := range args {
		if a.is("--") {
			return false
		}
		if a.dynamic && a.mayBeOption() {
			return true
		}
	}
	return false
}
