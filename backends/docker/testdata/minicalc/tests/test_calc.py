import pytest

from minicalc import evaluate, tokenize


@pytest.mark.parametrize(
    "text, want",
    [("1 + 2", 3), ("2 * 3 + 4", 10), ("2 * (3 + 4)", 14), ("10 / 4", 2.5), ("-3 + 5", 2)],
)
def test_evaluate(text, want):
    assert evaluate(text) == want


def test_tokenize():
    assert tokenize("12+3.5") == [12.0, "+", 3.5]


def test_bad_character():
    with pytest.raises(ValueError):
        tokenize("1 $ 2")


def test_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / 0")


def test_tmp_path_is_writable(tmp_path):
    (tmp_path / "out.txt").write_text("ok")
    assert (tmp_path / "out.txt").read_text() == "ok"
