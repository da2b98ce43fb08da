"""What a profile's verdicts would lose without a group of counters, on results already
taken: each kernel with counters is judged again from its recorded counters less the
group, and compared with its judgement from all of them.

``python3 benchmarks/counter_trade.py RESULT.json...`` (no GPU): per result and group, how
many kernels change bound, kernel-level top move and named causes, and which evidence
flags go. Beside benchmarks/replay_passes.py (what leaving a group out saves in replay
passes) it prices each saving in verdicts: on the committed training steps, leaving out
the stalls and access patterns (8 passes to 5) takes every kernel's stall-named cause.
"""

from __future__ import annotations

import sys
from collections import Counter as Tally
from dataclasses import dataclass, replace
from typing import Callable

from rooflint.analysis.counters import Counters
from rooflint.analysis.observation import Observation, analyse
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.formats.results import VariantResult, read_result

# A group of replay_passes.GROUPS as the analysis reads it: its fields of Counters, unread.
LEFT_OUT: dict[str, Callable[[Counters], Counters]] = {
    "stalls": lambda c: replace(c, stalls={}),
    "access patterns": lambda c: replace(
        c, shared_stores=0.0, shared_store_wavefronts=0.0, store_bank_conflicts=0.0,
        global_load_sectors=0.0, global_store_sectors=0.0, global_load_requests=0.0,
        global_store_requests=0.0),
}
TRADES = (("stalls",), ("access patterns",), ("access patterns", "stalls"))


@dataclass(frozen=True)
class Judgement:
    bound: str
    flags: frozenset[str]
    top_move: str | None


def judged(kernel: VariantResult, counters: Counters, spec: GpuSpec) -> Judgement:
    """The kernel judged as a profile judges it, from ``counters`` (no calibration: both
    sides of a comparison alike)."""
    verdict = analyse(Observation(
        name=kernel.name, precision=kernel.precision, samples_s=kernel.samples_s,
        counters=counters, model=None, grid_blocks=counters.grid_size, threads_per_block=0,
        launches=1, point_time_s=counters.duration_s, cached=True), spec, spec.sms,
        None).verdict
    return Judgement(str(verdict.bound), frozenset(verdict.evidence),
                     verdict.moves[0].id if verdict.moves else None)


def trade(kernels: list[VariantResult], spec: GpuSpec, groups: tuple[str, ...]) -> dict:
    """How many of ``kernels`` change, judged without ``groups``, and the flags they lose."""
    bound = moves = causes = 0
    lost: Tally[str] = Tally()
    for kernel in kernels:
        less = kernel.counters
        for group in groups:
            less = LEFT_OUT[group](less)
        full, cut = judged(kernel, kernel.counters, spec), judged(kernel, less, spec)
        bound += full.bound != cut.bound
        moves += full.top_move != cut.top_move
        causes += full.flags != cut.flags
        lost.update(full.flags - cut.flags)
    return {"bound": bound, "top move": moves, "causes": causes, "flags lost": dict(lost)}


def main(paths: list[str]) -> None:
    specs = load_specs()
    for path in paths:
        result = read_result(path)
        spec = find_spec(result.spec_id, specs)
        kernels = [v for f in result.families for v in f.variants if v.counters]
        print(f"{path}: {len(kernels)} kernels with counters")
        for groups in TRADES:
            changed = trade(kernels, spec, groups)
            print(f"  less {' and '.join(groups):28} bound {changed['bound']:2}, top move "
                  f"{changed['top move']:2}, causes {changed['causes']:2}; flags lost "
                  f"{changed['flags lost']}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 benchmarks/counter_trade.py RESULT.json...")
    main(sys.argv[1:])
