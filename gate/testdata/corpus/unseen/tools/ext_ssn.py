import re, json, glob, sys
root='/tmp/g2/ssn/'
pat=re.compile(r'assert(Blocked|Allowed)\(\s*(\'|"|`)((?:\\.|(?!\2).)*?)\2\s*(,|\))', re.S)
def unesc(s):
    return re.sub(r'\\(.)', lambda m: {'n':'\n','t':'\t','\\':'\\',"'":"'",'"':'"','`':'`','$':'$'}.get(m.group(1), '\\'+m.group(1)), s)
out=[]
for f in sorted(glob.glob(root+'tests/**/*.ts', recursive=True)):
    src=open(f).read()
    for m in pat.finditer(src):
        q=m.group(2); s=m.group(3)
        if q=='`' and '${' in s: continue
        line=src[:m.start()].count('\n')+1
        # does the call pass a cwd? (the 3rd arg for Blocked, 2nd for Allowed)
        tail=src[m.end():m.end()+200]
        out.append(dict(src=f[len(root):]+':'+str(line), verdict='deny' if m.group(1)=='Blocked' else 'allow', cmd=unesc(s)))
seen=set(); ded=[]
for c in out:
    if c['cmd'] in seen: continue
    seen.add(c['cmd']); ded.append(c)
print(len(out), len(ded), file=sys.stderr)
for c in ded: print(json.dumps(c))
