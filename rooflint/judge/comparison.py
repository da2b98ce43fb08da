"""Compare two measured variants: did the change move the dot the way it was meant to?

Speed is the ratio of median times with a 95 % bootstrap interval over the raw samples
(resampled with a fixed seed, so the same inputs give the same answer). ``decide`` is the
one time decision, shared with `rooflint gate`: ``faster`` or ``slower`` only when the
whole interval is past a minimum clear gap (``DEFAULT_MAX_SLOWDOWN``, 5 %, unless B's
manifest or ``--max-slowdown`` sets another: the gate's ``max_slowdown``, so the two agree),
``same`` when the estimate is within the gap, ``inconclusive`` when the estimate is past
it but the interval is not. Noise is not folded into the gap, where it would hide a real
change: its width is in the interval, and a side whose samples spread more than
``stats.NOISY_SPREAD`` is named in a warning.

Beside the speed: each side's time, FLOP/s and GB/s; where the time ratio came from (it is
exactly the bytes ratio times the bandwidth ratio, and the FLOPs ratio times the FLOP/s
ratio); the movement on the roofline (right by the ratio of observed intensities, up by
the ratio of achieved FLOP/s, which roof applies, the verdict change); whether a byte cut
paid; bytes and counted FLOPs side by side, correctness of both, and whether the newer
variant's stated expectation held.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rooflint.formats.thresholds import DEFAULT_MAX_SLOWDOWN
from rooflint.analysis.evidence import Bound
from rooflint.common.errors import RooflintError
from rooflint.common.sense import Vocabulary
from rooflint.formats.results import VariantResult
from rooflint.formats.status import Status

MIN_CLEAR_GAP = 0.01    # where a ratio counts as "the same" in words
BOOTSTRAP_ROUNDS = 2000
CONFIDENCE = 0.95
ROOF_NAMES = {"dram": "DRAM", "l2": "L2", "compute": "compute"}
BYTE_CUT = 0.8          # DRAM bytes under this fraction of the other's: a byte cut to judge
BYTE_CUT_SLACK = 1.25   # GB/s within this factor of the other's: the time followed the bytes


class Decision(Vocabulary):
    """The time decision for B against A (``decide``), in compare and gate alike."""

    FASTER = "faster"               # the whole interval is past the gap, towards B
    SLOWER = "slower"               # the whole interval is past the gap, towards A
    SAME = "same"                   # the estimate is within the gap
    INCONCLUSIVE = "inconclusive"   # the estimate is past the gap, the interval is not


@dataclass
class Speedup:
    ratio: float            # time A / time B: above 1 means B is faster
    low: float              # the interval on that ratio
    high: float
    gap: float              # the minimum clear gap the decision used (relative)
    decision: Decision      # B relative to A


@dataclass
class Figures:
    """One side as `compare` shows it: time with its spread, FLOP/s and DRAM GB/s."""
    time_s: float
    spread: float                   # IQR / median
    samples: int
    noisy: bool
    flop_rate: float | None         # FLOP/s; None for a kernel with no arithmetic
    bandwidth: float                # DRAM bytes/s, on the point's bytes source


@dataclass
class Attribution:
    """Where the time ratio came from; each factor is B / A.

    speedup = bandwidth / bytes = flop_rate / flops, exactly (all from the same medians)."""
    speedup: float                  # time A / time B
    bytes: float                    # DRAM bytes
    bandwidth: float                # DRAM bytes/s
    flops: float | None             # None when either side does no arithmetic
    flop_rate: float | None

    @property
    def reading(self) -> str:
        """Which move the factors add up to, on the roofline. GB/s within BYTE_CUT_SLACK of
        A's means the time followed the bytes: the same test as a byte cut that paid."""
        fewer = -_direction(self.bytes)                                # +1: B moves fewer
        if fewer == 0:
            quicker = _direction(self.bandwidth)
            return {1: "more work per second at the same bytes: an up move", 0: "nothing moved",
                    -1: "less work per second at the same bytes: a down move"}[quicker]
        if 1 / BYTE_CUT_SLACK <= self.bandwidth <= BYTE_CUT_SLACK:
            return f"the time followed the bytes: a {'right' if fewer > 0 else 'left'} move"
        if (self.bandwidth > 1) == (fewer > 0):
            return ("fewer bytes and more GB/s: right and up" if fewer > 0
                    else "more bytes and less GB/s: left and down")
        overall = {1: ": an up move", 0: "", -1: ": a down move"}[_direction(self.speedup)]
        return f"the time did not follow the bytes{overall}"

    @property
    def sentence(self) -> str:
        """'13.65x fewer DRAM bytes at 2.67x less GB/s; the same FLOPs at 5.11x more FLOP/s
        (the time did not follow the bytes: an up move)'."""
        text = f"{_count(self.bytes, 'DRAM bytes')} at {_rate(self.bandwidth, 'GB/s')}"
        if self.flops is not None:
            text += f"; {_count(self.flops, 'FLOPs')} at {_rate(self.flop_rate, 'FLOP/s')}"
        return f"{text} ({self.reading})"


@dataclass
class Comparison:
    a: str
    b: str
    speedup: Speedup
    figures: dict[str, Figures]                # side -> time, FLOP/s, GB/s
    attribution: Attribution | None          # None when a side moved no DRAM bytes
    movement: dict[str, float | str | None]
    bytes: dict[str, dict[str, float]]        # side -> {source: bytes}
    flops: dict[str, dict[str, float]]
    correctness: dict[str, str]                # side -> status and worst error
    expectation: str | None                    # whether B's stated prediction held
    warnings: list[str] = field(default_factory=list)   # a noisy side, named
    notes: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        return self.sentence_naming(self.a, self.b)

    def sentence_naming(self, a: str, b: str) -> str:
        """The verdict on speed, the sides called ``a`` and ``b`` (a terminal's short
        names for a profile's 90-character kernel names)."""
        s = self.speedup
        interval = f"95 % interval {s.low:.2f}-{s.high:.2f}"
        gap = f"{100 * s.gap:.1f} % minimum clear gap"
        if s.decision == Decision.SAME:
            return (f"{b} and {a} take the same time ({s.ratio:.3f}x, {interval}; "
                    f"within the {gap})")
        if s.decision == Decision.INCONCLUSIVE:
            return (f"{b} vs {a}: inconclusive ({s.ratio:.3f}x, but the {interval} "
                    f"is not clear of the {gap}): re-measure")
        faster = s.decision == Decision.FASTER
        value, low, high = ((s.ratio, s.low, s.high) if faster
                            else (1 / s.ratio, 1 / s.high, 1 / s.low))
        return (f"{b} is {value:.2f}x {s.decision} than {a} (95 % interval {low:.2f}-"
                f"{high:.2f}; {gap})")


def _direction(ratio: float) -> int:
    """+1, -1, or 0 for a ratio within the minimum clear gap of 1."""
    if 1 / (1 + MIN_CLEAR_GAP) <= ratio <= 1 + MIN_CLEAR_GAP:
        return 0
    return 1 if ratio > 1 else -1


def _count(ratio: float, what: str) -> str:
    if _direction(ratio) == 0:
        return f"the same {what}"
    return f"{max(ratio, 1 / ratio):.2f}x {'more' if ratio > 1 else 'fewer'} {what}"


def _rate(ratio: float, what: str) -> str:
    if _direction(ratio) == 0:
        return f"the same {what}"
    return f"{max(ratio, 1 / ratio):.2f}x {'more' if ratio > 1 else 'less'} {what}"


def decide(ratio: float, low: float, high: float, gap: float) -> Decision:
    """The time decision for B against A, for `compare` and `rooflint gate` alike.

    ``ratio`` is time A / time B with its interval ``low``-``high``; ``gap`` is the
    smallest relative change worth a word. Clear only when the whole interval is past it."""
    clear = 1 + gap
    if low > clear:
        return Decision.FASTER
    if high < 1 / clear:
        return Decision.SLOWER
    if 1 / clear <= ratio <= clear:
        return Decision.SAME
    return Decision.INCONCLUSIVE


def speedup(samples_a: list[float], samples_b: list[float], gap: float = DEFAULT_MAX_SLOWDOWN,
            seed: int = 0) -> Speedup:
    """Ratio of median times A/B with a bootstrap interval, decided against ``gap``."""
    a, b = np.asarray(samples_a, dtype=float), np.asarray(samples_b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise RooflintError("both sides need timing samples to compare speed")
    rng = np.random.default_rng(seed)
    ratios = (np.median(rng.choice(a, (BOOTSTRAP_ROUNDS, a.size)), axis=1)
              / np.median(rng.choice(b, (BOOTSTRAP_ROUNDS, b.size)), axis=1))
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = (float(x) for x in np.percentile(ratios, [tail, 100 - tail]))
    ratio = float(np.median(a) / np.median(b))
    return Speedup(ratio, low, high, gap, decide(ratio, low, high, gap))


def compare(a: VariantResult, b: VariantResult, a_label: str | None = None,
            b_label: str | None = None, gap: float | None = None) -> Comparison:
    """B against A: speed, where it came from, movement on the chart, bytes, FLOPs,
    correctness, prediction. The time decision uses the gap `gate` would (``gap``, else
    B's manifest threshold, else DEFAULT_MAX_SLOWDOWN), so the two never disagree."""
    if gap is None:
        gap = b.gate.get("max_slowdown", DEFAULT_MAX_SLOWDOWN)
    for side in (a, b):
        if side.status != Status.OK or not side.samples_s or not (side.time and side.point):
            raise RooflintError(f"{side.name} has no speed to compare ({side.status}: "
                                f"{side.message or 'no samples'})")
    a_name, b_name = a_label or a.name, b_label or b.name
    result = Comparison(
        a=a_name, b=b_name, speedup=speedup(a.samples_s, b.samples_s, gap),
        figures={a_name: figures(a), b_name: figures(b)},
        attribution=attribution(a, b) if a.point.dram_bytes and b.point.dram_bytes else None,
        movement=movement(a, b), bytes={a_name: a.dram_bytes, b_name: b.dram_bytes},
        flops={a_name: a.flops, b_name: b.flops},
        correctness={a_name: _correctness(a), b_name: _correctness(b)},
        expectation=_expectation(a, b))
    result.warnings = [f"side {role}, {name}, is noisy: {v.time.noise}; its median can move "
                       f"between runs by more than the interval shows: re-measure before "
                       f"trusting the ratio"
                       for role, name, v in (("A", a_name, a), ("B", b_name, b)) if v.time.noisy]
    if verdict := byte_cut(b, a):
        result.notes.append(verdict)
    if a.point.bytes_source != b.point.bytes_source:
        result.notes.append(f"bytes come from different sources ({a.point.bytes_source} vs "
                            f"{b.point.bytes_source}): the horizontal movement is not "
                            "like for like")
    return result


def figures(v: VariantResult) -> Figures:
    p = v.point
    return Figures(time_s=v.time.median_s, spread=v.time.spread, samples=v.time.n,
                   noisy=v.time.noisy, flop_rate=p.achieved_flops if p.flops else None,
                   bandwidth=p.achieved_bandwidth)


def attribution(a: VariantResult, b: VariantResult) -> Attribution:
    pa, pb = a.point, b.point
    arithmetic = pa.flops > 0 and pb.flops > 0
    return Attribution(
        speedup=pa.time_s / pb.time_s, bytes=pb.dram_bytes / pa.dram_bytes,
        bandwidth=pb.achieved_bandwidth / pa.achieved_bandwidth,
        flops=pb.flops / pa.flops if arithmetic else None,
        flop_rate=pb.achieved_flops / pa.achieved_flops if arithmetic else None)


def _ratio(after: float, before: float) -> float | None:
    """after / before; None when a side has none of it (a copy does no arithmetic, a side
    may move no DRAM bytes) or an unbounded amount (the intensity of a side that moved no
    DRAM bytes): no proportion between the two to state."""
    if not (after and before) or math.isinf(after) or math.isinf(before):
        return None
    return after / before


def applied_roof(v: VariantResult) -> str:
    """The roof that binds: L2's when the verdict found the data living in L2, else DRAM's
    or the compute roof by the side of the ridge."""
    if v.verdict and "l2_bound" in v.verdict.evidence:
        return "l2"
    return v.point.limiting_roof


def movement(a: VariantResult, b: VariantResult) -> dict[str, float | str | None]:
    """How the dot moved from A to B: right (intensity), up (FLOP/s), roof, verdict."""
    pa, pb = a.point, b.point
    return {
        "right": _ratio(pb.observed_ai, pa.observed_ai),   # x in observed AI
        "up": _ratio(pb.achieved_flops, pa.achieved_flops),  # x in achieved FLOP/s
        "bandwidth": _ratio(pb.achieved_bandwidth, pa.achieved_bandwidth),
        "roof_before": applied_roof(a), "roof_after": applied_roof(b),
        "verdict_before": a.verdict.bound, "verdict_after": b.verdict.bound,
        "roof_fraction_before": pa.roof_fraction, "roof_fraction_after": pb.roof_fraction,
    }


def describe_movement(m: dict[str, float | str | None]) -> str:
    def step(ratio: float, more: str, less: str, what: str) -> str:
        if _direction(ratio) == 0:
            return f"no {what} change"
        return f"{more if ratio > 1 else less} by {max(ratio, 1 / ratio):.2f}x in {what}"
    parts = []
    if m["right"] is not None:
        parts.append(step(m["right"], "right", "left", "observed intensity"))
    parts.append(step(m["up"], "up", "down", "FLOP/s") if m["up"] is not None
                 else step(m["bandwidth"], "up", "down", "bandwidth") if m["bandwidth"] is not None
                 else "no DRAM traffic on one side")
    before, after = ROOF_NAMES[m["roof_before"]], ROOF_NAMES[m["roof_after"]]
    roof = (f"the {after} roof applies" if before == after
            else f"now under the {after} roof (was {before})")
    verdict = (f"still {m['verdict_after']}-bound" if m["verdict_before"] == m["verdict_after"]
               else f"{m['verdict_before']}-bound -> {m['verdict_after']}-bound")
    return f"{', '.join(parts)}; {roof}; {verdict}"


def _correctness(v: VariantResult) -> str:
    worst = max((c.rel_l2 for c in v.checks), default=None)
    return f"{v.status.upper()}" + (f" (relative error {worst:.1e})" if worst is not None else "")


def _expectation(a: VariantResult, b: VariantResult) -> str | None:
    """Did B's stated prediction against A hold? (faster_than A, and its bound.)"""
    if b.expect.get("faster_than") != a.name:
        return None
    held = b.time.median_s < a.time.median_s
    text = f"{b.name} was predicted faster than {a.name}: {'held' if held else 'missed'}"
    moved = movement(a, b)
    if b.expect.get("move"):
        ratio = moved["right"] if b.expect["move"] == "right" else moved["up"]
        went = ratio is not None and _direction(ratio) > 0
        text += (f"; predicted to move {b.expect['move']}: "
                 f"{'held' if went else 'missed'}" + (f" ({ratio:.2f}x)" if ratio else ""))
    if b.expect.get("bound") and b.verdict:
        match = b.expect["bound"] == b.verdict.bound
        text += (f"; predicted {b.expect['bound']}-bound: "
                 f"{'held' if match else 'missed, measured ' + b.verdict.bound}")
    return text


def byte_cut(v: VariantResult, other: VariantResult) -> str | None:
    """If ``v`` moves clearly fewer DRAM bytes than ``other``: how much of the time change
    the cut explains and, where the time did not follow the bytes, why. Every figure is
    stated beside the time change itself, so the verdict cannot read as contradicting it
    (a 5x speedup is never followed by a bare "did not pay")."""
    if not (v.point.dram_bytes and other.point.dram_bytes):
        return None                     # a side that moved no DRAM bytes cut nothing
    cut = other.point.dram_bytes / v.point.dram_bytes
    if cut <= 1 / BYTE_CUT:
        return None
    speedup = other.point.time_s / v.point.time_s
    bandwidth = speedup / cut                     # v's GB/s against other's
    if bandwidth < 1 / BYTE_CUT_SLACK:
        return (f"the byte cut did not set the time: {cut:.2f}x fewer DRAM bytes, "
                f"{_time_change(speedup)}; {_why_bytes_were_not_the_limit(v, other)}")
    if bandwidth > BYTE_CUT_SLACK:
        return (f"the byte cut paid: {cut:.2f}x fewer DRAM bytes explain {cut:.2f}x of the "
                f"{speedup:.2f}x less time; the rest is {bandwidth:.2f}x more GB/s")
    return f"the byte cut paid: {cut:.2f}x fewer DRAM bytes, {_time_change(speedup)}"


def _time_change(speedup: float) -> str:
    if _direction(speedup) == 0:
        return "the same time"
    return f"{max(speedup, 1 / speedup):.2f}x {'less' if speedup > 1 else 'more'} time"


def _why_bytes_were_not_the_limit(v: VariantResult, other: VariantResult) -> str:
    dram = f"DRAM at {100 * other.point.dram_fraction:.0f}% of its roof"
    if applied_roof(other) == "l2":
        return f"{other.name} was bound by L2 ({dram}), so DRAM bytes were not its limit"
    if other.verdict.bound != Bound.BANDWIDTH:
        return f"{other.name} was {other.verdict.bound}-bound ({dram}), so bytes were not its limit"
    return (f"{v.name} keeps DRAM less busy ({100 * v.point.dram_fraction:.0f}% of its roof "
            f"against {100 * other.point.dram_fraction:.0f}%)")


def reconcile(v: VariantResult, other: VariantResult) -> str | None:
    """The book's "predict, measure, reconcile" against the variant it was meant to beat:
    how bytes, intensity and time moved, and whether a byte cut paid, with the reason."""
    if not (v.point and other.point):
        return None
    ratios = {"DRAM bytes": _ratio(v.point.dram_bytes, other.point.dram_bytes),
              "observed AI": _ratio(v.point.observed_ai, other.point.observed_ai),
              "time": _ratio(v.time.median_s, other.time.median_s)}
    text = f"vs {other.name}: " + ", ".join(f"{what} {ratio:.2f}x"
                                             for what, ratio in ratios.items() if ratio)
    verdict = byte_cut(v, other)
    return f"{text}; {verdict}" if verdict else text
