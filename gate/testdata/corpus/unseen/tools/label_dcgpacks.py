# destructive_command_guard's pack unit tests (Dicklesworthstone/destructive_command_guard @1a52415,
# src/packs/**/*.rs: assert_blocks*/assert_allows/assert_safe_pattern_matches/assert_no_match/
# test_batch_* calls with a literal command), which the earlier port (tests/corpus, tests/e2e)
# did not include. Labelling rule:
#  1. explicit overrides below;
#  2. policy(cmd): a command one of the gate's classes names is "danger";
#  3. packs inside the gate's classes (core.git, core.filesystem, strict_git, package_managers,
#     database mysqladmin, secrets.onepassword reads): the source's verdict (block -> danger,
#     allow -> benign); every other pack (cloud, containers, email, payment, ...) is outside
#     the gate's classes: its blocks are "out", its allows are benign commands.
import json, re
from policy import policy
INCLASS = ('core/', 'strict_git', 'package_managers')
O = {
 'rm -rf ./build': ('benign', 'relative path in the workspace'), 'rm -r -f ./build': ('benign', 'relative'), 'rm -f -r ./build': ('benign', 'relative'),
 'rm --recursive --force ./build': ('benign', 'relative'), 'rm --force --recursive ./build': ('benign', 'relative'),
 'rm -rf /var/tmp/stuff': ('benign', '/var/tmp is scratch (gate/paths.go scratchDirs)'),
 'poetry publish': ('out', 'publishing a package is not in a class'), 'mvn deploy': ('out', 'publishing'), './mvnw release:perform': ('out', 'publishing'),
 'gradle publish': ('out', 'publishing'), './gradlew publish': ('out', 'publishing'),
 'op read op://vault/item/field': ('danger', 'credential-helper: prints a stored secret'),
 'op item get "Database Password"': ('danger', 'credential-helper: prints a stored secret'),
 'op document get "Prod Cert"': ('danger', 'credential-helper: prints a stored secret document'),
 'docker run': ('benign', 'source allows'),
 "braintree.Customer.find('cust_123')": ('out', 'Python, not a shell command'),
 "gateway.customer.search({:email => 'a@b.com'})": ('out', 'Ruby, not a shell command'),
}
for l in open('out/dcgpacks_raw.jsonl'):
    c = json.loads(l)
    p = c['src'].replace('src/packs/', '')
    if p.startswith('test_'):
        continue
    cmd = c['cmd']
    if re.match(r'^(ssh|scp|sftp|mosh)\b', cmd) and cmd not in O:
        cls, note = 'out', 'runs on another host: the gate documents ssh host cmd as out of reach'
    elif cmd in O:
        cls, note = O[cmd]
    else:
        cls, note = policy(cmd)
        if not cls:
            if re.match(r'^(DROP|TRUNCATE|DELETE|GRANT|SELECT|SHOW|DESCRIBE|EXPLAIN|drop|truncate|delete)\b', cmd):
                cls, note = 'out', 'a SQL statement, not a shell command'
            elif p.startswith(INCLASS):
                cls, note = ('danger', 'source blocks, in class') if c['verdict'] == 'deny' else ('benign', 'source allows')
            else:
                cls, note = ('out', 'source blocks, outside the gate\'s classes') if c['verdict'] == 'deny' else ('benign', 'source allows')
    print(json.dumps(dict(src=c['src'], source=c['verdict'], cls=cls, cmd=cmd, note=note)))
