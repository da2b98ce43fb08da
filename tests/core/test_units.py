import pytest

from rooflint.common.errors import RooflintError
from rooflint.common.units import format_rate, format_time, parse_bytes, parse_count, parse_time


@pytest.mark.parametrize("text, seconds", [
    ("0.713ms", 0.713e-3), ("2.1 ms", 2.1e-3), ("40us", 40e-6), ("40µs", 40e-6),
    ("12ns", 12e-9), ("1.5s", 1.5), ("2.5e-3", 2.5e-3), (".5ms", 0.5e-3),
])
def test_times(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text, count", [
    ("128MiB", 128 * 2**20), ("201MB", 201e6), ("8GiB", 8 * 2**30), ("8gib", 8 * 2**30),
    ("4096", 4096), ("1.5KB", 1500), ("2TB", 2e12), ("0", 0),
])
def test_bytes(text, count):
    assert parse_bytes(text) == pytest.approx(count)


@pytest.mark.parametrize("text, count", [("537e6", 537e6), ("137.4e9", 137.4e9), ("2G", 2e9),
                                         ("0", 0)])
def test_counts(text, count):
    assert parse_count(text) == pytest.approx(count)


@pytest.mark.parametrize("call, text", [
    (parse_time, "3 parsecs"), (parse_time, "0ms"), (parse_time, "-1ms"),
    (parse_bytes, "12 furlongs"), (parse_bytes, "MiB"), (parse_count, "1e6 FLOPs"),
])
def test_rejects_what_it_cannot_read(call, text):
    with pytest.raises(RooflintError):
        call(text)


def test_formatting():
    assert format_time(0.713e-3) == "713 us"
    assert format_time(2.5) == "2.5 s"
    assert format_rate(3.88e12, "B/s") == "3.88 TB/s"
    assert format_rate(50.9e12, "FLOP/s") == "50.9 TFLOP/s"


def test_parameters_print_whole_numbers_in_full():
    from rooflint.common.units import format_params
    assert format_params({"N": 2.0**27, "STRIDE": 32, "EPS": 1e-5, "SCALE": 0.125}) == \
        "N=134217728, STRIDE=32, EPS=1e-05, SCALE=0.125"
