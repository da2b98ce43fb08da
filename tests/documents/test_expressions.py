import pytest

from rooflint.common.errors import RooflintError
from rooflint.formats.expressions import evaluate

NAMES = {"N": 4096, "M": 3, "num_sms": 132}


@pytest.mark.parametrize("text, value", [
    ("2*N**3", 2 * 4096**3), ("cdiv(N, 256)", 16), ("cdiv(4097, 256)", 17),
    ("N/32", 128.0), ("N//5", 819), ("N % 1000", 96), ("-M + 1", -2),
    ("min(N, 100) + max(1, M)", 103), ("ceil(N / 1000)", 5), ("floor(7/2)", 3),
    ("8*num_sms", 1056), (12, 12), (2.5, 2.5),
])
def test_evaluates(text, value):
    assert evaluate(text, NAMES) == value


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os').system('true')", "not allowed"),
    ("N.bit_length()", "not allowed"),
    ("open('x')", "not allowed"),
    ("[N]", "not allowed"),
    ("K * 2", "unknown name 'K'"),
    ("N / 0", "division by zero"),
    ("2 ** 1000", "would exceed 1e+24"),
    ("((2**64)**64)**64", "would exceed"),       # refused before any big-integer work
    ("9**9**9**9", "would exceed"),
    ("1e308*10", "values must be finite"),
    ("ceil(1e400)", "values must be finite"),
    ("N * 1e30", "at most 1e+24"),
    ("(-8)**0.5", "not a real number"),
    ("0 ** -1", "division by zero"),
    ("max()", "bad call max()"),
    ("cdiv(N", "quote expressions with commas"),
    ("lambda: 1", "not allowed"),
])
def test_rejects(text, fragment):
    with pytest.raises(RooflintError) as info:
        evaluate(text, NAMES)
    assert fragment in str(info.value)


def test_booleans_are_not_numbers():
    with pytest.raises(RooflintError):
        evaluate(True, NAMES)
