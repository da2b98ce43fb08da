"""The notebook API (issue 51, item 6): rooflint.load of a run's and a profile's result, the
DataFrame with the CSV's columns and values, rooflint.explain as the command explains,
what Jupyter shows of each, and docs/notebook.md run as a notebook would run it."""

from __future__ import annotations

import ast
import csv
import html
import io
import math
import re
import sys
from contextlib import redirect_stdout
from typing import Any

import pandas
import pytest
import rich.console

import rooflint
from edges import REPO, rooflint as run_rooflint
from rooflint.common.errors import RooflintError
from rooflint.formats.results import RunResult, read_result
from rooflint.output.exports import export
from rooflint.output.picture_marks import PNG_SIGNATURE

RUN = REPO / "examples" / "h200-bundled.json"
PROFILE = REPO / "examples" / "profile" / "h200-profile-train-eager.json"
PAGE = REPO / "docs" / "notebook.md"
EXPLAINED = ["--gpu", "h100-sxm", "--time", "2.5ms", "--flops", "137.4e9", "--bytes", "201MB"]


@pytest.mark.parametrize("path, mode, rows", [(RUN, None, 38), (PROFILE, "profile", 46)],
                         ids=["run", "profile"])
def test_load_gives_the_document_whichever_it_is(path, mode, rows):
    result = rooflint.load(str(path))
    assert isinstance(result, RunResult) and result.settings.mode == mode
    assert result.to_json() == read_result(path).to_json()
    assert sum(len(f.variants) for f in result.families) == rows


@pytest.mark.parametrize("path, said", [
    (REPO / "examples" / "h200-calibration.json", "is not a rooflint result"),
    (REPO / "examples" / "h200-bundled.txt", "not JSON"),
    (REPO / "examples", "it is a directory"),
], ids=["calibration", "text", "directory"])
def test_load_refuses_any_other_file_naming_it(path, said):
    with pytest.raises(RooflintError, match=re.escape(said)) as refused:
        rooflint.load(path)
    assert str(path) in str(refused.value)


def csv_table(result: RunResult) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(io.StringIO(export([result], "csv"))))
    return header, rows


@pytest.mark.parametrize("path", [RUN, PROFILE], ids=["run", "profile"])
def test_the_frame_is_the_csv_with_its_numbers(path):
    """The same columns in the same order, and in every cell the CSV's value: missing where
    the CSV's cell is empty, the number itself (a numeric column) where it holds one, the
    text where it holds text."""
    result = rooflint.load(path)
    frame = result.to_pandas()
    header, rows = csv_table(result)
    assert list(frame.columns) == header
    assert len(frame) == len(rows) == sum(len(f.variants) for f in result.families)
    for column in header:
        cells, values = [row[header.index(column)] for row in rows], list(frame[column])
        numeric = all(_number(cell) is not None for cell in cells if cell)
        assert pandas.api.types.is_numeric_dtype(frame[column]) == numeric, column
        for cell, value in zip(cells, values):
            if not cell:
                assert pandas.isna(value), (column, value)
            else:
                assert value == (float(cell) if numeric else cell), (column, cell, value)
    pandas.testing.assert_frame_equal(rooflint.to_pandas(result), frame)


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def test_a_profiles_frame_groups_by_source_line():
    """What the CSV's source line is for: the GPU time by the line that launched it, as the
    recorded profile has it (every kernel has its line)."""
    frame = rooflint.load(PROFILE).to_pandas()
    by_line = frame.groupby("source_line")["share"].sum()
    assert math.isclose(by_line.sum(), frame["share"].sum())
    assert by_line.idxmax() == "train_step.py:37 in Block.forward"


def test_without_pandas_the_frame_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)      # `import pandas` fails
    result = rooflint.load(RUN)
    for asked in (result.to_pandas, lambda: rooflint.to_pandas(result)):
        with pytest.raises(RooflintError, match=re.escape("pip install 'rooflint[pandas]'")):
            asked()


def test_explain_gives_and_shows_what_the_command_prints(monkeypatch):
    """The same explanation from numbers as from the command's text, shown in a notebook
    as the command prints it (into a pipe: lines unwrapped), its numbers there to read.
    In Jupyter too, where rich displays what a console prints itself unless told not to."""
    printed = run_rooflint("explain", *EXPLAINED)
    assert printed.code == 0
    typed = rooflint.explain(gpu="h100-sxm", time="2.5ms", flops="137.4e9", bytes="201MB")
    numbers = rooflint.explain(gpu="h100-sxm", time=2.5e-3, flops=137.4e9, bytes=201e6)
    assert numbers.to_json() == typed.to_json()
    monkeypatch.setattr(rich.console, "_is_jupyter", lambda: True)
    assert pretty(numbers) == printed.stdout
    assert numbers._repr_html_() == f"<pre>{html.escape(printed.stdout)}</pre>"
    assert numbers.verdict.bound == "compute" and round(numbers.point.roof_fraction, 2) == 0.82


@pytest.mark.parametrize("asked, said", [
    ({"bytes": 0}, "--bytes 0: a kernel reads its inputs and writes its outputs"),
    ({"precision": "fp31"}, "unknown precision 'fp31'"),
    ({"gpu": "0"}, "--gpu"),
    ({"time": "2.5 fortnights"}, "unknown unit 'fortnights'"),
], ids=["no-bytes", "precision", "device-index", "unit"])
def test_explain_refuses_as_the_command_does(asked, said):
    """One RooflintError, worded as the command's one line."""
    given = {"gpu": "h100-sxm", "time": 2.5e-3, "flops": 137.4e9, "bytes": 201e6, **asked}
    with pytest.raises(RooflintError, match=re.escape(said)) as refused:
        rooflint.explain(**given)
    option = {"bytes": "--bytes", "precision": "--precision", "gpu": "--gpu", "time": "--time"}
    typed = EXPLAINED + ["--precision", "fp32"]
    for name, value in asked.items():
        typed[typed.index(option[name]) + 1] = str(value)
    outcome = run_rooflint("explain", *typed)
    assert outcome.code == 2 and outcome.stderr.strip() == f"rooflint: {refused.value}"


def test_a_result_shows_its_summary_table_escaped():
    """Jupyter's HTML is the Markdown summary's table with every cell escaped: a kernel
    called ``GammaBetaBackwardCUDAKernelTemplate<u>`` would underline the rest of a
    Markdown table; IPython's plain text is that Markdown."""
    result = rooflint.load(PROFILE)
    table = result._repr_html_()
    assert table.startswith("<table>") and table.count("<tr>") == 1 + 46
    assert "<th>of roof</th><th>bound</th><th>top move</th><th>saves</th>" in table
    assert "GammaBetaBackwardCUDAKernelTemplate&lt;u&gt;" in table and "<u>" not in table
    assert pretty(result) == export([result], "markdown")


# --- docs/notebook.md, run block by block as a notebook runs its cells -----------------------

class _Printer:
    """IPython's pretty printer, as far as ``_repr_pretty_`` uses it."""

    def __init__(self) -> None:
        self.written = ""

    def text(self, text: str) -> None:
        self.written += text


def pretty(value: Any) -> str:
    """IPython's plain text of ``value``: its ``_repr_pretty_``, else its repr."""
    if not hasattr(value, "_repr_pretty_"):
        return repr(value)
    printer = _Printer()
    value._repr_pretty_(printer, False)
    return printer.written


def shown(value: Any) -> str:
    """What a notebook shows of a cell's last value: it asks each for HTML and a PNG, and
    each of rooflint's gives one of them; the plain text is returned."""
    markup = value._repr_html_() if hasattr(value, "_repr_html_") else None
    png = value._repr_png_() if hasattr(value, "_repr_png_") else None
    assert markup or (png and png.startswith(PNG_SIGNATURE)), type(value)
    return pretty(value)


def run_cell(code: str, namespace: dict[str, Any]) -> str:
    """Run ``code`` as a notebook cell: what it prints, then what the notebook shows of its
    last expression's value (none for None, as IPython)."""
    tree = ast.parse(code)
    last = tree.body.pop() if isinstance(tree.body[-1], ast.Expr) else None
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(tree, str(PAGE), "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), str(PAGE), "eval"), namespace) \
            if last else None
    return out.getvalue() + (shown(value) if value is not None else "")


def cells(text: str) -> list[tuple[str, str | None]]:
    """Each python block of the page, and the plain block right after it, if any: what the
    block prints."""
    blocks = list(re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M))
    found = []
    for i, block in enumerate(blocks):
        if block.group(1) != "python":
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        printed = after.group(2) if after and after.group(1) == "" and \
            not text[block.end():after.start()].strip() else None
        found.append((block.group(2), printed))
    return found


def test_the_notebook_page_runs_and_prints_what_it_says(monkeypatch):
    text = PAGE.read_text()
    page = cells(text)
    assert len(page) == text.count("```python") and sum(p is not None for _, p in page) >= 4
    monkeypatch.chdir(REPO)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for code, printed in page:
        output = run_cell(code, namespace)
        if printed is not None:
            assert output == printed, code
