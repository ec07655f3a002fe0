"""Run commands through triage-sandbox from a Python harness.

A small, standard-library-only helper for harnesses such as ai-triager's
sandbox wrapper: instead of assembling ``docker run`` or ``sandbox-exec``
command lines itself, the harness calls :func:`run`, which runs
``triage-sandbox run --json`` and returns the parsed report.

    from triage_sandbox import run, check, end_session

    res = run(["python3", "repros/repro_12.py"], role="reproducer", cwd=workspace)
    if res.denied:          # the gate refused it: tell the agent, do not retry
        ...
    elif res.timed_out:     # killed at its timeout (exit 124)
        ...
    print(res.exit_code, res.stdout, res.hints)

Every field of ``run --json`` is in ``Result.raw``; the most used ones are
attributes. Output is already cleaned (secrets redacted, terminal escapes
neutralised, capped head and tail); it is still text a hostile reproducer
chose, so show it to the model as data.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

__all__ = ["Result", "SandboxError", "run", "check", "end_session", "binary"]

# triage-sandbox's own exit codes (README, "Exit codes").
TIMEOUT = 124
REFUSED = 125

# Time triage-sandbox may take around the command itself (starting and
# removing the sandbox) before this helper gives up on it.
_MARGIN_SECONDS = 120


class SandboxError(RuntimeError):
    """triage-sandbox could not be run or gave no report."""


@dataclass
class Result:
    """One run's report: ``run --json``'s object."""

    exit_code: int
    timed_out: bool
    stdout: str
    stderr: str
    gate: dict
    hints: list
    warnings: list
    truncated: bool
    error: str
    raw: dict = field(repr=False)

    @property
    def denied(self) -> bool:
        """The gate refused the command; it did not run."""
        return self.exit_code == REFUSED and self.gate.get("verdict") == "deny"

    @property
    def refused(self) -> bool:
        """triage-sandbox refused or failed before the command ran."""
        return self.exit_code == REFUSED and bool(self.error)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def completed(self, args: Sequence[str]) -> subprocess.CompletedProcess:
        """The result as subprocess.run would return it (a drop-in for
        harness code written against subprocess)."""
        return subprocess.CompletedProcess(list(args), self.exit_code, self.stdout, self.stderr)

    @classmethod
    def from_json(cls, obj: dict) -> "Result":
        return cls(
            exit_code=int(obj.get("exit_code", REFUSED)),
            timed_out=bool(obj.get("timed_out", False)),
            stdout=obj.get("stdout", ""),
            stderr=obj.get("stderr", ""),
            gate=obj.get("gate") or {},
            hints=obj.get("hints") or [],
            warnings=obj.get("warnings") or [],
            truncated=bool(obj.get("truncated", False)),
            error=obj.get("error", ""),
            raw=obj,
        )


def binary() -> str:
    """The triage-sandbox executable: $TRIAGE_SANDBOX_BIN or the one on PATH."""
    exe = os.environ.get("TRIAGE_SANDBOX_BIN") or shutil.which("triage-sandbox")
    if not exe:
        raise SandboxError("triage-sandbox is not on PATH; install it or set TRIAGE_SANDBOX_BIN")
    return exe


def _command(argv: Optional[Sequence[str]], shell: Optional[str]) -> list:
    if (argv is None) == (shell is None):
        raise ValueError("give argv or shell, not both and not neither")
    if shell is not None:
        return ["sh", "-c", shell]
    if not argv:
        raise ValueError("empty argv")
    return [str(a) for a in argv]


def _flags(config: Optional[str], role: Optional[str]) -> list:
    out = []
    if config:
        out += ["--config", str(config)]
    if role:
        out += ["--role", role]
    return out


def run(
    argv: Optional[Sequence[str]] = None,
    *,
    shell: Optional[str] = None,
    role: str = "agent",
    timeout: Optional[float] = None,
    workdir: Optional[str] = None,
    session: Optional[str] = None,
    config: Optional[str] = None,
    task: Optional[str] = None,
    cwd: Optional[str] = None,
    stdin: Optional[str] = None,
    env: Optional[dict] = None,
) -> Result:
    """Run one command in the sandbox and return its report.

    argv runs with no shell; shell runs one command line as ``sh -c``.
    timeout (seconds) overrides the role's; session keeps an agent session's
    sandbox (and its HOME) between calls. cwd is where triage-sandbox starts,
    which decides the triage.toml it finds unless config names one.
    A command that ran and failed, timed out or was denied is a Result;
    SandboxError means no report came back at all.
    """
    args = [binary(), "run", "--json"] + _flags(config, role)
    if timeout is not None:
        args += ["--timeout", "%gs" % timeout]
    if workdir:
        args += ["--workdir", str(workdir)]
    if session:
        args += ["--session", session]
    if task:
        args += ["--task", task]
    if stdin is not None:
        args.append("--stdin")
    args += ["--"] + _command(argv, shell)
    limit = None if timeout is None else timeout + _MARGIN_SECONDS
    try:
        proc = subprocess.run(
            args, cwd=cwd, env=env, input=stdin if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True, text=True, timeout=limit,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxError("running triage-sandbox: %s" % err) from err
    report = _last_json(proc.stdout)
    if report is None:
        raise SandboxError("triage-sandbox gave no report (exit %d): %s" % (proc.returncode, _tail(proc.stderr)))
    return Result.from_json(report)


def check(
    argv: Optional[Sequence[str]] = None,
    *,
    shell: Optional[str] = None,
    role: str = "agent",
    config: Optional[str] = None,
    cwd: Optional[str] = None,
) -> dict:
    """The gate's verdict on a command, without running it: a dict with
    verdict (allow, deny or confirm), rule, reason and message."""
    cmd = _command(argv, shell)
    if shell is not None:
        cmd = [shell]  # check reads one argument with spaces as a shell line
    args = [binary(), "check", "--json"] + _flags(config, role) + ["--"] + cmd
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxError("running triage-sandbox check: %s" % err) from err
    verdict = _last_json(proc.stdout)
    if verdict is None:
        raise SandboxError("triage-sandbox check gave no verdict (exit %d): %s" % (proc.returncode, _tail(proc.stderr)))
    return verdict


def end_session(name: str, *, config: Optional[str] = None, cwd: Optional[str] = None) -> bool:
    """End an agent session; True when one was running."""
    args = [binary(), "session", "end"] + _flags(config, None) + [name]
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    if proc.returncode == REFUSED:
        raise SandboxError("triage-sandbox session end: %s" % _tail(proc.stderr))
    return proc.returncode == 0


def _last_json(text: str) -> Optional[Any]:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _tail(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no message)"
