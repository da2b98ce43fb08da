"""`rooflint gate`: baseline vs current, one decision per variant, without crying wolf.

Time is judged by `compare`'s own decision (comparison.decide: the bootstrap interval
against a minimum clear gap), with ``max_slowdown`` (5 % by default) as the gap, so the two
commands cannot disagree on a pair: ``regressed`` is compare's ``slower`` (even the fast
end of the interval is past the gap), ``improved`` its ``faster``, ``pass`` its ``same``
(the estimate within the gap), ``inconclusive`` the estimate past the gap but the interval
not. A noisy side (stats.NOISY_SPREAD) is a warning, never a wider gap. The
deterministic signals are tight: measured DRAM bytes and counted FLOPs may grow by at most
2 %, registers per thread and spill bytes not at all. A wrong result always regresses. A
variant that leaves its roof (bandwidth-bound becoming chain-bound) is reported even when
its time is within the threshold. Variants only in the current run are ``new``; ones only
in the baseline, or skipped in this run, are ``missing`` and fail the gate (a vanished
kernel hides whatever it did). A baseline or result the gate could not judge by (NaN
samples, no entries, an unknown status) never reaches it: reading refuses it (exit 2).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from rooflint.analysis.stats import TimeStats
from rooflint.formats.baseline import Baseline, Entry
from rooflint.common.errors import RooflintError
from rooflint.common.vocabularies import GpuMismatch
from rooflint.formats.gate_outcomes import Outcome, Report, Row
from rooflint.formats.status import Status
from rooflint.formats.thresholds import DEFAULTS
from rooflint.judge.comparison import Decision, speedup

SPILL_SLACK_BYTES = 1024
# compare's time decision -> the gate's
OUTCOME_OF = {Decision.SLOWER: Outcome.REGRESSED, Decision.FASTER: Outcome.IMPROVED,
              Decision.SAME: Outcome.PASS, Decision.INCONCLUSIVE: Outcome.INCONCLUSIVE}


def check_gpu(baseline: Baseline, current: Baseline, mismatch: GpuMismatch) -> str | None:
    """Refuse a baseline from another GPU model (or only warn); note driver/clock changes."""
    if baseline.gpu != current.gpu:
        message = (f"the baseline was measured on {baseline.gpu}, this run on {current.gpu}")
        if mismatch != GpuMismatch.WARN:
            raise RooflintError(f"{message}; make a baseline on this GPU (rooflint gate "
                                f"--update) or pass --gpu-mismatch warn")
        return f"GPU MISMATCH: {message}: times are not comparable"
    notes = []
    if baseline.driver != current.driver:
        notes.append(f"driver {baseline.driver} -> {current.driver}")
    if baseline.sm_clock_mhz and current.sm_clock_mhz and \
            abs(current.sm_clock_mhz / baseline.sm_clock_mhz - 1) > 0.03:
        notes.append(f"SM clock {baseline.sm_clock_mhz:.0f} -> {current.sm_clock_mhz:.0f} MHz")
    return "; ".join(notes) or None


def evaluate(baseline: Baseline, current: Baseline, overrides: dict[str, float] | None = None,
             mismatch: GpuMismatch = GpuMismatch.ERROR) -> Report:
    """One row per variant in either side; ``overrides`` (from the command line) beat the
    manifest's thresholds, which beat the defaults."""
    gpu_note = check_gpu(baseline, current, mismatch)
    before = {e.key: e for e in baseline.entries}
    now = {e.key: e for e in current.entries}
    rows = []
    for key in sorted(before.keys() | now.keys()):
        if key not in now:
            rows.append(Row(*key, Outcome.MISSING, ["in the baseline, not in this run"]))
        elif key not in before:
            rows.append(Row(*key, Outcome.NEW, warnings=["not in the baseline"]))
        else:
            thresholds = {**DEFAULTS, **now[key].gate, **(overrides or {})}
            rows.append(_decide(before[key], now[key], thresholds))
    return Report(rows, gpu_note)


def _decide(base: Entry, cur: Entry, t: dict[str, float]) -> Row:
    row = Row(cur.family, cur.variant, Outcome.PASS, thresholds=t)
    if cur.status in (Status.FAIL, Status.ERROR):
        row.outcome = Outcome.REGRESSED
        row.reasons.append(f"correctness: {cur.status.upper()}")
        return row
    if base.status == Status.OK and cur.status == Status.SKIPPED:
        row.outcome = Outcome.MISSING         # not measured now: as unjudged as a vanished kernel
        row.reasons.append("skipped in this run: not measured (the result says why)")
        return row
    if cur.status != Status.OK or base.status != Status.OK:
        row.warnings.append(f"not compared: baseline {base.status}, now {cur.status}")
        return row
    row.outcome = _time(base, cur, t["max_slowdown"], row)
    _noise(base, cur, row)
    _counters(base, cur, t, row)
    if base.bound and cur.bound and base.bound != cur.bound:
        row.warnings.append(f"left its roof: {base.bound}-bound -> {cur.bound}-bound")
    return row


def _time(base: Entry, cur: Entry, limit: float, row: Row) -> Outcome:
    s = speedup(base.samples_s, cur.samples_s, gap=limit)   # ratio = base time / current time
    row.slowdown, row.interval = 1 / s.ratio, (1 / s.high, 1 / s.low)
    fast_end, slow_end = row.interval
    change = f"time {100 * (row.slowdown - 1):+.1f}%"
    if s.decision == Decision.SLOWER:
        row.reasons.append(f"{change} (interval {100 * (fast_end - 1):+.1f}% to "
                           f"{100 * (slow_end - 1):+.1f}%) > {100 * limit:.0f}%")
    elif s.decision == Decision.INCONCLUSIVE:
        nearest = fast_end if row.slowdown > 1 else slow_end
        row.reasons.append(f"{change} but the interval reaches {100 * (nearest - 1):+.1f}%: "
                           f"re-measure")
    return OUTCOME_OF[s.decision]


def _noise(base: Entry, cur: Entry, row: Row) -> None:
    for side, samples in (("baseline", base.samples_s), ("this run", cur.samples_s)):
        stats = TimeStats.of(samples)
        if stats.noisy:
            row.warnings.append(f"noisy {side}: {stats.noise}")


def _counters(base: Entry, cur: Entry, t: dict[str, float], row: Row) -> None:
    def grew(name: str, before: float | None, after: float | None, limit: float) -> None:
        if before and after is not None and after > before * (1 + limit):
            row.reasons.append(f"{name} +{100 * (after / before - 1):.1f}% > {100 * limit:.0f}%")
            row.outcome = Outcome.REGRESSED
    grew("DRAM bytes", base.dram_bytes, cur.dram_bytes, t["max_bytes_growth"])
    grew("counted FLOPs", base.counted_flops, cur.counted_flops, t["max_flops_growth"])
    if base.registers is not None and cur.registers is not None and cur.registers > base.registers:
        row.reasons.append(f"registers per thread {base.registers} -> {cur.registers}")
        row.outcome = Outcome.REGRESSED
    if base.spill_bytes is not None and cur.spill_bytes is not None \
            and cur.spill_bytes > base.spill_bytes + SPILL_SLACK_BYTES:
        row.reasons.append(f"spill traffic {base.spill_bytes:.0f} -> {cur.spill_bytes:.0f} bytes")
        row.outcome = Outcome.REGRESSED


Remeasure = Callable[[str, str], tuple[list[float], list[float]]]


def recheck(report: Report, remeasure: Remeasure) -> Report:
    """Time again the variants whose time looks worse, interleaved with the baseline's code
    rebuilt (``remeasure(family, variant)`` -> (baseline samples, current samples), both
    taken now), and keep that verdict: drift between the two runs cannot fail the gate."""
    rows = []
    for row in report.rows:
        suspect = row.outcome in (Outcome.REGRESSED, Outcome.INCONCLUSIVE) and \
            any(r.startswith("time") for r in row.reasons) and row.slowdown > 1
        if not suspect:
            rows.append(row)
            continue
        base_samples, now_samples = remeasure(row.family, row.variant)
        standing = [r for r in row.reasons if not r.startswith("time")]  # counters, correctness
        fresh = replace(row, reasons=list(standing), warnings=row.warnings + [
            f"re-measured interleaved with the baseline's code (first run: {row.outcome})"])
        entry = Entry(row.family, row.variant, Status.OK, base_samples, None, None, None, None,
                      None)
        outcome = _time(entry, replace(entry, samples_s=now_samples),
                        row.thresholds["max_slowdown"], fresh)
        fresh.outcome = Outcome.REGRESSED if standing else outcome
        rows.append(fresh)
    return Report(rows, report.gpu_note)
