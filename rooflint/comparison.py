"""Compare two measured variants: did the change move the dot the way it was meant to?

Speed is the ratio of median times with a 95 % bootstrap interval over the raw samples
(resampled with a fixed seed, so the same inputs give the same answer). The decision is
noise-aware in the spirit of nvbench's robust compare: ``faster`` or ``slower`` only when
the whole interval clears the noise floor, ``same`` when the interval holds 1 and the
ratio itself is inside the floor, and ``inconclusive`` otherwise. The noise floor is the larger of 1 % and the samples' own
relative spread, and is always stated.

Beside the speed: the movement on the roofline (right by the ratio of observed
intensities, up by the ratio of achieved FLOP/s, which roof applies now, the verdict
change), bytes and counted FLOPs side by side, correctness of both, and whether the
newer variant's stated expectation held.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rooflint.errors import RooflintError
from rooflint.results import VariantResult

MIN_NOISE_FLOOR = 0.01
BOOTSTRAP_ROUNDS = 2000
CONFIDENCE = 0.95


@dataclass
class Speedup:
    ratio: float            # time A / time B: above 1 means B is faster
    low: float              # the interval on that ratio
    high: float
    noise_floor: float      # relative; |ratio - 1| must clear it
    decision: str           # faster | slower | same | inconclusive (B relative to A)


@dataclass
class Comparison:
    a: str
    b: str
    speedup: Speedup
    movement: dict[str, float | str | None]
    bytes: dict[str, dict[str, float]]        # side -> {source: bytes}
    flops: dict[str, dict[str, float]]
    correctness: dict[str, str]                # side -> status and worst error
    expectation: str | None                    # whether B's stated prediction held
    notes: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        s = self.speedup
        interval = f"95 % interval {s.low:.2f}-{s.high:.2f}"
        if s.decision == "same":
            return (f"{self.b} and {self.a} take the same time ({s.ratio:.3f}x, {interval}, "
                    f"inside the {100 * s.noise_floor:.1f} % noise floor)")
        if s.decision == "inconclusive":
            return (f"{self.b} vs {self.a}: inconclusive ({s.ratio:.3f}x, {interval}; noise "
                    f"floor {100 * s.noise_floor:.1f} %)")
        word, value = (("faster", s.ratio) if s.decision == "faster" else ("slower", 1 / s.ratio))
        low, high = ((s.low, s.high) if word == "faster" else (1 / s.high, 1 / s.low))
        return (f"{self.b} is {value:.2f}x {word} than {self.a} (95 % interval {low:.2f}-"
                f"{high:.2f}; noise floor {100 * s.noise_floor:.1f} %)")


def _relative_spread(samples: np.ndarray) -> float:
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / median) if median else 0.0


def speedup(samples_a: list[float], samples_b: list[float], seed: int = 0) -> Speedup:
    """Ratio of median times A/B with a bootstrap interval and a noise-aware decision."""
    a, b = np.asarray(samples_a, dtype=float), np.asarray(samples_b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise RooflintError("both sides need timing samples to compare speed")
    rng = np.random.default_rng(seed)
    ratios = (np.median(rng.choice(a, (BOOTSTRAP_ROUNDS, a.size)), axis=1)
              / np.median(rng.choice(b, (BOOTSTRAP_ROUNDS, b.size)), axis=1))
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    floor = max(MIN_NOISE_FLOOR, _relative_spread(a), _relative_spread(b))
    ratio_of_medians = float(np.median(a) / np.median(b))
    if low > 1 + floor:
        decision = "faster"
    elif high < 1 / (1 + floor):
        decision = "slower"
    elif low <= 1 <= high and 1 / (1 + floor) <= ratio_of_medians <= 1 + floor:
        decision = "same"
    else:
        decision = "inconclusive"
    return Speedup(ratio_of_medians, float(low), float(high), floor, decision)


def compare(a: VariantResult, b: VariantResult, a_label: str | None = None,
            b_label: str | None = None) -> Comparison:
    """B against A: speed, movement on the chart, bytes, FLOPs, correctness, prediction."""
    for side in (a, b):
        if side.status != "ok" or not side.samples_s:
            raise RooflintError(f"{side.name} has no speed to compare ({side.status}: "
                                f"{side.message or 'no samples'})")
    a_name, b_name = a_label or a.name, b_label or b.name
    result = Comparison(
        a=a_name, b=b_name, speedup=speedup(a.samples_s, b.samples_s),
        movement=movement(a, b), bytes={a_name: a.dram_bytes, b_name: b.dram_bytes},
        flops={a_name: a.flops, b_name: b.flops},
        correctness={a_name: _correctness(a), b_name: _correctness(b)},
        expectation=_expectation(a, b))
    if a.point and b.point and (verdict := byte_cut(b, a)):
        result.notes.append(verdict)
    if a.point and b.point and a.point.bytes_source != b.point.bytes_source:
        result.notes.append(f"bytes come from different sources ({a.point.bytes_source} vs "
                            f"{b.point.bytes_source}): the horizontal movement is not like for like")
    return result


def movement(a: VariantResult, b: VariantResult) -> dict[str, float | str | None]:
    """How the dot moved from A to B: right (intensity), up (FLOP/s), roof, verdict."""
    pa, pb = a.point, b.point
    right = pb.observed_ai / pa.observed_ai if pa.observed_ai else None
    up = pb.achieved_flops / pa.achieved_flops if pa.achieved_flops else None
    return {
        "right": right,                                    # x in observed AI
        "up": up,                                          # x in achieved FLOP/s
        "bandwidth": pb.achieved_bandwidth / pa.achieved_bandwidth,
        "roof_before": pa.limiting_roof, "roof_after": pb.limiting_roof,
        "verdict_before": a.verdict.bound, "verdict_after": b.verdict.bound,
        "roof_fraction_before": pa.roof_fraction, "roof_fraction_after": pb.roof_fraction,
    }


def describe_movement(m: dict[str, float | str | None]) -> str:
    def step(ratio: float, more: str, less: str, what: str) -> str:
        if abs(ratio - 1) < MIN_NOISE_FLOOR:
            return f"no {what} change"
        return f"{more if ratio > 1 else less} by {max(ratio, 1 / ratio):.2f}x in {what}"
    parts = []
    if m["right"] is not None:
        parts.append(step(m["right"], "right", "left", "observed intensity"))
    parts.append(step(m["up"], "up", "down", "FLOP/s") if m["up"] is not None
                 else step(m["bandwidth"], "up", "down", "bandwidth"))
    roof = (f"the {m['roof_after']} roof applies" if m["roof_before"] == m["roof_after"]
            else f"now under the {m['roof_after']} roof (was {m['roof_before']})")
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
        went = ratio is not None and ratio > 1 + MIN_NOISE_FLOOR
        text += (f"; predicted to move {b.expect['move']}: "
                 f"{'held' if went else 'missed'}" + (f" ({ratio:.2f}x)" if ratio else ""))
    if b.expect.get("bound") and b.verdict:
        match = b.expect["bound"] == b.verdict.bound
        text += (f"; predicted {b.expect['bound']}-bound: "
                 f"{'held' if match else 'missed, measured ' + b.verdict.bound}")
    return text


BYTE_CUT = 0.8          # DRAM bytes under this fraction of the other's: a byte cut to judge
BYTE_CUT_SLACK = 1.25   # time may exceed the byte ratio by this much and still have "paid"


def byte_cut(v: VariantResult, other: VariantResult) -> str | None:
    """If ``v`` moves clearly fewer DRAM bytes than ``other``: did that pay, and why."""
    bytes_ratio = v.point.dram_bytes / other.point.dram_bytes
    if bytes_ratio >= BYTE_CUT:
        return None
    paid = v.time.median_s / other.time.median_s <= BYTE_CUT_SLACK * bytes_ratio
    text = (f"the byte cut {'paid' if paid else 'did not pay'}: {other.name} was "
            f"{other.verdict.bound}-bound (DRAM at {100 * other.point.dram_fraction:.0f}% "
            f"of its roof)")
    if not paid and other.verdict.bound != "bandwidth":
        text += ", so bytes were not its limit"
    return text


def reconcile(v: VariantResult, other: VariantResult) -> str | None:
    """The book's "predict, measure, reconcile" against the variant it was meant to beat:
    how bytes, intensity and time moved, and whether a byte cut paid, with the reason."""
    if not (v.point and other.point):
        return None
    intensity = (f", observed AI {v.point.observed_ai / other.point.observed_ai:.2f}x"
                 if other.point.observed_ai else "")
    text = (f"vs {other.name}: DRAM bytes {v.point.dram_bytes / other.point.dram_bytes:.2f}x"
            f"{intensity}, time {v.time.median_s / other.time.median_s:.2f}x")
    verdict = byte_cut(v, other)
    return f"{text}; {verdict}" if verdict else text
