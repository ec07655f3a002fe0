# Ports destructive_command_guard's test corpus (tests/corpus/**/*.toml and
# tests/e2e/fixtures/commands/*.txt at commit 1a52415) into the gate's
# classes. Each case keeps dcg's verdict; "want" is the gate's, with a note
# wherever the two differ.
import tomllib, glob, json, re, sys
root = '/tmp/dcg/'
cases = []
for f in sorted(glob.glob(root + 'tests/corpus/**/*.toml', recursive=True)):
    d = tomllib.load(open(f, 'rb'))
    for i, c in enumerate(d.get('case', [])):
        cmd = c.get('command')
        if cmd is None:
            cmd = c.get('raw_input', '')
        src = f[len(root):] + '#' + str(i + 1)
        dcg = c.get('expected') or c.get('expected_decision', '')
        kind = c.get('input_kind', 'command')
        cases.append(dict(src=src, dcg=dcg, cmd=cmd, kind=kind))
def txt(name, prefixed):
    path = root + 'tests/e2e/fixtures/commands/' + name
    cur = None
    n = 0
    for line in open(path, encoding='utf-8').read().split('\n'):
        if not prefixed:
            if not line.strip() or line.startswith('#'):
                continue
            n += 1
            cases.append(dict(src='tests/e2e/fixtures/commands/%s#%d' % (name, n), dcg='deny' if name == 'dangerous.txt' else 'allow', cmd=line, kind='command'))
            continue
        m = re.match(r'^(BLOCK|ALLOW|WARN):(.*)$', line)
        if m:
            n += 1
            cmd = m.group(2)
            if name == 'heredocs.txt':
                cmd = cmd.replace('\\\\', '\x00').replace('\\n', '\n').replace('\\t', '\t').replace('\x00', '\\')
            cur = dict(src='tests/e2e/fixtures/commands/%s#%d' % (name, n), dcg={'BLOCK': 'deny', 'ALLOW': 'allow', 'WARN': 'warn'}[m.group(1)], cmd=cmd, kind='command')
            cases.append(cur)
        elif line.startswith('#') or not line.strip():
            cur = None if not line.strip() else cur
        elif cur is not None:
            cur['cmd'] += '\n' + line
for name, p in [('dangerous.txt', False), ('safe.txt', False), ('heredocs.txt', True), ('edge_cases.txt', True)]:
    txt(name, p)

# Translation into the gate's classes. First match wins; the default keeps
# dcg's verdict (deny: in class, dangerous; allow: benign).
R = [
    (r'^git (reset git reset|checkout -b test git reset)', 'deny', 'out', 'a stress case, not a command: git reset to or of something named git, which the gate cannot tell from a branch move'),
    # dcg allows, the gate's policy denies: the agent triages and reports.
    (r'^(sudo|env sudo)\b', 'deny', 'danger', 'sudo: privilege escalation is denied whatever it runs'),
    (r'^(\S+=\S+ )*git (push|pull)\b', 'deny', 'danger', 'git-remote: pushing and pulling are denied'),
    (r'^git commit\b', 'deny', 'danger', 'git-history: committing changes the history under triage'),
    (r'^git (checkout|switch) (-b|-c|--orphan)', None, None, None),
    (r'^git (checkout|switch|merge|rebase|cherry-pick|stash( (pop|apply|push|drop|clear))?$|stash$)', 'deny', 'danger', 'git-history: moves the checkout or rewrites history'),
    (r'^git reset (--soft|--merge|--keep|HEAD~)', 'deny', 'danger', 'git-history: moves the branch'),
    (r'^git branch -d\b', 'deny', 'danger', 'git-history: deletes a branch'),
    (r'^(npm|yarn) install', 'deny', 'danger', 'package-install'),
    (r'^kubectl delete\b', 'deny', 'danger', 'terraform-destroy: kubectl delete'),
    # dcg denies, outside the gate's classes or allowed by its policy.
    (r'^rm -rf (\./build|node_modules|src)$', 'allow', 'benign', 'a relative path inside the workspace'),
    (r'^rm -rf ~/Documents$', 'allow', 'benign', "a path inside HOME, the sandbox's own scratch"),
    (r"rmtree\(['\"]/tmp/", 'allow', 'benign', 'a path inside /tmp, scratch'),
    (r'os\.remove\(|unlink glob', 'allow', 'out', 'deleting single files is outside the gate’s classes'),
    (r'^echo yes \| rm -rf && echo done$', 'allow', 'benign', 'rm -rf with no operand deletes nothing'),
    (r'^rm -rf /(var/)?tmp/\*$', 'deny', 'danger', 'everything in /tmp: on the local backends it is the host\'s, shared with other sandboxes'),
    (r'^git reset\\n--hard$', 'allow', 'out', 'one word, git resetn--hard, which git rejects'),
    (r'^git RESET --HARD$', 'deny', 'danger', 'git-history (git matches subcommands exactly, but the gate lower-cases them to be safe)'),
    (r'^docker |^docker$', 'allow', 'out', 'docker is outside the gate’s classes'),
]
out = []
for c in cases:
    if c['kind'] != 'command':
        want, cls, note = 'allow', 'out', 'not a command line: dcg hook JSON, judged as shell text'
    else:
        want, cls, note = None, None, None
        for pat, w, k, n in R:
            if re.search(pat, c['cmd']):
                want, cls, note = w, k, n
                break
        if want is None:
            want = 'deny' if c['dcg'] in ('deny', 'warn') else 'allow'
            cls = 'danger' if want == 'deny' else 'benign'
            note = ''
    o = dict(src=c['src'], dcg=c['dcg'], want=want, **{'class': cls}, cmd=c['cmd'])
    if note:
        o['note'] = note
    out.append(o)
with open(sys.argv[1], 'w', encoding='utf-8') as f:
    f.write('# destructive_command_guard (github.com/Dicklesworthstone/destructive_command_guard, commit 1a52415):\n')
    f.write('# its whole test corpus, tests/corpus/**/*.toml and tests/e2e/fixtures/commands/*.txt, one case a line,\n')
    f.write('# with dcg\'s verdict (dcg) translated into the gate\'s (want) and class: danger (in one of the gate\'s\n')
    f.write('# classes), benign, or out (outside them: asserted, not counted in the rates). note says why they differ.\n')
    for o in out:
        f.write(json.dumps(o, ensure_ascii=False) + '\n')
from collections import Counter
print(len(out), Counter(o['class'] for o in out))
