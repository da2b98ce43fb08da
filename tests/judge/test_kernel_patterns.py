"""The rotation's engine is told each chosen kernel as a line ``pattern<TAB>grid<TAB>block``
(measure/rotation.py, rotation_engine.cpp): a pattern is built from a kernel's names in pass
1's trace, which the program wrote, so whatever those names hold, a pattern is names,
lengths and ``.*`` alone: no tab or newline to split the engine's lines, nothing a regular
expression reads as more than a literal."""

from __future__ import annotations

import re

import pytest

from rooflint.judge.kernel_times import KernelTime
from rooflint.judge.pass2_patterns import kernel_patterns, mangled_patterns, selection_of

HOSTILE = [
    "void evil<float>\t(int)\nnext line",
    "kernel\t\n",
    "void at::native::k<(anonymous namespace)::F$(.*)+?[x]|y{2}>(int)",
    'triton_"; rm -rf / #',
    "\x1b[31mred\x1b[0m_kernel",
    "void k<\u00e9\u00e8, 3u>(float*)",
    "^$.*+?()[]{}|\\",
]
SAFE = re.compile(r"\^?(?:\d*\w+|\.\*)+\$?")


@pytest.mark.parametrize("name", HOSTILE)
def test_a_kernels_pattern_is_names_and_wildcards_whatever_its_trace_name(name):
    chosen = [KernelTime(name, "(4, 1, 1)", [1e-6], block="(128, 1, 1)")]
    timed = [*chosen, KernelTime(name + "2", "(4, 1, 1)", [1e-6], block="(128, 1, 1)")]
    for pattern in kernel_patterns(chosen, timed).values():
        assert "\t" not in pattern and "\n" not in pattern
        assert SAFE.fullmatch(pattern), pattern
        re.compile(pattern)


def test_nsight_computes_selection_is_each_kernels_pattern_once():
    """Two shapes of one kernel share a pattern; Nsight Compute is asked for it once."""
    chosen = [KernelTime("void k<float>(int)", grid, [1e-6]) for grid in ("(4, 1, 1)", "(8, 1, 1)")]
    by_kernel = kernel_patterns(chosen, chosen)
    assert len(by_kernel) == 2 and len(set(by_kernel.values())) == 1
    assert selection_of(by_kernel) == mangled_patterns(chosen, chosen) == ["1k"]
