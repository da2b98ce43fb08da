"""The CLI's output on the committed examples, held byte for byte: `show`, `compare`,
`gate` (text, Markdown, JUnit), `explain` and `plot` print today what they printed when
tests/fixtures/golden/ was recorded. A refactor that changes no behaviour (issue 26)
passes unchanged; a change that means to alter an output records it again, on purpose:

    python tests/output/test_golden.py --record

and the diff of tests/fixtures/golden/ is the change a reviewer reads.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest

from edges import REPO, rooflint

GOLDEN = REPO / "tests" / "fixtures" / "golden"
EXAMPLES = "examples"
# One terminal for every case: the width, no colour.
TERMINAL = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}

# name -> the command's arguments; {out} is a scratch directory for files it writes.
CASES: dict[str, tuple[str, ...]] = {
    "show-h200-bundled": ("show", f"{EXAMPLES}/h200-bundled.json"),
    "show-h100-bundled-variants": ("show", f"{EXAMPLES}/h100-bundled.json", "tiled",
                                   "blocked_2d"),
    "show-h200-source-stream": ("show", f"{EXAMPLES}/h200-source-stream.json"),
    "show-h100-profile-eager": ("show", f"{EXAMPLES}/profile/h100-profile-eager.json"),
    "show-h200-profile-train-eager": ("show",
                                      f"{EXAMPLES}/profile/h200-profile-train-eager.json"),
    "show-h200-profile-train-eager-detail": ("show", "--detail",
                                             f"{EXAMPLES}/profile/h200-profile-train-eager.json"),
    "compare-bundled-h100-h200": ("compare", f"{EXAMPLES}/h100-bundled.json:tiled",
                                  f"{EXAMPLES}/h200-bundled.json:tiled",
                                  "--allow-different-gpu"),
    "compare-variants-json": ("compare", f"{EXAMPLES}/h200-bundled.json:tiled",
                              f"{EXAMPLES}/h200-bundled.json:blocked_2d", "--json", "-"),
    "compare-profiles": ("compare", f"{EXAMPLES}/profile/h200-profile-eager.json",
                         f"{EXAMPLES}/profile/h200-profile-compiled.json"),
    "gate-h200": ("gate", "--baseline", f"{EXAMPLES}/ci/h200-baseline.json", "--current",
                  f"{EXAMPLES}/h200-bundled.json", "--markdown", "{out}/gate.md",
                  "--junit", "{out}/gate.xml"),
    "gate-h100-against-h200": ("gate", "--baseline", f"{EXAMPLES}/ci/h200-baseline.json",
                               "--current", f"{EXAMPLES}/h100-bundled.json",
                               "--gpu-mismatch", "warn"),
    "explain": ("explain", "--gpu", "h100-sxm", "--time", "2.5ms", "--flops", "137.4e9",
                "--bytes", "201MB"),
    "explain-json": ("explain", "--gpu", "h200", "--time", "40us", "--flops", "1e9",
                     "--bytes", "64MB", "--algorithmic-bytes", "32MB", "--json", "-"),
    "plot-bundled": ("plot", f"{EXAMPLES}/h200-bundled.json", "-o", "{out}/roofline.svg"),
    "plot-trajectory": ("plot", f"{EXAMPLES}/h200-bundled.json", "-v", "naive", "-v", "tiled",
                        "--trajectory", "-o", "{out}/trajectory.svg"),
}


def outputs(name: str) -> str:
    """What the case prints and writes: exit code, stdout, stderr, then each file it
    wrote (an SVG as what it draws: the labels and the ids of its marks, which do not
    change with matplotlib's version as its paths do)."""
    with tempfile.TemporaryDirectory() as out:
        args = [a.replace("{out}", out) for a in CASES[name]]
        done = rooflint(*args, cwd=REPO, env=TERMINAL)
        parts = [f"exit {done.code}", "--- stdout", done.stdout, "--- stderr", done.stderr]
        for path in sorted(Path(out).iterdir()):
            text = path.read_text()
            if path.suffix == ".svg":
                text = "\n".join(comment or gid for comment, gid in re.findall(
                    r"<!-- (.*?) -->|id=\"((?:variant|roof)[^\"]*)\"", text))
            parts += [f"--- {path.name}", text]
        return "\n".join(parts).replace(out, "<out>").replace(str(REPO), "<repo>")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_output_on_the_committed_examples_is_unchanged(name):
    recorded = GOLDEN / f"{name}.txt"
    assert recorded.exists(), f"no {recorded.name}: python tests/output/test_golden.py --record"
    assert outputs(name) == recorded.read_text(), \
        f"{name} changed: if on purpose, python tests/output/test_golden.py --record"


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        (GOLDEN / f"{case}.txt").write_text(outputs(case))
        print("recorded", case)
