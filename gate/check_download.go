package gate

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// noteDownload remembers the files a downloader writes (curl -o/-O,
// wget -O or its default name, > file), so that running one later in the
// same command line is judged as running a download.
func (j *judge) noteDownload(l layer, stmt *syntax.Stmt) {
	var files []string
	switch l.name {
	case "curl":
		opts, ops := scanOptions(l.args[1:], optionSpec{values: "XdFTHuoAeEKbcwrmyYz", longValues: []string{
			"request", "data", "data-raw", "data-binary", "header", "user", "output", "user-agent", "referer",
			"cookie", "cookie-jar", "config", "max-time", "connect-timeout", "url", "retry", "output-dir"}})
		for _, o := range values(opts, "-o", "--output") {
			files = append(files, o.text)
		}
		if has(opts, "-O", "--remote-name", "--remote-name-all") {
			for _, u := range ops {
				files = append(files, path.Base(u.text))
			}
		}
	case "wget", "wget2":
		opts, ops := scanOptions(l.args[1:], optionSpec{values: "OoaePt", longValues: []string{"output-document", "directory-prefix"}})
		if out := values(opts, "-O", "--output-document"); len(out) > 0 {
			files = append(files, out[len(out)-1].text)
		} else {
			for _, u := range ops {
				files = append(files, path.Base(u.text))
			}
		}
	default:
		opts, _ := scanOptions(l.args[1:], optionSpec{values: "o", longValues: []string{"output", "out"}})
		for _, o := range values(opts, "-o", "--output", "--out") {
			files = append(files, o.text)
		}
	}
	if stmt != nil {
		for _, r := range stmt.Redirs {
			if (r.Op == syntax.RdrOut || r.Op == syntax.AppOut || r.Op == syntax.RdrClob) && r.Word != nil {
				files = append(files, wordArg(r.Word).text)
			}
		}
	}
	for _, f := range files {
		if f != "" && f != "-" && f != "/dev/null" {
			j.noteWritten(literal(f))
			if j.downloaded == nil {
				j.downloaded = map[string]bool{}
			}
			j.downloaded[path.Clean(f)] = true
		}
	}
}

// checkRunDownloaded judges running a file downloaded earlier in the same
// command line: as a script (bash x.sh, python3 x.py, source x.sh) or as
// the command itself (./x.sh).
func checkRunDownloaded(c Invocation) (finding, bool) {
	if c.dynamic() {
		return finding{}, false
	}
	if why := remoteCode(c.layer); why != "" {
		return found(why)
	}
	if len(c.downloaded) == 0 {
		return finding{}, false
	}
	was := func(a arg) bool { return !a.dynamic && c.downloaded[path.Clean(a.text)] }
	if strings.Contains(c.args[0].text, "/") && was(c.args[0]) || c.downloaded[c.args[0].text] && strings.HasPrefix(c.args[0].text, ".") {
		return found(c.args[0].text + " was downloaded earlier in the command line; running it runs code nobody has read")
	}
	var script *arg
	switch fam := family(c.name); fam {
	case "sh":
		script = parseShell(c.args[1:]).script
	case "python", "perl", "ruby", "node", "php", "lua", "rscript", "r", "julia":
		script = parseInterpreter(fam, c.args[1:]).script
	case "source":
		if len(c.args) > 1 {
			script = &c.args[1]
		}
	}
	if script != nil && was(*script) {
		return found(c.name + " runs " + script.text + ", downloaded earlier in the command line")
	}
	return finding{}, false
}
