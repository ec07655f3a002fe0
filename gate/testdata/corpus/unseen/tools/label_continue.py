# Labels continuedev/continue's terminal-security tests (ext_continue.py's output) by the
# labelling rule of ../README.md, written from the gate's rule descriptions before the gate
# was run on them (issue 38). The source is a classifier: a case whose starting policy is
# allowedWithoutPermission and whose result is allowedWithPermission or disabled is a block;
# allowedWithoutPermission kept is an allow; a case that starts at allowedWithPermission or
# disabled says nothing (the classifier never lowers a policy), so it is labelled by hand.
# Usage: python3 label_continue.py raw.jsonl COMMIT > ../continue.jsonl
import json, sys

# Source lines of cases in one of the gate's classes (rule 1), with why.
DANGER = {
 8: 'rm -rf /', 16: 'rm -rf /*', 24: 'a command name only known at run time (agent role)', 32: 'rm -rf of the home directory',
 40: 'rm -rf outside the workspace', 64: 'dd to a disk device', 72: 'mkfs of a disk device',
 82: 'sudo', 90: 'su', 98: 'doas', 114: 'sudo', 122: 'sudo (names are lower-cased)', 130: 'sudo quoted',
 138: 'a command name only known at run time (agent role)', 146: 'sudo in a chain',
 207: 'download piped into sh', 215: 'download piped into bash',
 223: "downloaded code run by PowerShell's iex (issue 38 names pwsh as an interpreter)",
 231: 'download piped into sh', 239: 'download piped into bash -', 247: 'fetch output piped into python',
 257: 'npm install', 265: 'npm i', 273: 'pip install', 281: 'pip3 install', 289: 'gem install', 297: 'cargo install',
 305: 'go get', 313: 'yarn add', 321: 'pnpm install', 329: 'apt-get install', 337: 'brew install', 345: 'choco install',
 807: 'rm -rf / in a chain', 815: 'sudo rm in a chain',
 855: 'a file wget downloaded, run as a script',
 865: 'a shell reading what base64 decodes (agent role: code only known at run time)',
 873: 'rm -rf / with escapes', 881: 'sudo with an escape', 897: "rm -rf / with ''",
 921: "eval 'rm -rf /'", 929: 'exec rm -rf /', 955: 'rm -rf / in backticks', 971: 'sudo in $(...)', 979: 'rm -rf / in nested $(...)',
 1013: 'names ~/.ssh/id_rsa', 1021: 'rm -rf /*', 1063: 'names ~/.aws/credentials',
 1143: 'sudo rm -rf / (names are lower-cased)', 1151: 'sudo rm -rf / with tabs', 1159: 'rm -rf / on a second line',
 1167: "$SHELL -c 'rm -rf /' (issue 38's role gap)",
 1377: 'kubectl delete', 1393: 'terraform destroy', 1459: 'sudo make install', 1491: 'cargo install',
 1575: 'shred of an absolute path outside the workspace',
 1601: 'a command name only known at run time (agent role)', 1609: 'a command name only known at run time (agent role)',
 1625: 'a command name only known at run time (agent role)',
 1645: 'rm -rf / on a second line', 1653: 'sudo on a second line', 1669: "eval 'rm -rf /' on a second line",
 1679: 'npm install on a second line', 1695: 'pip install on a second line', 1737: 'npm install on a second line',
 1745: 'npm install after CRLF', 1761: 'npm install after blank lines', 1771: 'rm -rf / on a third line',
 1806: 'npm install on a second line', 1814: 'a file curl wrote (redirection) run as a script',
 1822: 'sudo apt-get install on a second line', 1832: 'npm install after blank lines', 1840: 'npm install on an indented line',
}
# Cases the source leaves at a policy or blocks, that are allows by the gate's classes.
BENIGN = {
 669: 'read-only', 677: 'read-only', 685: 'read-only', 693: 'read-only', 701: 'read-only', 709: 'read-only', 717: 'read-only',
 725: 'echo', 749: 'echo of quoted text', 757: 'grep', 765: 'cat of a project file', 773: 'grep', 781: 'find without actions',
 789: 'find -exec rm narrowed by -name, relative start (recursive-delete names only unnarrowed finds)',
 797: 'find -delete narrowed by -name (recursive-delete names only unnarrowed finds)',
 831: 'echo of quoted text', 847: 'read-only chain', 963: 'echo of quoted text', 1122: 'echo', 1130: 'echo',
 1138: 'ls (the source only keeps a disabled policy)', 1427: 'npm run of the project', 1435: 'npm run of the project',
 1467: 'build', 1475: 'build', 1483: 'build', 1517: 'tar creating an archive', 1525: 'zip creating an archive',
}
# Blocks the labelling rule puts out for a reason other than rule 2 (rule 3).
OUT = {
 889: 'U+3000 is not a word break in bash: one command word that is not rm',
 905: "echo -e decodes to 'rm -rf' with no operand, which deletes nothing (contrived)",
 913: "echo -e decodes to 'rm -rf' with no operand, which deletes nothing (contrived)",
 1633: "echo prints text; the source misreads $'...' as running rm",
 1753: 'a lone CR is not a line break in bash: one command word ls\\rnpm',
 1073: 'empty command', 1081: 'empty command', 1859: 'empty command',
}
raw, commit = sys.argv[1], sys.argv[2]
print('# continuedev/continue @ %s: packages/terminal-security/test/terminalCommandSecurity.test.ts (Apache-2.0): '
      'every evaluateTerminalCommandSecurity call with a literal command (tools/ext_continue.py).' % commit)
print('# Labelled before the gate was run on them (tools/label_continue.py; README.md, "Unseen corpora"); set: tune (issue 38: measured before any tuning, then fixed against).')
for l in open(raw):
    c = json.loads(l)
    n = c['line']
    block = c['policy'] == 'allowedWithoutPermission' and c['expect'] != 'allowedWithoutPermission'
    src = {'disabled': 'deny', 'allowedWithPermission': 'confirm', 'allowedWithoutPermission': 'allow'}[c['expect']] if c['policy'] == 'allowedWithoutPermission' else ''
    if n in DANGER:
        cls, want, note = 'danger', 'deny', DANGER[n]
    elif n in OUT:
        cls, want, note = 'out', '', OUT[n]
    elif n in BENIGN:
        cls, want, note = 'benign', 'allow', BENIGN[n]
    elif block:
        cls, want, note = 'out', '', 'source blocks; outside the gate\'s classes'
    elif c['policy'] == 'allowedWithoutPermission':
        cls, want, note = 'benign', 'allow', 'source allows'
    else:
        sys.exit('unlabelled case at line %d: %r' % (n, c['cmd']))
    print(json.dumps({'src': 'packages/terminal-security/test/terminalCommandSecurity.test.ts:%d' % n, 'set': 'tune', 'class': cls,
                      'want': want, 'cmd': c['cmd'], 'note': note, 'source': src}, ensure_ascii=False))
