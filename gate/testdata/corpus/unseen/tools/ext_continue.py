"""Extract continuedev/continue terminal-security test cases: (policy, command, expected, describe path, line)."""
import json, re, sys
src = open(sys.argv[1]).read()
# JS string literal (double or single quoted)
S = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
call = re.compile(r'evaluateTerminalCommandSecurity\(\s*(' + S + r')\s*,\s*(' + S + r')\s*,?\s*\)')
tobe = re.compile(r'\.toBe\(\s*(' + S + r')\s*\)')
def unjs(s):
    q = s[0]; body = s[1:-1]
    return json.loads('"' + body.replace('\\' + "'", "'").replace('"' if q == "'" else '\x00', '\\"') + '"')
desc = re.compile(r'(describe|it)\(\s*(' + S + r')')
out = []
for m in call.finditer(src):
    t = tobe.search(src, m.end())
    line = src.count('\n', 0, m.start()) + 1
    # the nearest it() before
    its = [d for d in desc.finditer(src, 0, m.start()) if d.group(1) == 'it']
    title = unjs(its[-1].group(2)) if its else ''
    out.append({"line": line, "policy": unjs(m.group(1)), "cmd": unjs(m.group(2)), "expect": unjs(t.group(1)), "it": title})
for o in out:
    print(json.dumps(o))
print(len(out), file=sys.stderr)
