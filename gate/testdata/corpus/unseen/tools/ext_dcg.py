import re, json, glob, sys
root='/tmp/g2/dcg/'
S=r'(?:r(#*)"(.*?)"\1|"((?:\\.|[^"\\])*)")'
def rs(m, i):
    i=i  # base: group of the hashes
    i-=0
    # m groups: hashes, raw, normal
    if m.group(i+1) is not None: return m.group(i+1)
    s=m.group(i+2)
    return re.sub(r'\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)', lambda e: {'n':'\n','t':'\t','\\':'\\','"':'"',"'":"'",'0':'\0','r':'\r'}.get(e.group(1), chr(int(e.group(1)[2:-1],16)) if e.group(1).startswith('u{') else chr(int(e.group(1)[1:],16)) if e.group(1).startswith('x') else '\\'+e.group(1)), s)
def rs1(m,b):
    if m.group(b+1) is not None: return m.group(b+1)
    s=m.group(b+2)
    return re.sub(r'\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)', lambda e: {'n':'\n','t':'\t','\\':'\\','"':'"',"'":"'",'0':'\0','r':'\r'}.get(e.group(1), chr(int(e.group(1)[2:-1],16)) if e.group(1).startswith('u{') else chr(int(e.group(1)[1:],16)) if e.group(1).startswith('x') else '\\'+e.group(1)), s)
one=re.compile(r'\b(assert_blocks_with_pattern|assert_blocks_with_severity|assert_blocks|assert_rm_parser_denies|assert_allows|assert_safe_pattern_matches|assert_no_match|assert_rm_parser_allows)\(\s*&?\w+\s*,\s*'+S, re.S)
batch=re.compile(r'\b(test_batch_blocks|test_batch_allows)\(\s*&?\w+\s*,\s*&\[(.*?)\]', re.S)
lit=re.compile(S, re.S)
out=[]
for f in sorted(glob.glob(root+'src/packs/**/*.rs', recursive=True)):
    src=open(f).read()
    for m in one.finditer(src):
        v='deny' if ('block' in m.group(1) or 'denies' in m.group(1)) else 'allow'
        out.append(dict(src=f[len(root):]+':'+str(src[:m.start()].count('\n')+1), verdict=v, cmd=rs1(m,2)))
    for m in batch.finditer(src):
        v='deny' if 'blocks' in m.group(1) else 'allow'
        for l in lit.finditer(m.group(2)):
            out.append(dict(src=f[len(root):]+':'+str(src[:m.start()].count('\n')+1), verdict=v, cmd=rs1(l,1)))
seen=set(); ded=[]
for c in out:
    k=c['cmd']
    if k in seen: continue
    seen.add(k); ded.append(c)
print(len(out), len(ded), file=sys.stderr)
for c in ded: print(json.dumps(c))
