"""Issue 50's figures: ``python3 benchmarks/speed.py OUT_DIR [--noise]``, after
``benchmarks/own_family.py OUT_DIR/own-family`` in the same device call.

Each program (PROGRAMS: an eager training step and a convolutional network's, examples/
apps) is run plain after an untimed run that warms the page cache, then profiled twice
in a fresh cache of rooflint's own (this machine's calibrations copied in): the first
profile measures every chosen kernel in pass 2 and keeps PyTorch's own kernels' counters
(formats/counter_cache.py); the second is served by them, the program unchanged. The
check: the second profile's verdict and top move of each kernel against the first's, on
the kernels both chose (their counters are the same; their times are pass 1's, taken
again). With ``--noise``, a third profile with ``--no-counter-cache`` stands beside the
first: how many verdicts two profiles that both measure every kernel give apart.

The family's figures are own_family.py's (first and second run against Nsight Compute's
full set on the same kernels), with the same check between its first and second runs.
Writes OUT_DIR/speed.json: one entry per program or family with ``work``, ``plain_s`` or
``ncu_full_s``, ``rooflint_s`` (the first), ``rooflint_second_s``, and the checks.

Pass 2 is by rotation where the program carries it (measure/rotation.py, the default); with
``--noise`` a fourth profile takes Nsight Compute's pass 2 (ROOFLINT_PASS_TWO=ncu, every
kernel measured): the slow path the rotation is checked against (check_ncu_against_first;
agreement_ncu_against_first: how many kernels' durations and counts agree), beside the
spread of two rotated profiles (check_full_against_first, agreement_full_against_first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, replace
from pathlib import Path

from own_family import commit, private_cache
from time_to_verdict import gpus, timed

from rooflint.analysis.counters import Counters
from rooflint.analysis.observation import Observation, analyse
from rooflint.engine.program import dominant_precision
from rooflint.formats.gpus import GpuSpec, find_spec, load_specs
from rooflint.formats.results import RunResult, VariantResult, read_result
from rooflint.measure.rotation import NCU_ASKED, PASS_TWO_VARIABLE, engine_library

PROFILE = [sys.executable, "-m", "rooflint", "profile"]
PROGRAMS = {
    "train-step-eager": ("an eager GPT-2-like training step (examples/apps/train_step.py)",
                         ["examples/apps/train_step.py"]),
    "convnet-eager": ("an eager ResNet-50 training step, cuDNN's benchmark on "
                      "(examples/apps/convnet_train.py)", ["examples/apps/convnet_train.py"]),
}


def identity(variant: dict) -> tuple:
    """A kernel as two profiles of one program both know it: its name, its grid's blocks
    and where its launches came from (display names are numbered in each profile's order,
    and cuDNN's benchmark may choose other kernels in another run)."""
    origins = sorted((o.get("operator") or "", o.get("line") or "", o.get("backward_of") or "")
                     for o in (variant.get("share") or {}).get("origins") or [])
    return (variant["description"], (variant.get("counters") or {}).get("grid_size"),
            tuple(origins))


def verdicts(document: Path) -> dict[tuple, tuple[str | None, str | None]]:
    """Each kernel's (or variant's) bound and top move, by its identity."""
    found = {}
    for family in json.loads(document.read_text())["families"]:
        for v in family["variants"]:
            verdict = v.get("verdict") or {}
            moves = verdict.get("moves") or []
            found[(family["name"], *identity(v))] = (verdict.get("bound"),
                                                     moves[0]["id"] if moves else None)
    return found


def check(first: Path, second: Path) -> dict:
    """The kernels both documents judge, and those whose bound or top move differ."""
    a, b = verdicts(first), verdicts(second)
    both = sorted(set(a) & set(b), key=str)
    changed = [{"kernel": name[1], "grid_blocks": name[2], "first": a[name],
                "second": b[name]} for name in both if a[name] != b[name]]
    return {"kernels": len(both), "only_first": len(set(a) - set(b)),
            "only_second": len(set(b) - set(a)), "changed": changed}


# What agreement() compares, by a document's counters' names: a metric agrees within 2 % or
# its floor (a few KiB of DRAM traffic on a launch that moves little).
AGREEMENT = {"duration_s": 0.0, "dram_read": 8192.0, "dram_write": 65536.0,
             "instructions": 1024.0, "flops": 0.0}


def agreement(first: Path, second: Path) -> dict:
    """On the kernels both documents measured, how many of each metric agree (AGREEMENT),
    and the median ratio of the second's durations to the first's: whether two passes 2
    measured the same launches alike (the verdicts follow from these)."""
    a, b = counters(first), counters(second)
    both = sorted(set(a) & set(b), key=str)
    found: dict = {"kernels": len(both)}
    for metric in AGREEMENT:
        found[metric] = sum(_agree(a[k][metric], b[k][metric], metric) for k in both)
    ratios = sorted(b[k]["duration_s"] / a[k]["duration_s"] for k in both
                    if a[k]["duration_s"] > 0)
    found["median_duration_ratio"] = round(ratios[len(ratios) // 2], 3) if ratios else None
    return found


def counts_check(first: Path, slow: Path) -> dict:
    """The verdicts of the kernels both documents measured at the same launch (their
    instructions agree, AGREEMENT's: a kernel launched at several sizes on one grid is one
    kernel, and which of its launches Nsight Compute profiles after cuDNN's benchmark
    depends on how many trials that run's benchmark made), each judged again (as
    engine/program.kernel_result judges it, without its caller's moves) from the slow
    path's counters and from the first's counts at the slow path's duration: how many
    verdicts the counts alone change, apart from how each path times a launch (Nsight
    Compute's replay times them 4-10 % longer than the program runs them, the rotation's
    CUPTI record within 1 %: duration_to_program)."""
    fast, full = read_result(first), read_result(slow)
    spec = find_spec(full.spec_id, load_specs())
    a, b = _variants(fast), _variants(full)
    both = sorted(set(a) & set(b), key=str)
    same = [key for key in both if _agree(a[key].counters.instructions,
                                          b[key].counters.instructions, "instructions")]
    changed = []
    for key in same:
        mine, theirs = a[key].counters, b[key].counters
        at_slow_time = replace(mine, duration_s=theirs.duration_s)
        verdicts = [_judged(a[key], counts, spec, full.gpu.sms) for counts in (at_slow_time,
                                                                              theirs)]
        if verdicts[0] != verdicts[1]:
            changed.append({"kernel": key[1], "grid_blocks": key[2], "first": verdicts[0],
                            "second": verdicts[1]})
    return {"kernels": len(both), "same_launch": len(same), "changed": changed}


def duration_to_program(document: Path) -> float | None:
    """The median, over the kernels a document measured, of the measured launch's duration
    against the kernel's median time in the program's run (pass 1's): how near pass 2 times
    a launch to how the program runs it (a kernel launched at several sizes on one grid
    spreads it; the median does not move for a few)."""
    ratios = [v.counters.duration_s / statistics.median(v.samples_s)
              for v in _variants(read_result(document)).values()
              if v.samples_s and v.counters.duration_s]
    return round(statistics.median(ratios), 3) if ratios else None


def _agree(a: float, b: float, metric: str) -> bool:
    """Whether two measurements of ``metric`` agree (AGREEMENT's floor, or 2 %)."""
    return abs(a - b) <= max(0.02 * abs(b), AGREEMENT[metric])


def _variants(result: RunResult) -> dict[tuple, VariantResult]:
    """The measured kernels of a read document, by identity."""
    return {(family.name, *identity(asdict(v))): v for family in result.families
            for v in family.variants if v.counters}


def _judged(kernel: VariantResult, counts: Counters, spec: GpuSpec, sms: int
            ) -> tuple[str | None, str | None]:
    """The bound and top move of a program's kernel judged from ``counts``."""
    analysis = analyse(Observation(
        name=kernel.name, precision=dominant_precision(counts, spec),
        samples_s=kernel.samples_s, counters=counts, model=None, grid_blocks=counts.grid_size,
        threads_per_block=0, launches=1, point_time_s=counts.duration_s, cached=True),
        spec, sms, None)
    verdict = analysis.verdict
    return (verdict.bound.value if verdict else None,
            verdict.moves[0].id if verdict and verdict.moves else None)


def counters(document: Path) -> dict[tuple, dict[str, float]]:
    """Each measured kernel's AGREEMENT metrics, by its identity (FLOPs added up over
    their precisions)."""
    found = {}
    for family in json.loads(document.read_text())["families"]:
        for v in family["variants"]:
            c = v.get("counters") or {}
            if c:
                found[(family["name"], *identity(v))] = {
                    **{m: float(c.get(m) or 0.0) for m in AGREEMENT if m != "flops"},
                    "flops": float(sum((c.get("flops") or {}).values()))}
    return found


def program_entry(out: Path, name: str, work: str, script: list[str], noise: bool) -> dict:
    plain = [sys.executable, *script]
    timed(out, f"{name}-warm-up", plain)
    entry = {"work": work, "plain_s": round(timed(out, f"{name}-plain", plain), 2)}
    with private_cache("rooflint-speed-"):
        runs = {}
        for run, asked, options in (
                ("first", [], []), ("second", [], []),
                *((("full", [], ["--no-counter-cache"]),
                   ("ncu", [f"{PASS_TWO_VARIABLE}={NCU_ASKED}"], ["--no-counter-cache"]))
                  if noise else ())):
            document = out / f"{name}-{run}.json"
            seconds = timed(out, f"{name}-{run}", ["env", *asked, *PROFILE, *options, "--json",
                                                   str(document), "--", *plain])
            runs[run] = (seconds, document)
    first_s, first = runs["first"]
    second_s, second = runs["second"]
    settings = json.loads(second.read_text())["settings"]
    measured = json.loads(first.read_text())["settings"]
    entry |= {"rooflint_s": round(first_s, 2), "rooflint_second_s": round(second_s, 2),
              "first_pass1_s": round(measured.get("pass1_wall_s") or 0.0, 2),
              "first_pass2_s": round(measured.get("pass2_wall_s") or 0.0, 2),
              "first_pass2_rotated": bool(measured.get("pass2_rotated")),
              "ratio": round(first_s / entry["plain_s"], 2),
              "ratio_second": round(second_s / entry["plain_s"], 2),
              "second_cached_kernels": len(settings.get("pass2_cached_kernels") or []),
              "second_pass2_s": round(settings.get("pass2_wall_s") or 0.0, 2),
              "check_second_against_first": check(first, second)}
    if noise:
        entry["full_s"] = round(runs["full"][0], 2)
        entry["check_full_against_first"] = check(first, runs["full"][1])
        entry["agreement_full_against_first"] = agreement(first, runs["full"][1])
        slow = json.loads(runs["ncu"][1].read_text())["settings"]
        ncu_s = runs["ncu"][0]
        entry |= {"ncu_s": round(ncu_s, 2), "ncu_ratio": round(ncu_s / entry["plain_s"], 2),
                  "ncu_pass2_s": round(slow.get("pass2_wall_s") or 0.0, 2),
                  "check_ncu_against_first": check(first, runs["ncu"][1]),
                  "agreement_ncu_against_first": agreement(first, runs["ncu"][1]),
                  "counts_check_ncu_against_first": counts_check(first, runs["ncu"][1]),
                  "duration_to_program": {"first": duration_to_program(first),
                                          "ncu": duration_to_program(runs["ncu"][1])}}
    return entry


def family_entry(out: Path) -> dict | None:
    """own_family.py's figures, where it ran into OUT_DIR/own-family."""
    report = out / "own-family" / "own-family.json"
    if not report.exists():
        return None
    figures = json.loads(report.read_text())
    runs = figures["runs"]
    return {"work": "a user's family of ten kernels over 256 MiB to 1 GiB, host references "
                    "(benchmarks/user_family)",
            "ncu_full_s": figures["ncu_full_set_s"],
            "rooflint_s": runs["first-run"]["seconds"],
            "rooflint_second_s": runs["second-run"]["seconds"],
            "ratio": round(runs["first-run"]["seconds"] / figures["ncu_full_set_s"], 2),
            "ratio_second": round(runs["second-run"]["seconds"] / figures["ncu_full_set_s"], 2),
            "check_second_against_first": check(out / "own-family" / "first-run.json",
                                                out / "own-family" / "second-run.json")}


def main(out: Path, noise: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    devices = gpus()
    engine_library()                 # built once, before the cache each program gets
    entries = {name: program_entry(out, name, work, script, noise)
               for name, (work, script) in PROGRAMS.items()}
    family = family_entry(out)
    if family:
        entries["user-family"] = family
    report = {"gpu": devices[0], "commit": commit(), "entries": entries}
    (out / "speed.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--noise", action="store_true",
                        help="a third profile of each program, every kernel measured again")
    arguments = parser.parse_args()
    main(arguments.out, arguments.noise)
