"""What every terminal printer shares: the table rule, the colours of bound and status
words, how an intensity, a roof line, a long name and a move's lead phrase are shortened,
and the labelled notes grid; so run's tables, compare, gate and explain look alike.

Only presentation lives in output/; every number shown was computed elsewhere and is also
in the JSON result, so the screen and the file never disagree.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable

from rich import box
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from rooflint.analysis.evidence import Bound
from rooflint.analysis.roofline import Roofs
from rooflint.common.units import format_rate
from rooflint.formats.status import Status

# rich's SIMPLE_HEAD in ASCII: a header rule of "-", so a line of N characters is N bytes
# and tools that count bytes (awk, cut, CI log viewers) agree that it fits the terminal.
HEAD_RULE = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
BOUND_STYLE = {Bound.BANDWIDTH: "cyan", Bound.COMPUTE: "magenta", Bound.CHAIN: "yellow"}
STATUS_STYLE = {Status.OK: "green", Status.FAIL: "bold red", Status.ERROR: "bold red",
                Status.SKIPPED: "yellow"}

# Names up to this long stay on one line; longer ones (a library kernel's generated name)
# fold rather than push every other column off the screen.
WHOLE_NAME = 48
NAME_WIDTH = 30          # a kernel's name in the application table: one line at 100 columns
NAME_TAIL = 9            # kept after the ellipsis: cuBLAS's layout letters, a kernel's number
NAME_WINDOW = 10         # kept around where two names that shorten alike differ
LABEL_WIDTH = 34   # a longer label (a library kernel's name) folds, leaving the text room


def ai_text(value: float) -> str:
    """Three significant figures, whole numbers from 100 up (1020, not 1.02e+03)."""
    if value == float("inf"):
        return "inf"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def roofs_line(roofs: Roofs) -> str:
    def beside(value: float, datasheet: float, unit: str) -> str:
        shown = format_rate(value, unit)
        if value == datasheet:
            return shown
        return f"{shown} (datasheet {format_rate(datasheet, unit)})"
    return (f"roofs ({roofs.source}): DRAM "
            f"{beside(roofs.dram_bandwidth, roofs.datasheet_dram_bandwidth, 'B/s')}, "
            f"{roofs.precision} {beside(roofs.compute, roofs.datasheet_compute, 'FLOP/s')}, "
            f"ridge {roofs.ridge:.3g} FLOP/B")


def lead_phrase(action: str) -> str:
    """The lead phrase of a move ("more bytes in flight: 16-byte ..." -> "more bytes in flight")."""
    return action.split(":")[0].split(" (")[0]


def shortened(name: str, width: int = NAME_WIDTH) -> str:
    """``name`` in at most ``width`` characters, its head and tail around an ellipsis
    (cuDNN's and cuBLAS's kernel names run to 90 characters; the whole name is in the
    kernel's notes and the result document)."""
    if len(name) <= width:
        return name
    return f"{name[:width - 1 - NAME_TAIL]}…{name[-NAME_TAIL:]}"


def shortened_names(names: Iterable[str], width: int = NAME_WIDTH) -> dict[str, str]:
    """Each name shortened, told apart where two shorten alike: cuDNN's attention forward
    and backward (``..._flash_fprop_...`` and ``..._flash_bprop_...``) or two cuBLAS tile
    shapes share head and tail, so such names show the few characters where they part
    (``cudnn_gen…sh_bprop_w…kernel0_0``). A name that still collides is numbered."""
    names = list(dict.fromkeys(names))
    short = {name: shortened(name, width) for name in names}
    alike: dict[str, list[str]] = {}
    for name in names:
        alike.setdefault(short[name], []).append(name)
    for group in (g for g in alike.values() if len(g) > 1):
        for name in group:
            short[name] = _around_difference(name, [n for n in group if n != name], width)
    taken, seen = Counter(short.values()), Counter()
    for name in (n for n in names if taken[short[n]] > 1):
        seen[short[name]] += 1
        short[name] = _numbered(short[name], seen[short[name]], width)
    return short


def _numbered(shown: str, n: int, width: int) -> str:
    """``shown`` with ``#n`` in the width: a name that still collides had been shown
    whole, and one 150-character cuDNN name left a ConvNet's table only its kernel column."""
    tag = f"#{n}"
    return (shown + tag if len(shown) + len(tag) <= width
            else f"{shown[:width - len(tag) - 1]}…{tag}")


def _around_difference(name: str, others: list[str], width: int) -> str:
    """``name`` as head…window…tail, the window where it parts from the nearest of
    ``others`` (the longest common start)."""
    parts = max(len(os.path.commonprefix([name, other])) for other in others)
    head = width - 2 - NAME_TAIL - NAME_WINDOW
    start = min(max(head, parts - 3), len(name) - NAME_TAIL - NAME_WINDOW)
    return f"{name[:head]}…{name[start:start + NAME_WINDOW]}…{name[-NAME_TAIL:]}"


def labelled(rows: list[tuple[str, str | Text]], indent: int = 2) -> Padding:
    """Label and text side by side, indented; a long text wraps under its own start (a
    hanging indent), so where one ends and the next begins stays visible. Labels are user
    text (variant names) and printed as written; a str text is rich markup."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", max_width=LABEL_WIDTH, overflow="fold")
    grid.add_column()
    for label, text in rows:
        grid.add_row(Text(f"{label}:"), text)
    return Padding(grid, (0, 0, 0, indent), expand=False)
