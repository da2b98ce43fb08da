"""What a command says of each file it wrote, worded once for every command: a result is
"written to" its path after `run` and `profile` alike, a picture "drawn to" its path after
`run`, `profile` and `plot`."""

from __future__ import annotations

from pathlib import Path

from rooflint.common.printable import printable


def result_written(path: Path) -> str:
    return f"result written to {path}"


def roofline_drawn(path: Path) -> str:
    return f"roofline drawn to {path}"


def report_written(path: Path) -> str:
    return f"report written to {path}"


def written_to(what: str, path: Path) -> str:
    """Any other file: explain's and compare's --json, the gate's summary and JUnit XML."""
    return f"{what} written to {path}"


def table_written(format: str, path: Path) -> str:
    """A --csv or --markdown table (``format``: csv, markdown)."""
    return f"{format} table written to {path}"


def baseline_written(path: Path, variants: int, gpu: str, driver: str) -> str:
    return (f"baseline written to {path}: {variants} variants on {printable(gpu)}, "
            f"driver {printable(driver)}")


def calibration_saved(path: Path, copy: Path | None) -> str:
    """The calibration's cache file, and the --json copy if asked."""
    return f"saved to {path}" + (f" and {copy}" if copy else "")
