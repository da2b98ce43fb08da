"""Issue 48's scoreboard: ``python3 benchmarks/moves.py [--pairs FILE] [--out FILE]``.

Scores one-move pairs (benchmarks/moves/pairs.yaml: two variants of a family in a
committed result, the second the first plus one named move) with
rooflint/judge/move_scores.py: each pair's predicted gain for the move made against the
speed-up it realised, the median and 90th percentile of |log(predicted / realised)|, the
pairs whose top move is the move made, the traps ruled out. Needs no GPU: it reads the
results the pairs name, with the verdicts they were written with (each result's GPU and
date are kept beside the scores): re-run the families to score today's predictions.
Prints a table and writes the scores as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from pathlib import Path

import yaml

from rooflint.formats.results import read_result
from rooflint.judge.move_scores import Pair, score_pair, scoreboard

REPO = Path(__file__).resolve().parent.parent
PAIRS = REPO / "benchmarks" / "moves" / "pairs.yaml"
OUT = REPO / "benchmarks" / "results" / "h200" / "moves.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    entries = yaml.safe_load(args.pairs.read_text())
    results, scores = {}, []
    for entry in entries:
        path = entry["result"]
        if path not in results:
            results[path] = read_result(REPO / path)
        family = next(f for f in results[path].families if f.name == entry["family"])
        variants = {v.name: v for v in family.variants}
        pair = Pair(entry["pair"], entry["family"], entry["before"], entry["after"],
                    entry["move"], bool(entry.get("trap", False)))
        scores.append(score_pair(pair, variants[pair.before], variants[pair.after]))
    board = scoreboard(scores)
    for s in scores:
        shown = (f"{s.predicted:.2f}x" if s.predicted is not None else
                 "no estimate" if s.offered else "not offered")
        print(f"{s.pair:<38} {s.move:<23} {'trap ' if s.trap else ''}predicted {shown:>11} "
              f"realised {s.realised:.2f}x  top: {s.top_move}")
    print(f"median |log(predicted/realised)| {fmt(board.median_error)}, 90th percentile "
          f"{fmt(board.p90_error)}; top move is the move made {board.top_is_move} of "
          f"{board.moves}; traps ruled out {board.traps_ruled_out} of {board.traps}")
    made = {path: {"gpu": r.gpu.name, "created": r.created} for path, r in results.items()}
    document = {"results": made, **asdict(board),
                "pairs": [{**asdict(s), "error": s.error} for s in scores]}
    args.out.write_text(json.dumps(document, indent=1) + "\n")


def fmt(error: float | None) -> str:
    return f"log({math.exp(error):.2f})" if error is not None else "-"


if __name__ == "__main__":
    main()
