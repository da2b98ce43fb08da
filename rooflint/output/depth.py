"""How deep a command's output goes (issue 51): the verdict line per kernel or fix (summary), the
tables and the notes that matter (the default), or everything (detail)."""

from __future__ import annotations

from enum import Enum


class Depth(Enum):
    SUMMARY = "summary"      # a family's table, a profile's fixes: the verdicts alone
    DEFAULT = "default"      # and the notes that matter: a trap named once a family
    DETAIL = "detail"        # and every note: each variant's traps and why
