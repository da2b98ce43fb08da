"""`rooflint compare` as the command line runs it: the two sides read or measured (a
spinner while they are), each pair compared, then printed as text or JSON.

Apart from engine/compare_sides.py, which finds and measures the sides for any caller:
this is only what the `compare` command adds around them.
"""

from __future__ import annotations

from dataclasses import asdict

from rich.progress import TextColumn

from rooflint.judge.comparison import Comparison, compare as compare_variants
from rooflint.judge.fix_comparison import ProgramComparison, compare_fixes
from rooflint.commands.requests import CompareRequest
from rooflint.engine.compare_sides import (Measuring, Side, gpu_warning, resolve_pairs,
                                           split_side, unmatched, whole_results)
from rooflint.commands.writing import write_json
from rooflint.commands.stdio import console, errors, progress, status
from rooflint.output.live import progress_bar
from rooflint.output.outputs import COMPARISON, STDOUT, guard_json
from rooflint.common.printable import printable
from rooflint.formats.thresholds import threshold_option
from rooflint.engine.named_gpu import check_gpu_option
from rooflint.output.fix_comparison import render_fix_comparison
from rooflint.output.depth import Depth
from rooflint.output.tables import decisions_line, render_comparison, render_comparison_sentence
from rooflint.output.terminal import shortened_names


def compare_command(request: CompareRequest) -> None:
    """Compare A with B as `rooflint compare` was asked, and print the comparisons (and
    write them as JSON to its --json; ``-``: print that instead)."""
    a, b, json_path, max_slowdown = request.a, request.b, request.json_path, request.max_slowdown
    guard_json(json_path, COMPARISON, request.force)
    gap = threshold_option("--max-slowdown", max_slowdown) if max_slowdown is not None else None
    check_gpu_option(request.gpu)     # an unknown id is an error, whatever the sides are

    screen = errors if json_path == STDOUT else console   # standard output holds the JSON alone
    with progress_bar(screen, TextColumn("{task.description}")) as bar:
        bar.add_task("reading" if split_side(a)[0].endswith(".json")
                     else "measuring both sides, interleaved")
        pairs = resolve_pairs(a, b, request.rev,
                              Measuring(request.gpu, request.counters, note=progress))
    warning = gpu_warning(pairs, request.allow_different_gpu)
    comparisons = [compare_variants(x.variant, y.variant, x.label, y.label, gap)
                   for x, y in pairs]
    vanished, new = unmatched(a, b) if b is not None else ([], [])
    results = whole_results(a, b, pairs)
    program = compare_fixes(*results) if results else None
    if json_path:
        document = {"warning": warning, "vanished": vanished, "new": new,
                    "fix_check": fix_check_json(program),
                    "comparisons": [comparison_json(c) for c in comparisons]}
        if said := write_json(document, json_path, "comparison"):
            status(said)
    if json_path == STDOUT:
        return
    if warning:
        errors.print(f"rooflint: {printable(warning)}", style="bold yellow", markup=False)
    render_fix_comparison(console, program)
    shown = shown_labels([side for pair in pairs for side in pair])
    if len(comparisons) > 1:
        console.print(decisions_line(comparisons), markup=False)
    for comparison in comparisons:
        if request.depth is Depth.SUMMARY:
            render_comparison_sentence(console, comparison, shown)
        else:
            render_comparison(console, comparison, shown)
    for what, names in (("only in A (vanished in B)", vanished), ("only in B (new)", new)):
        if names:
            console.print(f"{what}: {printable(', '.join(names))}", markup=False)


def comparison_json(c: Comparison) -> dict:
    """A pair's comparison as the JSON holds it, its sentences written out."""
    return {**asdict(c), "sentence": c.sentence,
            "attribution": c.attribution and {**asdict(c.attribution),
                                              "sentence": c.attribution.sentence}}


def fix_check_json(program: ProgramComparison | None) -> dict | None:
    """Two profiles' per-fix comparison as the JSON holds it: the text's rows, with each
    fix's measured saving and its ratio to the prediction written out, and whether the
    step followed the GPU time saved."""
    if program is None:
        return None
    steps = program.steps and {**asdict(program.steps), "follows_gpu": program.steps.follows_gpu}
    return {**asdict(program), "steps": steps, "fixes": [
        {**asdict(f), "measured_s": f.measured_s, "ratio": f.ratio} for f in program.fixes]}


COMPARED_NAME_WIDTH = 60   # a side's name in the sentence and the columns (whole in the JSON)


def shown_labels(sides: list[Side]) -> dict[str, str]:
    """Each side's label as the screen shows it: its variant's name shortened as the
    tables shorten names (a profile's kernels run to 90 characters, and cuDNN's forward and
    backward share head and tail), a file's name after it kept whole."""
    names = shortened_names((s.variant.name for s in sides), COMPARED_NAME_WIDTH)
    return {s.label: names[s.variant.name] + s.label[len(s.variant.name):] for s in sides
            if s.label.startswith(s.variant.name)}
