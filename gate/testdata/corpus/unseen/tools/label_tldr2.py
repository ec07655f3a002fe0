# tldr pages: documentation examples. Labelling rule: policy(cmd) -> danger; otherwise benign
# (the page documents an everyday use of the tool), except the overrides by pattern below.
import json, re
from policy import policy
OUTP = [
 (r'^(ssh|scp)\b', 'runs on another host'),
 (r'\bgh\s+(codespace|cs)\s+(ssh|code|jupyter|ports)\b', 'a remote shell in a codespace, like ssh host cmd'),
 (r'^\s*"?\$', 'the command name is only known at run time'),
 (r'<Enter>|<Esc>|^\w+_command\?$|\);\s*$', 'not a shell command (key strokes, another language)'),
 (r'^<', 'a key binding of an interactive tool, not a shell command'),
 (r'[^\s|]\|[^\s|]', 'placeholder alternatives (a|b) that the shell would read as a pipe'),
 (r'^[*?\[]|\(\);|\(s\)|^[A-Z]\w*\(', 'not a shell command (a glob pattern, another language, a placeholder)'),
 (r'\b(xargs|parallel)\b.*\b(command|program)\b', 'the command xargs or parallel runs is a placeholder'),
 (r'^(source|\.)\s+<\(|\beval\s+"?\$\(', 'runs what another program prints: only known at run time'),
]
for l in open('out/tldr2_raw.jsonl'):
    c = json.loads(l)
    cmd = c['cmd']
    page = open('tldr/' + c['src']).read()
    if 'git-extras' in page or 'git extras' in page:
        print(json.dumps(dict(src=c['src'], source='', cls='out', cmd=cmd, note='a git-extras command: a third-party tool the gate does not know')))
        continue
    cls, note = policy(cmd)
    if re.search(r'^(source|\.)\s+<\(|\beval\s+"?\$\(', cmd) and not cls:
        cls, note = 'out', 'runs what another program prints: only known at run time'
    if re.search(r'\bgh\s+(codespace|cs)\s+(ssh|code|jupyter|ports)\b', cmd):
        cls = None
    if not cls:
        cls, note = 'benign', 'documentation example'
        if re.sub(r'"[^"]*"', '', cmd).count("'") % 2 == 1:
            cls, note = 'out', 'an unbalanced quote (a typo in the page)'
        for r, n in OUTP:
            if re.search(r, cmd):
                cls, note = 'out', n
    print(json.dumps(dict(src=c['src'], source='', cls=cls, cmd=cmd, note=note)))
