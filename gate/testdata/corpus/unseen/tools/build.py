# Builds gate/testdata/corpus/unseen/*.jsonl from the labelled sources: drops commands the
# gate's tests already hold, and splits each source into a tuning and a held-out set by a
# hash of (source, command): held when the first byte of sha256 is 0 mod 3.
import json, hashlib, glob, re, sys
WT = '/work/wt/gate2/gate/'
seen = set()
for l in open(WT + 'testdata/corpus/dcg.jsonl'):
    if l.startswith('{'): seen.add(json.loads(l)['cmd'])
for l in open(WT + 'testdata/corpus/benign.txt'):
    seen.add(l.rstrip('\n'))
# The tests as they were before this work (commit d51d280): cases written since, for the
# classes the tuning sets found, must not drop the tuning cases they came from.
import subprocess
BASE = 'd51d280'
names = subprocess.run(['git', '-C', WT + '..', 'ls-tree', '--name-only', BASE, 'gate/'], capture_output=True, text=True, check=True).stdout.split()
gosrc = ''.join(subprocess.run(['git', '-C', WT + '..', 'show', BASE + ':' + n], capture_output=True, text=True, check=True).stdout for n in names if n.endswith('_test.go'))
assert len(gosrc) > 10000
def in_tests(cmd):
    if cmd in seen: return True
    if len(cmd) < 4: return False
    return ('`%s`' % cmd) in gosrc or json.dumps(cmd) in gosrc
SOURCES = {
 'safetynet': ('kenryu42/claude-code-safety-net', '1819ca2d7527e261fbfaee17237bc54d857a726c', 'out/ssn_lab.jsonl'),
 'dcgpacks': ('Dicklesworthstone/destructive_command_guard', '1a52415130fffec249e3c8adde72f58e3c4d6de0', 'out/dcgpacks_lab.jsonl'),
 'codex': ('openai/codex', '226bd153410084774ffcf7aff9f22930e417f420 (is_safe_command.rs), 043e574c6b3d5ec86e2f7c12c395e12013fafeca (is_dangerous_command.rs)', 'out/codex_lab.jsonl'),
 'gemini': ('google-gemini/gemini-cli', '5411f113cafae26161b4969b0237b8e1e024e2c2', 'out/gemini_lab.jsonl'),
 'tldr': ('tldr-pages/tldr', '08e345f42639f67d99282813247ac670dc6e87cb', 'out/tldr_lab.jsonl'),
 'tldr2': ('tldr-pages/tldr', '08e345f42639f67d99282813247ac670dc6e87cb', 'out/tldr2_lab.jsonl'),
 'tldr3': ('tldr-pages/tldr', '08e345f42639f67d99282813247ac670dc6e87cb', 'out/tldr3_lab.jsonl'),
 'safetynet2': ('kenryu42/claude-code-safety-net', 'ee868ccf62a4eb042dea1dc352f79dc1aece37ce', 'out/ssn2_lab.jsonl'),
}
# Sources added after the first held-out measurement: wholly held out, measured once.
ALLHELD = {'tldr3', 'safetynet2'}
HDR = {
 'safetynet': 'its tests (tests/**/*.test.ts): every assertBlocked/assertAllowed call with a literal command',
 'dcgpacks': 'its pack unit tests (src/packs/**/*.rs), which the earlier port (tests/corpus, tests/e2e) did not include',
 'codex': 'codex-rs/shell-command/src/command_safety tests: argv of is_safe_command and is_dangerous_command cases (bash -lc scripts kept whole)',
 'gemini': 'packages/core/src/policy/shell-safety*.test.ts and shell-substitution.test.ts commands',
 'tldr2': 'pages/common and pages/linux examples of one page in four of the other tools (ext_tldr2.py; {{[-a|--all]}} -> -a, {{x}} -> x)',
 'tldr3': 'pages/common and pages/linux examples of another page in four of the other tools (ext_tldr3.py), wholly held out',
 'safetynet2': 'a later version: tests/gate/behavioral-contract-cases.ts, standard-safety expectations, hand labels; wholly held out',
 'tldr': 'pages/common and pages/linux examples of the tools a triage agent uses ({{[-a|--all]}} -> -a, {{x}} -> x)',
}
tot = {}
for name, (repo, commit, f) in SOURCES.items():
    rows = []
    dropped = 0
    for l in open(f):
        c = json.loads(l)
        if in_tests(c['cmd']):
            dropped += 1
            continue
        h = hashlib.sha256((name + '\0' + c['cmd']).encode()).digest()[0]
        rows.append(dict(src=c['src'], source=c.get('source', ''), set='held' if h % 3 == 0 or name in ALLHELD else 'tune', cls=c['cls'],
                         want={'danger': 'deny', 'benign': 'allow'}.get(c['cls'], ''), cmd=c['cmd'], note=c['note']))
    with open(WT + 'testdata/corpus/unseen/%s.jsonl' % name, 'w') as o:
        o.write('# %s @ %s: %s.\n' % (repo, commit, HDR[name]))
        o.write('# Labelled before the gate was run on them (see README.md, "Unseen corpora"); set: tune (fixed against) or held (held out).\n')
        for r in rows:
            o.write(json.dumps(dict(src=r['src'], set=r['set'], class_=r['cls'], want=r['want'], cmd=r['cmd'], note=r['note'], source=r['source'])).replace('"class_"', '"class"') + '\n')
    import collections
    print(name, len(rows), 'dropped (already in tests):', dropped, collections.Counter((r['set'], r['cls']) for r in rows))
