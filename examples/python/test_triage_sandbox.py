"""Tests of triage_sandbox.py against a fixture workspace and the real
triage-sandbox (TRIAGE_SANDBOX_BIN). Run by python_test.go, which builds
the binary and needs Docker."""

import os
import pathlib
import shutil
import tempfile
import unittest

import triage_sandbox as ts

FIXTURE = pathlib.Path(__file__).parent / "testdata" / "workspace"


class TriageSandboxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        os.chmod(cls.tmp, 0o755)
        cls.ws = os.path.join(cls.tmp, "ws")
        shutil.copytree(FIXTURE, cls.ws)

    @classmethod
    def tearDownClass(cls):
        ts.end_session("pytest-s1", cwd=cls.ws)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_reproducer_runs_and_writes_its_output(self):
        env = dict(os.environ, GITHUB_TOKEN="ghp_canary_not_real_000000000000000000")
        res = ts.run(["python3", "repros/repro_1.py"], role="reproducer", cwd=self.ws, env=env)
        self.assertTrue(res.ok, res)
        self.assertIn("sum: 2", res.stdout)
        self.assertIn("token visible: False", res.stdout)
        self.assertEqual(res.raw["role"], "reproducer")
        self.assertEqual((pathlib.Path(self.ws) / "repros" / "out_1.txt").read_text(), "reproduced\n")
        done = res.completed(["python3", "repros/repro_1.py"])
        self.assertEqual(done.returncode, 0)

    def test_denied_is_a_result(self):
        res = ts.run(shell="git push origin main", cwd=self.ws)
        self.assertTrue(res.denied, res)
        self.assertEqual(res.exit_code, ts.REFUSED)
        self.assertIn("Do not retry it in another form", res.error)

    def test_timeout_is_a_timeout(self):
        res = ts.run(["sleep", "30"], timeout=1, cwd=self.ws)
        self.assertTrue(res.timed_out, res)
        self.assertEqual(res.exit_code, ts.TIMEOUT)

    def test_session_keeps_home(self):
        res = ts.run(shell='echo kept > "$HOME/note"', session="pytest-s1", cwd=self.ws)
        self.assertTrue(res.ok, res)
        res = ts.run(shell='cat "$HOME/note"', session="pytest-s1", cwd=self.ws)
        self.assertEqual(res.stdout, "kept\n", res)
        self.assertTrue(ts.end_session("pytest-s1", cwd=self.ws))
        self.assertFalse(ts.end_session("pytest-s1", cwd=self.ws))

    def test_check_runs_nothing(self):
        self.assertEqual(ts.check(shell="git push origin main", cwd=self.ws)["verdict"], "deny")
        self.assertEqual(ts.check(["python3", "repros/repro_1.py"], role="reproducer", cwd=self.ws)["verdict"], "allow")

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            ts.run(["true"], shell="true")
        with self.assertRaises(ValueError):
            ts.run([])

    def test_missing_binary(self):
        old = os.environ.get("TRIAGE_SANDBOX_BIN")
        os.environ["TRIAGE_SANDBOX_BIN"] = "/nonexistent/triage-sandbox"
        try:
            with self.assertRaises(ts.SandboxError):
                ts.run(["true"], cwd=self.ws)
        finally:
            os.environ["TRIAGE_SANDBOX_BIN"] = old or ""


if __name__ == "__main__":
    unittest.main()
