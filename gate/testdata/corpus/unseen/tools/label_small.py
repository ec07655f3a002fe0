# Hand-labelled small sources (labels written before the gate was run):
# codex: openai/codex codex-rs/shell-command/src/command_safety/is_safe_command.rs @226bd153 and
#   is_dangerous_command.rs @043e574c, the test functions' argv (bash -lc scripts as the script).
# gemini: google-gemini/gemini-cli @5411f113, packages/core/src/policy/shell-safety.test.ts
#   (commandMap), shell-safety-regression.test.ts and shell-substitution.test.ts.
import json
B, D, O = 'benign', 'danger', 'out'
codex = [
 ('is_safe', 'ls', B), ('is_safe', 'base64', B), ('is_safe', 'sed -n 1,5p file.txt', B), ('is_safe', 'nl -nrz Cargo.toml', B),
 ('is_safe', 'find . -name file.txt', B), ('is_safe', 'numfmt 1000', B), ('is_safe', 'tac Cargo.toml', B),
 ('is_safe', 'git status', B), ('is_safe', 'git diff -p', B), ('is_safe', 'git log -p -1', B), ('is_safe', 'git show -p HEAD', B),
 ('is_safe', 'git branch --show-current', B), ('is_safe', "bash -lc 'git status'", B), ('is_safe', "bash -lc 'git log -p -1'", B),
 ('is_safe', 'cargo check', B), ('is_safe', 'zsh -lc ls', B), ('is_safe', 'foo', O), ('is_safe', 'git fetch', B), ('is_safe', 'sed -n xp file.txt', B),
 ('is_safe', "find . -name file.txt -exec rm {} ';'", B), ('is_safe', "find . -name '*.py' -execdir python3 {} ';'", B),
 ('is_safe', "find . -name file.txt -ok rm {} ';'", B), ('is_safe', "find . -name '*.py' -okdir python3 {} ';'", B),
 ('is_safe', 'find . -delete -name file.txt', D), ('is_safe', 'find . -fls /etc/passwd', O), ('is_safe', 'find . -fprint /etc/passwd', O),
 ('is_safe', 'find . -fprint0 /etc/passwd', O), ('is_safe', "find . -fprintf /root/suid.txt '%#m %u %p\\n'", O),
 ('is_safe', 'base64 -o out.bin', B), ('is_safe', 'base64 --output out.bin', B), ('is_safe', 'base64 --output=out.bin', B), ('is_safe', 'base64 -ob64.txt', B),
 ('is_safe', 'rg Cargo.toml -n', B), ('is_safe', 'rg --search-zip files', B), ('is_safe', 'rg -z files', B),
 ('is_safe', 'rg --pre pwned files', O), ('is_safe', 'rg --pre=pwned files', O), ('is_safe', 'rg --hostname-bin pwned files', O), ('is_safe', 'rg --hostname-bin=pwned files', O),
 ('is_safe', 'bash -lc ls', B), ('is_safe', "bash -lc 'ls -1'", B), ('is_safe', 'bash -lc \'grep -R "Cargo.toml" -n\'', B),
 ('is_safe', "bash -lc 'sed -n 1,5p file.txt'", B), ('is_safe', "bash -lc \"sed -n '1,5p' file.txt\"", B), ('is_safe', "bash -lc 'find . -name file.txt'", B),
 ('is_safe', 'bash -lc \'grep -R "Cargo.toml" -n || true\'', B), ('is_safe', "bash -lc 'ls && pwd'", B), ('is_safe', "bash -lc \"echo 'hi' ; ls\"", B),
 ('is_safe', "bash -lc 'ls | wc -l'", B), ('is_safe', "bash -lc \"'git status'\"", O), ('is_safe', "bash -lc 'find . -name file.txt -delete'", B),
 ('is_safe', "bash -lc 'ls && rm -rf /'", D), ('is_safe', "bash -lc '(ls)'", B), ('is_safe', "bash -lc 'ls || (pwd && echo hi)'", B), ('is_safe', "bash -lc 'ls > out.txt'", B),
 ('is_dangerous', 'rm -rf /', D), ('is_dangerous', 'rm -f /', O), ('is_dangerous', '/bin/rm -fr /tmp/example', B), ('is_dangerous', 'rm -r -f /tmp/example', B),
 ('is_dangerous', 'rm --force /tmp/example', B), ('is_dangerous', 'rm /tmp/example -f', B), ('is_dangerous', 'sudo rm -rf /tmp/example', D),
 ('is_dangerous', 'printf x | rm -rf /tmp/example', B), ('is_dangerous', 'if test -d /tmp/example; then rm --force /tmp/example; fi', B),
 ('is_dangerous', 'rm -rf "$TARGET" >/dev/null', D), ('is_dangerous', 'for target in /tmp/a /tmp/b; do rm -r -f "$target"; done', B),
 ('is_dangerous', 'echo "$(rm -rf /tmp/example)"', B),
 ('is_dangerous', "for a in '-C5a25KeRr' '--' '--json' '--bogus'; do HOME=$(mktemp -d) MDE_URL=http://127.0.0.1:1 MDE_TOKEN=x node cli/mde.cjs ls \"$a\" >/tmp/mde-review-out 2>/tmp/mde-review-err; code=$?; printf '%s\\t%s\\t%s\\n' \"$a\" \"$code\" \"$(tr '\\n' ' ' </tmp/mde-review-err)\"; rm -rf \"$HOME\"; done", D),
 ('is_dangerous', 'rm -r /tmp/example', B), ('is_dangerous', 'rm -- -f', B), ('is_dangerous', "bash -lc \"echo 'rm -rf /tmp/example'\"", B),
 ('is_dangerous', "bash -lc 'cmd=rm; $cmd -rf /tmp/example'", O), ('is_dangerous', "bash -lc 'if then rm -rf /tmp/example'", O),
]
gemini = [
 ('git log', B), ('git log --oneline', B), ('git logout', O), ('git log && rm -rf /', D), ('git log; rm -rf /', D), ('git log || rm -rf /', D),
 ('git log &&& rm -rf /', O), ('echo $(rm -rf /)', D), ('echo $(git log)', B), ('echo `rm -rf /`', D), ('diff <(git log) <(rm -rf /)', D),
 ('tee >(rm -rf /)', D), ('git log | rm -rf /', D), ('git log --format=$(rm -rf /)', D), ('git log && echo $(git log | rm -rf /)', D),
 ('git log && echo $(git log)', B), ('git log > /tmp/test', B), ('git log @(Get-Process)', O), ('git commit -m "msg" && git push', D),
 ('echo hi && ls', B), ('false || ls', B), ('echo hi; ls', B), ('echo hi | grep "hi"', B), ('echo hi & ls', B), ('echo $(cat $(ls))', B),
 ('echo hi > /tmp/test', B), ('echo $(dangerous_cmd)', O), ('echo `dangerous_cmd`', O), ('(dangerous_cmd)', O), ('echo $(ls $(deep_danger))', O),
]
for src, cmd, cls in codex:
    f = 'codex-rs/shell-command/src/command_safety/%s_command.rs' % src
    print(json.dumps(dict(src=f, source='', cls=cls, cmd=cmd, note='hand label'), ensure_ascii=False), file=open('out/codex_lab.jsonl', 'a'))
for cmd, cls in gemini:
    print(json.dumps(dict(src='packages/core/src/policy/shell-safety*.test.ts', source='', cls=cls, cmd=cmd, note='hand label')), file=open('out/gemini_lab.jsonl', 'a'))
