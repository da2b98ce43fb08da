"""Counters checked for garbage (issue 27): NaN, negative or impossible counters (bytes
or FLOPs beyond what the kernel's time allows at the datasheet's peaks) are refused per
kernel with a reason, never averaged in or written into a result."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from edges import REPO
from rooflint.analysis.counters import implausible
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.formats.results import read_result

H100 = find_spec("h100-sxm", load_specs())
FASTEST = max(p.flops_per_s for p in H100.peaks.values())
RECORDED = read_result(REPO / "examples" / "h100-bundled.json")


def recorded(name: str):
    return next(v for f in RECORDED.families for v in f.variants if v.name == name)


def test_every_recorded_kernel_is_plausible():
    for f in RECORDED.families:
        for v in f.variants:
            if v.counters:
                assert implausible(v.counters, H100.dram_bandwidth, FASTEST) is None, v.name


@pytest.mark.parametrize("edit, reason", [
    (dict(dram_read=math.nan), "dram_read is nan"),
    (dict(l2_bytes=-5.0), "l2_bytes is -5"),
    (dict(stalls={"barrier": math.inf}), "stalls.barrier is inf"),
    (dict(duration_s=0.0), "took no time"),
])
def test_garbage_is_refused_by_name(edit, reason):
    counters = replace(recorded("copy_float4").counters, **edit)
    assert reason in implausible(counters, H100.dram_bandwidth, FASTEST)


def test_more_bytes_or_flops_than_the_time_allows_are_refused():
    copy = recorded("copy_float4").counters
    fast = replace(copy, duration_s=copy.duration_s / 3)       # 3x its real DRAM rate
    assert "DRAM rate" in implausible(fast, H100.dram_bandwidth, FASTEST)
    gemm = recorded("blocked_2d").counters
    too_many = replace(gemm, flops={"fp32": 100 * FASTEST * gemm.duration_s})
    assert "FLOP rate" in implausible(too_many, H100.dram_bandwidth, FASTEST)


def test_a_refused_kernel_is_judged_without_them_and_says_why():
    v = recorded("copy_float4")
    bad = replace(v.counters, dram_write=math.nan)
    compulsory = v.dram_bytes["model"]
    analysis = analyse(Observation("copy_float4", "fp32", v.samples_s, bad,
                                   Model(0.0, compulsory, compulsory / 2), 1024, 256, 1), H100,
                       H100.sms, None)
    assert analysis.counters is None and analysis.refused == "dram_write is nan"
    assert analysis.notes[0] == "counters refused: dram_write is nan"
    assert analysis.point.bytes_source == "model" and not analysis.levels


def test_a_cell_ncu_left_without_a_number_is_refused_not_a_crash():
    """A recorded H100 log with one launch's DRAM reads edited to "n/a": the variant's
    counters read NaN there and are refused by name; the other variants are untouched."""
    from rooflint.measure import ncu
    text = (REPO / "tests" / "fixtures" / "ncu" / "h100-probe-5-variants.csv").read_text()
    rows = ncu.parse_rows(text)
    edited = [dict(r) for r in rows]
    edited[0][ncu.DRAM_READ] = "n/a"
    first = ncu.summarize([edited[0]])
    assert math.isnan(first.dram_read)
    assert implausible(first, H100.dram_bandwidth, FASTEST) == "dram_read is nan"
    assert implausible(ncu.summarize([rows[0]]), H100.dram_bandwidth, FASTEST) is None


def test_a_version_ncu_will_not_say_is_none(monkeypatch, tmp_path):
    """A run records Nsight Compute's version; an ncu that prints none, or fails, leaves
    the result without one rather than failing the run."""
    from rooflint.measure import ncu
    silent = tmp_path / "ncu"
    silent.write_text("#!/bin/sh\nexit 3\n")
    silent.chmod(0o755)
    monkeypatch.setattr(ncu, "ncu_path", lambda: str(silent))
    ncu.version.cache_clear()
    assert ncu.version() is None
    ncu.version.cache_clear()
