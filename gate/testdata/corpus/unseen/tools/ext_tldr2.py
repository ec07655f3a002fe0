# tldr-pages, second source: pages/common and pages/linux of tools not in ext_tldr.py's list,
# one page in four (sha256 of the page name, first byte mod 4 == 0).
import re, json, glob, os, sys, hashlib
sys.argv = ['x']
exec(open('ext_tldr.py').read().split('pages = []')[0])
bases = set(TOOLS)
pages = []
for d in ('common', 'linux'):
    for f in sorted(glob.glob('tldr/pages/%s/*.md' % d)):
        name = os.path.basename(f)[:-3]
        first = name.split('-')[0]
        if first in bases or name in bases:
            continue
        if hashlib.sha256(name.encode()).digest()[0] % 4 != 0:
            continue
        pages.append((d, name, f))
def fill(s):
    s = re.sub(r'\{\{\[([^\]|]*)\|[^\]]*\]\}\}', r'\1', s)
    s = re.sub(r'\{\{(.*?)\}\}', r'\1', s)
    return s
out = []
for d, name, f in pages:
    for m in re.finditer(r'^`(.+)`\s*$', open(f).read(), re.M):
        out.append(dict(src='pages/%s/%s.md' % (d, name), cmd=fill(m.group(1))))
seen = set(json.loads(l)['cmd'] for l in open('out/tldr_raw.jsonl'))
ded = []
for c in out:
    if c['cmd'] in seen: continue
    seen.add(c['cmd']); ded.append(c)
print(len(pages), len(out), len(ded), file=sys.stderr)
for c in ded: print(json.dumps(c))
