"""What the notebook API gives (docs/notebook.md): results and explanations that show
themselves in Jupyter, and a result's table as a pandas DataFrame.

Above every layer, as the package's __init__ is (tests/project/test_layers.py): a document
cannot show itself (formats/ never imports the printers), so rooflint.load and
rooflint.explain give the documents' own classes with the methods IPython looks for added
here, each showing what a printer already writes: a result, the Markdown summary's table
(exports.py); an explanation, what `rooflint explain` prints (output/roofs.py).
"""

from __future__ import annotations

import html
import io
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console

from rooflint.commands.stdio import UNWRAPPED_WIDTH
from rooflint.common.errors import RooflintError
from rooflint.formats.explanation import Explanation
from rooflint.formats.results import RunResult
from rooflint.output.exports import export, table, titles, values
from rooflint.output.html_page import table as html_table
from rooflint.output.roofs import render_explanation

if TYPE_CHECKING:
    from pandas import DataFrame

PANDAS_MISSING = "rooflint.to_pandas needs pandas: pip install 'rooflint[pandas]'"

Shown = TypeVar("Shown", bound="_Shown")


class _Shown:
    """A document's class that a notebook shows (``_repr_html_`` in Jupyter,
    ``_repr_pretty_`` in IPython's plain text, in place of the dataclass's repr of every
    field, which a profile has thousands of)."""

    @classmethod
    def of(cls: type[Shown], document: Any) -> Shown:
        """``document`` as this class: the same fields, the same values."""
        return cls(**{f.name: getattr(document, f.name) for f in fields(document)})


class Result(_Shown, RunResult):
    """A result document, a run's or a profile's, as rooflint.load gives it: shown as the
    Markdown summary's table (`show --markdown`); ``to_pandas()`` gives every column of
    the CSV."""

    def to_pandas(self) -> DataFrame:
        return to_pandas(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(export([self], "markdown"))

    def _repr_html_(self) -> str:
        """The summary's table as HTML, not Markdown: a kernel's name such as
        ``GammaBetaBackwardCUDAKernelTemplate<u>`` would be markup in Markdown, and is
        text here (html_page escapes every cell)."""
        header, rows = table([self], brief=True)
        return html_table(titles(header), [[cell.shown for cell in row] for row in rows])


class Explained(_Shown, Explanation):
    """The explanation rooflint.explain gives: shown as `rooflint explain` prints it."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(printed(self))

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(printed(self))}</pre>"


def printed(explanation: Explanation) -> str:
    """What `rooflint explain` prints of ``explanation`` into a pipe: plain text, its lines
    unwrapped (a notebook wraps them at its own width). Into this console's file even in
    Jupyter, where rich would otherwise display each line itself and write nothing."""
    console = Console(file=io.StringIO(), width=UNWRAPPED_WIDTH, color_system=None,
                      force_jupyter=False)
    render_explanation(console, explanation)
    return console.file.getvalue()


def to_pandas(result: RunResult) -> DataFrame:
    """The result's CSV table (`show --csv`) as a DataFrame: the same columns in the same
    order, one row per variant or profiled kernel, each value as the document holds it
    (numbers as numbers, missing where the CSV's cell is empty, text without the CSV's
    guard against spreadsheet formulas). pandas is the optional extra ``rooflint[pandas]``."""
    try:
        import pandas
    except ImportError:
        raise RooflintError(PANDAS_MISSING) from None
    header, rows = values([result])
    return pandas.DataFrame(rows, columns=header)
