package selftest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/triage-sandbox/triage-sandbox/output"
)

// WriteHuman prints the report as in the design doc: a header per role,
// one line per check, then a summary.
func WriteHuman(w io.Writer, r *Report) {
	for _, rr := range r.Roles {
		root := "image " + rr.Versions["image"]
		if rr.Versions["image"] == "" {
			root = "host roots"
		}
		fmt.Fprintf(w, "%s sandbox: %s (%s), %s\n", rr.Role, rr.Backend, root, rr.Network)
		if rr.Error != "" {
			fmt.Fprintf(w, "  FAIL  the selftest could not run: %s\n", rr.Error)
			continue
		}
		for _, res := range rr.Results {
			fmt.Fprintf(w, "  %-5s %-7s %-50s %-8s %s\n", statusWord(res.Status), res.ID, res.Name, res.Observed, oneLine(res.Evidence, 100))
			if res.Status != StatusOK {
				if res.Control != "" {
					fmt.Fprintf(w, "        control (outside the sandbox): %s\n", oneLine(res.Control, 100))
				}
				if res.Fix != "" && res.Status == StatusFail {
					fmt.Fprintf(w, "        fix: %s\n", res.Fix)
				}
			}
		}
		ok, failed, inc := rr.Counts()
		na := ""
		if n := rr.NotApplicable(); n > 0 {
			na = fmt.Sprintf(", %d not applicable", n)
		}
		fmt.Fprintf(w, "%d checks: %d ok, %d failed, %d inconclusive%s (policy %s) in %.1fs\n",
			len(rr.Results), ok, failed, inc, na, rr.PolicyHash, rr.Duration.Seconds())
		if len(rr.Weakened) > 0 {
			fmt.Fprintf(w, "  WEAKER MODE accepted by the config: the %s backend does not enforce %v\n", rr.Backend, rr.Weakened)
		}
		if rr.ProductionHash != "" {
			fmt.Fprintf(w, "  the same config for this workspace and caller: policy %s\n", rr.ProductionHash)
		}
		fmt.Fprintf(w, "  versions: %s\n\n", versions(rr.Versions))
	}
	verdict := "PASSED: the sandbox held"
	if !r.Passed() {
		verdict = "FAILED: do not enable agents on public issues until every check is ok"
	}
	fmt.Fprintf(w, "selftest %s (%.1fs)\n", verdict, r.Duration.Seconds())
}

func statusWord(s string) string {
	if s == StatusInconclusive {
		return "INCON"
	}
	return s
}

func versions(v map[string]string) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+v[k])
	}
	return strings.Join(parts, " ")
}

// oneLine shows evidence (which may quote what the sandbox wrote) on one
// line: C0 controls as spaces, the rest through the neutraliser the
// command's output gets (C1 controls, bidirectional overrides), capped at
// n bytes on a rune boundary.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return output.Line(s)
}

// WriteJSON prints one JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Passed bool `json:"passed"`
	}{r, r.Passed()})
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitFailure `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: a suite per role, a case per check;
// inconclusive checks are errors, failed ones failures.
func WriteJUnit(w io.Writer, r *Report) error {
	var out junitSuites
	for _, rr := range r.Roles {
		s := junitSuite{Name: "triage-sandbox selftest " + string(rr.Role) + " (" + rr.Backend + ")", Time: rr.Duration.Seconds()}
		if rr.Error != "" {
			s.Cases = append(s.Cases, junitCase{Name: "selftest runs", Classname: string(rr.Role),
				Error: &junitFailure{Message: rr.Error}})
			s.Errors++
		}
		for _, res := range rr.Results {
			c := junitCase{Name: res.ID + " " + res.Name, Classname: string(rr.Role) + "." + res.Category,
				SystemOut: "expected " + string(res.Expected) + ", observed " + res.Observed + ": " + res.Evidence}
			msg := res.Evidence
			if res.Control != "" {
				msg += " | control: " + res.Control
			}
			switch res.Status {
			case StatusFail:
				c.Failure = &junitFailure{Message: "expected " + string(res.Expected) + ", observed " + res.Observed, Text: msg + "\nfix: " + res.Fix}
				s.Failures++
			case StatusInconclusive:
				c.Error = &junitFailure{Message: "inconclusive", Text: msg}
				s.Errors++
			case StatusNotApplicable:
				c.Skipped = &junitFailure{Message: "not applicable", Text: msg}
				s.Skipped++
			}
			s.Cases = append(s.Cases, c)
		}
		s.Tests = len(s.Cases)
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	return enc.Encode(out)
}
