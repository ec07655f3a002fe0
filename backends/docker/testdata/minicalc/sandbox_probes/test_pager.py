# Not part of the suite (outside testpaths): the integration test runs
# these by name to see what triage-sandbox says about each failure.
import subprocess


def test_needs_a_pager():
    # Like click's pager tests: needs `less`, which the image lacks.
    subprocess.run(["less", "--version"], check=True, capture_output=True)


def test_plain_failure():
    assert 1 + 1 == 3
