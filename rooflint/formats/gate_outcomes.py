"""What `rooflint gate` decides: one outcome per variant and the report they make.

The record is the gate's product: judge/gate.py fills it, and the printers
(output/gate_report.py) write it as a table, Markdown and JUnit XML, so it sits below
both. FAILING is the one list of the outcomes that fail the gate (exit 1 and a JUnit
failure alike).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rooflint.common.sense import Vocabulary


class Outcome(Vocabulary):
    """The gate's word for one variant (judge/gate.py says when each is given)."""

    PASS = "pass"
    REGRESSED = "regressed"
    IMPROVED = "improved"
    INCONCLUSIVE = "inconclusive"
    NEW = "new"
    MISSING = "missing"


FAILING = (Outcome.REGRESSED, Outcome.MISSING)


@dataclass
class Row:
    family: str
    variant: str
    outcome: Outcome
    reasons: list[str] = field(default_factory=list)    # what decided a non-pass outcome
    warnings: list[str] = field(default_factory=list)   # reported, not failing
    slowdown: float | None = None      # current time / baseline time
    interval: tuple[float, float] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    rows: list[Row]
    gpu_note: str | None = None

    @property
    def passed(self) -> bool:
        return not any(r.outcome in FAILING for r in self.rows)
