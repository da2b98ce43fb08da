"""Issue 48's scoreboard: ``python3 benchmarks/moves.py [--gpu h200] [--pairs FILE] [--out FILE]``.

Scores one-move pairs (benchmarks/moves/pairs.yaml: two variants of a family in a
committed result, the second the first plus one named move) with
rooflint/judge/move_scores.py: each pair's predicted gain for the move made against the
speed-up it realised, the median and 90th percentile of |log(predicted / realised)|, the
pairs whose top move is the move made, the traps ruled out. Needs no GPU: it reads the
results the pairs name and judges their variants again by today's rules (the samples and
counters as measured, each result's GPU and date kept beside the scores).
Prints a table and writes the scores as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import asdict, replace
from pathlib import Path

import yaml

from rooflint.analysis.moves import CATALOG
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.common.errors import RooflintError
from rooflint.common.printable import printable
from rooflint.common.vocabularies import CacheMode
from rooflint.formats import calibration as calibrations
from rooflint.formats.family_job import TimingJob, resolve
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.formats.manifest import load_manifest
from rooflint.formats.results import RunResult, VariantResult, read_result
from rooflint.judge.move_scores import Pair, PairScore, score_pair, scoreboard

REPO = Path(__file__).resolve().parent.parent
PAIRS = REPO / "benchmarks" / "moves" / "pairs.yaml"
# The manifests and calibrations the committed results were run with.
MANIFESTS = {"gemm_walk": REPO / "examples" / "gemm_walk" / "kernel.yaml",
             "move_corpus": REPO / "benchmarks" / "moves" / "corpus" / "kernel.yaml",
             "sgemm_tutorial": REPO / "benchmarks" / "moves" / "sgemm_tutorial" / "kernel.yaml"}
CALIBRATIONS = {"h200": REPO / "examples" / "h200-calibration.json",
                "h100-sxm": REPO / "examples" / "h100-calibration.json"}


def rejudged(result: RunResult, family_name: str) -> dict[str, VariantResult]:
    """A family's variants judged again by today's rules on what the result measured (its
    samples, counters and the manifest's model), as `rooflint run` would judge them now."""
    family = next(f for f in result.families if f.name == family_name)
    manifest = load_manifest(MANIFESTS.get(family_name,
                                           REPO / "kernels" / family_name / "kernel.yaml"))
    models = resolve(manifest, {}, {"num_sms": result.gpu.sms}, TimingJob()).models
    spec = find_spec(result.spec_id, load_specs())
    calibration = (calibrations.load(CALIBRATIONS[spec.id])
                   if result.settings.calibration and spec.id in CALIBRATIONS else None)
    judged = {}
    for v in family.variants:
        model = models[v.name]
        analysis = analyse(Observation(
            name=v.name, precision=v.precision, samples_s=v.samples_s, counters=v.counters,
            model=Model(model.flops, model.bytes, model.written_bytes),
            grid_blocks=model.grid_blocks, threads_per_block=model.threads_per_block,
            launches=model.launches,
            graph_samples_s=[v.graph_time.median_s] if v.graph_time else [],
            cached=result.settings.cache == CacheMode.WARM), spec, result.gpu.sms, calibration)
        judged[v.name] = replace(v, verdict=analysis.verdict)
    return judged


class BadPairs(Exception):
    """A pairs file, or an argument, the board cannot be made from: one line says why."""


GPU_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
FIELDS = ("pair", "result", "family", "before", "after", "move")


def load_pairs(path: Path, gpu: str) -> tuple[list[tuple[str, Pair]], int]:
    """The pairs of ``path`` measured on ``gpu`` (all, or those whose ``gpus`` name it),
    each with its result's path (GPU in it replaced by ``gpu``), every field checked before
    any result is read; and how many pairs were measured on other GPUs only."""
    try:
        entries = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BadPairs(f"{path}: cannot be read as YAML ({type(exc).__name__})") from None
    if not isinstance(entries, list) or not entries:
        raise BadPairs(f"{path}: not a list of pairs")
    moves = {rule.id for rule in CATALOG}
    pairs = []
    for number, entry in enumerate(entries, 1):
        where = f"{path}: pair {number}"
        if not isinstance(entry, dict):
            raise BadPairs(f"{where}: not a mapping")
        missing = [f for f in FIELDS if not isinstance(entry.get(f), str) or not entry[f]]
        if missing:
            raise BadPairs(f"{where}: {', '.join(missing)} missing or not text")
        if entry["move"] not in moves:
            raise BadPairs(f"{where}: move {entry['move']!r} is not one of the catalog's")
        measured_on = entry.get("gpus")
        if measured_on is not None and not (isinstance(measured_on, list) and all(
                isinstance(g, str) and GPU_NAME.fullmatch(g) for g in measured_on)):
            raise BadPairs(f"{where}: gpus is not a list of GPUs' short names")
        if measured_on is not None and gpu not in measured_on:
            continue                # measured on other GPUs only
        result = entry["result"].replace("GPU", gpu)
        if not (REPO / result).resolve().is_relative_to(REPO):
            raise BadPairs(f"{where}: result {result!r} is outside the repository")
        pairs.append((result, Pair(entry["pair"], entry["family"], entry["before"],
                                   entry["after"], entry["move"], entry.get("trap") is True)))
    return pairs, len(entries) - len(pairs)


def scores_of(pairs: list[tuple[str, Pair]]) -> tuple[list[PairScore], dict[str, RunResult]]:
    """Each pair scored on its result's variants judged again (each family once)."""
    results: dict[str, RunResult] = {}
    judged: dict[tuple[str, str], dict[str, VariantResult]] = {}
    scores = []
    for path, pair in pairs:
        if path not in results:
            try:
                results[path] = read_result(REPO / path)
            except RooflintError as exc:
                raise BadPairs(f"{pair.name}: {exc}") from None
        if (path, pair.family) not in judged:
            if not any(f.name == pair.family for f in results[path].families):
                raise BadPairs(f"{pair.name}: {path} holds no family {pair.family!r}")
            judged[path, pair.family] = rejudged(results[path], pair.family)
        variants = judged[path, pair.family]
        for name in (pair.before, pair.after):
            if name not in variants or variants[name].time is None:
                raise BadPairs(f"{pair.name}: {pair.family} in {path} has no timed variant "
                               f"{name!r}")
        scores.append(score_pair(pair, variants[pair.before], variants[pair.after]))
    return scores, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--gpu", default="h200", help="whose results: GPU in their paths")
    parser.add_argument("--out", type=Path, help="default: benchmarks/results/GPU/moves.json")
    args = parser.parse_args()
    try:
        if not GPU_NAME.fullmatch(args.gpu):
            raise BadPairs(f"--gpu {args.gpu!r}: a GPU's short name, as h200")
        out = args.out or REPO / "benchmarks" / "results" / args.gpu / "moves.json"
        pairs, others = load_pairs(args.pairs, args.gpu)
        if not pairs:
            raise BadPairs(f"{args.pairs}: no pair was measured on {args.gpu}")
        inputs = {args.pairs.resolve(), *((REPO / path).resolve() for path, _ in pairs)}
        if out.resolve() in inputs:
            raise BadPairs(f"--out {out}: one of the board's inputs, not overwritten")
        scores, results = scores_of(pairs)
    except BadPairs as exc:
        print(f"moves.py: {printable(str(exc))}", file=sys.stderr)
        sys.exit(2)
    board = scoreboard(scores)
    made = {path: {"gpu": r.gpu.name, "created": r.created} for path, r in results.items()}
    document = {"results": made, **asdict(board),
                "pairs": [{**asdict(s), "error": s.error, "inside": s.inside} for s in scores]}
    out.write_text(json.dumps(document, indent=1) + "\n")   # before the table: a pipe may close
    if others:
        print(f"{others} pairs measured on other GPUs only are left out")
    for s in scores:
        shown = (f"{s.predicted:.2f}x" if s.predicted is not None else
                 "no estimate" if s.offered else "not offered")
        band = (f"{s.low or 1:.2f}-{f'{s.high:.3g}' if s.high else '?'}"
                if s.predicted is not None else "")
        print(f"{printable(s.pair):<36} {s.move:<23} {'trap ' if s.trap else ''}predicted "
              f"{shown:>11} {band:>11} ({s.basis or '-'}) realised {s.realised:.2f}x "
              f"{'   ' if s.trap else 'in ' if s.inside else 'OUT'} top: {s.top_move}")
    print(f"estimates ({board.estimates}): median |log(predicted/realised)| "
          f"{fmt(board.median_error)}, 90th percentile {fmt(board.p90_error)}; "
          f"inside the printed range {board.inside} of {board.moves}; "
          f"top move is the move made {board.top_is_move} of {board.moves}; traps ruled out "
          f"{board.traps_ruled_out} of {board.traps}")


def fmt(error: float | None) -> str:
    return f"log({math.exp(error):.2f})" if error is not None else "-"


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:        # `moves.py | head`: the reader has what it wanted
        sys.stderr.close()
        sys.exit(0)
