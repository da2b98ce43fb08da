"""The columns of Nsight Compute's raw CSV page (``--csv --page raw``) that rooflint reads
by name, written once for the code that runs ncu (measure/ncu.py, measure/pass_runner.py)
and the decisions that read its rows without a GPU (judge/kernel_times.py, autotuning.py,
launch_matching.py); and the page read into rows, every number in the unit
``--print-units base`` writes, whichever units the page was written in."""

from __future__ import annotations

import csv
import io
import re

ID = "ID"                              # the launch's number in the session
KERNEL_NAME = "Kernel Name"            # demangled or not, as --kernel-name-base asked
GRID = "Grid Size"                     # "(1056, 1, 1)"
BLOCK = "Block Size"
PROCESS = "Process ID"
STREAM = "Stream"
DURATION = "gpu__time_duration.sum"    # the launch's GPU time, ns (the one metric every log has)
DEVICE_ATTRIBUTE = "device__attribute_"         # the device's attributes, printed with each launch
DEVICE_NAME = DEVICE_ATTRIBUTE + "display_name"  # "NVIDIA H200", as NVML names it

# Nsight Compute's units: under ``--print-units base`` a word (ns, byte, byte/s, hz, cycle,
# inst, sector), under its default a word with an SI prefix chosen for the column's
# magnitude (us, Mbyte, Kbyte/cycle, Tbyte/s, Ghz, sector/ns; ``ncu -i REPORT --csv`` on
# an H200, Nsight Compute 2025.3.1). The base of a duration is the nanosecond; of a rate,
# per second (byte/s, sector/s, hz).
SI_PREFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
               "P": 1e15}
_UNIT_WORD = re.compile(r"(?P<prefix>[numKMGTP]?)(?P<word>second|s|byte|[hH]z|cycle|inst"
                        r"|sector|warp|thread|block|request|wavefront|register)s?")
_TIME = ("s", "second")


def base_unit_scale(unit: str) -> float:
    """What a number in ``unit`` is multiplied by to read in the unit of the same kind
    that ``--print-units base`` writes: 1e3 for us (to ns), 1e6 for Mbyte, 1e9 for
    sector/ns (to sector/s); 1 for a unit already there, or one it does not know."""
    numerator, slash, denominator = unit.partition("/")
    scale = _word_scale(numerator, alone=not slash)
    return scale / _word_scale(denominator, alone=False) if slash else scale


def _word_scale(word: str, alone: bool) -> float:
    found = _UNIT_WORD.fullmatch(word)
    if found is None:
        return 1.0
    scale = SI_PREFIXES.get(found["prefix"], 1.0)
    return scale / SI_PREFIXES["n"] if alone and found["word"] in _TIME else scale


def number(text: str) -> float | str:
    """A cell's number (``12,613,888``, ``0.004096``), or its text where it holds none
    (``n/a``, ``(128, 1, 1)``, a name)."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def parse_rows(text: str) -> list[dict[str, float | str]]:
    """Kernel rows of an ``ncu --csv --page raw`` log (profiler messages skipped), each
    number scaled by its column's unit (the row under the header) to the unit
    ``--print-units base`` writes: rooflint's own logs are written so, a user's often in
    ncu's default units."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{ID}"')), None)
    if start is None:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    units = rows[0] if rows and rows[0].get(ID) == "" else {}
    scales = {key: base_unit_scale(unit) for key, unit in units.items() if unit}
    return [{key: _scaled(number(value), scales.get(key, 1.0)) if key != KERNEL_NAME else value
             for key, value in row.items()}
            for row in rows if row.get(ID) not in (None, "")]


def raw_page(rows: list[dict[str, float | str]]) -> str:
    """Rows as parse_rows reads them back: an ``ncu --csv --page raw`` page in base units
    (no unit row), its columns the first row's (measure/rotation.py's rows, made to be read
    as Nsight Compute's)."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\n",
                            extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def joined(texts: list[str]) -> str:
    """Several raw pages of one metric list (pass 2 attached to each rank of a job) as one:
    the first whole, the others' launch rows after it, numbered on from its last ``ID``
    (each session numbers its launches from 0) and laid out by its header; "" for none."""
    if len(texts) <= 1:
        return texts[0] if texts else ""
    (header, first), *others = [_table(text) for text in texts]
    after = max((int(row[ID]) for row in first if row[ID].isdigit()), default=-1) + 1
    out = io.StringIO()
    writer = csv.DictWriter(out, header, quoting=csv.QUOTE_ALL, lineterminator="\n",
                            extrasaction="ignore")
    for _, rows in others:
        for row in rows:
            if row[ID].isdigit():
                writer.writerow({**row, ID: str(after)})
                after += 1
    return texts[0].rstrip("\n") + "\n" + out.getvalue()


def _table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """A raw page's header and rows as text (its unit row among them)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{ID}"')), None)
    if start is None:
        return [], []
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def _scaled(value: float | str, scale: float) -> float | str:
    return value * scale if isinstance(value, float) and scale != 1.0 else value
