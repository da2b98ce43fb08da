"""The default output of `rooflint show` on a program profile (issue 47, item 7): the
summary, the fixes and the top kernels in at most 40 lines at 100 and 140 columns, the last
line saying where the rest is; ``--detail`` prints every kernel's row and notes as before."""

import io
import re

import pytest
from rich.console import Console

from edges import REPO, rooflint
from rooflint.output.depth import Depth
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import fixes_of
from rooflint.output.profile_view import DETAIL_LINE, TOP_KERNELS, LINE_BUDGET
from rooflint.output.program_summary import render_program_summary
from rooflint.output.tables import render_run

PROFILES = sorted((REPO / "examples" / "profile").glob("*.json"))
BUNDLED = REPO / "examples" / "h200-bundled.json"


def show(*args: str, width: int) -> str:
    outcome = rooflint("show", *map(str, args), env={"COLUMNS": str(width)})
    assert outcome.code == 0, outcome.stderr
    return outcome.stdout


def summary_and_tables(path, width: int) -> str:
    """What `show` printed for a profile before ``--detail``: the summary, then every
    kernel's table and notes (as into a pipe: lines without the tables' padding)."""
    result = read_result(path)
    console = Console(file=io.StringIO(), width=width)
    render_program_summary(console, result, fixes_of(result))
    render_run(console, result, Depth.DETAIL)
    return re.sub(r" +\n", "\n", console.file.getvalue())


@pytest.mark.parametrize("width", [100, 140])
@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_the_default_fits_the_budget_and_says_where_the_rest_is(path, width):
    lines = show(path, width=width).splitlines()
    assert len(lines) <= LINE_BUDGET, "\n".join(lines)
    assert max(len(line) for line in lines) <= width
    assert lines[-1] == DETAIL_LINE and "--detail" in lines[-1]


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_detail_prints_every_kernel_row_and_note_as_before(path):
    assert show(path, "--detail", width=140) == summary_and_tables(path, 140)


def test_the_top_kernels_are_the_largest_shares_each_with_its_move():
    path = REPO / "examples" / "profile" / "h200-profile-train-eager.json"
    lines = show(path, width=140).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("kernel "))
    assert lines[header].split()[-2:] == ["top", "move"]
    rows = lines[header + 2:-1]
    assert len(rows) == TOP_KERNELS
    shares = [int(row.split()[1].rstrip("%")) for row in rows]
    assert shares == sorted(shares, reverse=True)
    assert all(row.split()[-1] not in ("", "-") for row in rows)


def test_a_manifest_runs_three_depths_add_to_each_other():
    """--summary: the tables alone; the default: and the roofs and notes, the moves the
    verdicts ruled out named once a family; --detail: and those for each variant, why."""
    summary, default, detail = (show(BUNDLED, *depth, width=2000).splitlines()
                                for depth in (["--summary"], [], ["--detail"]))
    assert set(summary) <= set(default) <= set(detail) | {
        line for line in default if line.startswith("  ruled out (")}
    families = sum(line.startswith("variant ") for line in summary)
    assert sum(line.startswith("  ruled out (the kernel book's traps") for line in default) \
        <= families and not any("roofs (" in line for line in summary)
    assert not any("INT8-KV" in line for line in default)
    assert any("INT8-KV" in line for line in detail)
