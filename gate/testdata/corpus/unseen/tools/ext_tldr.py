# tldr-pages (tldr-pages/tldr @08e345f4, pages/common and pages/linux): every example of the
# pages of the tools a triage agent uses. Placeholders: {{[-a|--all]}} -> -a (the first
# spelling), {{x}} -> x.
import re, json, glob, os, sys
TOOLS = '''git gh npm npx yarn pnpm node deno bun go cargo rustc rustup python python3 pip pip3 pytest tox poetry uv pipx make cmake ninja gcc clang
docker podman rg jq yq sed awk gawk grep find fd xargs parallel tar zip unzip gzip curl wget http ls cat head tail sort uniq wc diff patch cp mv mkdir rm rmdir
chmod chown ln du df ps pgrep kill pkill env timeout time strace ltrace gdb valgrind lsof ss file stat xxd hexdump od nm objdump readelf ldd strings tree less tee
cut tr paste column comm join split shuf seq date sleep watch which whereis type uname id journalctl systemctl dmesg free top uptime sqlite3 psql mysql redis-cli
kubectl helm terraform shellcheck ruff black mypy eslint prettier tsc java javac mvn gradle ruby gem bundle perl php composer lua R Rscript julia dd rsync
openssl base64 sha256sum md5sum nohup nice at sqlite-utils duckdb cmp realpath dirname basename printf echo test true mktemp touch truncate unshare chroot busybox
tldr man info locale lscpu lsblk mount findmnt nproc hostname whoami groups getent printenv export alias unalias command hash jobs fg bg wait trap'''.split()
pages = []
for d in ('common', 'linux'):
    for f in sorted(glob.glob('tldr/pages/%s/*.md' % d)):
        name = os.path.basename(f)[:-3]
        base = name.split('-')[0] if name.split('-')[0] in ('git', 'gh', 'npm', 'go', 'cargo', 'docker', 'kubectl', 'helm', 'terraform', 'poetry', 'uv', 'rustup', 'pip', 'yarn', 'pnpm', 'podman', 'bun', 'deno', 'mvn', 'gradle', 'gem', 'bundle', 'composer', 'systemctl', 'journalctl') else name
        if base in TOOLS:
            pages.append((d, name, f))
def fill(s):
    s = re.sub(r'\{\{\[([^\]|]*)\|[^\]]*\]\}\}', r'\1', s)
    s = re.sub(r'\{\{(.*?)\}\}', r'\1', s)
    return s
out = []
for d, name, f in pages:
    for m in re.finditer(r'^`(.+)`\s*$', open(f).read(), re.M):
        out.append(dict(src='pages/%s/%s.md' % (d, name), cmd=fill(m.group(1))))
seen = set(); ded = []
for c in out:
    if c['cmd'] in seen: continue
    seen.add(c['cmd']); ded.append(c)
print(len(pages), len(out), len(ded), file=sys.stderr)
for c in ded: print(json.dumps(c))
