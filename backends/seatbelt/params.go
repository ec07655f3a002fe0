package seatbelt

import "fmt"

// params allocates the -D parameters: one per distinct path, named by the
// role it was first needed for (READ_0, WRITE_1, DENY_2...), so the
// profile text never holds a host path.
type params struct {
	byValue map[string]string
	values  map[string]string
	counts  map[string]int
	order   []string
}

func newParams() *params {
	return &params{byValue: map[string]string{}, values: map[string]string{}, counts: map[string]int{}}
}

// name returns the parameter holding value, allocating PREFIX_n if new.
func (p *params) name(prefix, value string) string {
	if n, ok := p.byValue[value]; ok {
		return n
	}
	n := fmt.Sprintf("%s_%d", prefix, p.counts[prefix])
	p.counts[prefix]++
	p.byValue[value] = n
	p.values[n] = value
	p.order = append(p.order, n)
	return n
}

// fixed sets a parameter with a chosen name (RUN_DIR, SELF).
func (p *params) fixed(name, value string) string {
	if _, ok := p.values[name]; ok {
		panic("seatbelt: parameter " + name + " set twice")
	}
	p.values[name] = value
	p.order = append(p.order, name)
	if _, ok := p.byValue[value]; !ok {
		p.byValue[value] = name
	}
	return name
}

// flags are the sandbox-exec arguments, in allocation order.
func (p *params) flags() []string {
	var out []string
	for _, n := range p.order {
		out = append(out, "-D", n+"="+p.values[n])
	}
	return out
}
