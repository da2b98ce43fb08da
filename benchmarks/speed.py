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
import sys
import tempfile
from pathlib import Path

from own_family import commit, use_private_cache
from time_to_verdict import gpus, timed

from rooflint.common.paths import cache_dir
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
    for metric, floor in AGREEMENT.items():
        found[metric] = sum(abs(a[k][metric] - b[k][metric])
                            <= max(0.02 * abs(b[k][metric]), floor) for k in both)
    ratios = sorted(b[k]["duration_s"] / a[k]["duration_s"] for k in both
                    if a[k]["duration_s"] > 0)
    found["median_duration_ratio"] = round(ratios[len(ratios) // 2], 3) if ratios else None
    return found


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
    beside = cache_dir().parent
    beside.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rooflint-speed-", dir=beside) as cache:
        use_private_cache(Path(cache))
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
                  "agreement_ncu_against_first": agreement(first, runs["ncu"][1])}
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
