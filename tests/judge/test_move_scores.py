"""Issue 48's scoreboard (judge/move_scores.py, benchmarks/moves.py) on the committed H200
results: each pair's prediction and realised speed-up read again from the raw JSON, the
committed scoreboard what the script writes from them, and the error's quantiles by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import yaml

from edges import REPO
from rooflint.formats.results import read_result
from rooflint.judge.move_scores import PairScore, percentile, scoreboard

sys.path.insert(0, str(REPO / "benchmarks"))

PAIRS = yaml.safe_load((REPO / "benchmarks" / "moves" / "pairs.yaml").read_text())
BOARD = REPO / "benchmarks" / "results" / "h200" / "moves.json"


def raw_variant(result: str, family: str, name: str) -> dict:
    document = json.loads((REPO / result).read_text())
    found = next(f for f in document["families"] if f["name"] == family)
    return next(v for v in found["variants"] if v["name"] == name)


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_the_committed_scoreboard_is_what_the_script_writes(tmp_path, gpu):
    out = tmp_path / "moves.json"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "moves.py"), "--gpu", gpu,
                           "--out", str(out)], check=True, capture_output=True, text=True,
                          timeout=120)
    committed = REPO / "benchmarks" / "results" / gpu / "moves.json"
    assert json.loads(out.read_text()) == json.loads(committed.read_text())
    # the corpus and the tutorial were measured on the H200 only: said, not silently dropped
    left_out = sum(gpu not in e.get("gpus", [gpu]) for e in PAIRS)
    assert (f"{left_out} pairs measured on other GPUs only are left out" in done.stdout) \
        == bool(left_out)


@pytest.mark.parametrize("entry", [{**e, "result": e["result"].replace("GPU", "h200")}
                                   for e in PAIRS], ids=lambda e: e["pair"])
def test_each_pair_s_speed_up_is_its_variants_and_its_prediction_today_s_verdict(entry):
    """The speed-up from the raw JSON's medians; the prediction from the first variant
    judged again by today's rules, which place it where the result placed it (the same
    time, FLOPs and bytes: only the rules may have moved since)."""
    from moves import rejudged
    board = {p["pair"]: p for p in json.loads(BOARD.read_text())["pairs"]}
    scored = board[entry["pair"]]
    before = raw_variant(entry["result"], entry["family"], entry["before"])
    after = raw_variant(entry["result"], entry["family"], entry["after"])
    assert scored["realised"] == pytest.approx(
        before["time"]["median_s"] / after["time"]["median_s"], rel=1e-12)
    today = rejudged(read_result(REPO / entry["result"]), entry["family"])[entry["before"]]
    assert today.point.achieved_flops == pytest.approx(before["point"]["achieved_flops"], rel=1e-9)
    assert today.point.dram_fraction == pytest.approx(before["point"]["dram_fraction"], rel=1e-9)
    made = [m for m in today.verdict.moves if m.id == entry["move"]]
    assert scored["offered"] == bool(made)
    assert scored["top_move"] == today.verdict.moves[0].id
    assert scored["predicted"] == (made[0].gain if made else None)
    assert (scored["low"], scored["high"]) == ((made[0].gain_low, made[0].gain_high)
                                               if made else (None, None))
    assert scored["trap"] == bool(entry.get("trap", False))


# Where the H200 board's first verdicts miss, and why. Tops another move: the decode
# kernel's grid fills 6 % of the GPU's warps (split-K realised 7.6x from v3); a copy at 62 %
# of DRAM's roof is told fewer bytes first, as the book's decode walk is at that point; the
# tutorial's kernels 5 and 9 are told their bank conflicts first (1.23x, 1.27x), where the
# tutorial vectorized (1.21x) and warp-tiled (1.17x; warp tiling is not offered while
# conflicts show). Outside the printed range: the GQA group's K/V reuse (0.87x: its L2
# traffic fell, its time did not), the tutorial's padded tile (0.74x of "0.76x to 1.71x").
TOPPED_BY_ANOTHER = {"decode V load hoisted": "fill_the_gpu",
                     "decode cp.async double buffering": "fill_the_gpu",
                     "vectorized global copy": "fewer_bytes_per_element",
                     "tutorial 6 vectorized": "bank_conflicts_off",
                     "tutorial 10 warp tiling": "bank_conflicts_off"}
OUTSIDE = {"decode K/V read once per GQA group", "tutorial 8 extra column",
           "tutorial 10 warp tiling"}
NOT_OFFERED = {"tutorial 10 warp tiling"}


@pytest.mark.parametrize("scored", json.loads(BOARD.read_text())["pairs"],
                         ids=lambda p: p["pair"])
def test_each_pair_tops_its_move_and_each_trap_is_ruled_out(scored):
    """On the recorded counters of every pair (issue 48): a trap's move is not offered; a
    pair's move is offered, tops the verdict and realises a speed-up in the printed range,
    but for the misses named above."""
    if scored["trap"]:
        assert not scored["offered"]
        return
    assert scored["offered"] == (scored["pair"] not in NOT_OFFERED)
    assert scored["top_move"] == TOPPED_BY_ANOTHER.get(scored["pair"], scored["move"])
    assert scored["inside"] == (scored["pair"] not in OUTSIDE)


def test_the_h200_board_meets_issue_48s_targets():
    board = json.loads(BOARD.read_text())
    assert board["moves"] + board["traps"] >= 24
    assert board["median_error"] <= math.log(1.15)
    assert board["inside"] >= 0.9 * board["moves"]
    assert board["traps_ruled_out"] == board["traps"]


def test_the_board_reads_the_targets_figures():
    """Hand-computed: errors log(2), log(1), log(4) and a pair with no prediction; one of
    two traps offered."""
    def pair(name, predicted, realised, top="m", move="m", trap=False, offered=True,
             basis="evidence", low=None, high=None):
        return PairScore(pair=name, move=move, trap=trap, offered=offered, rank=1, top_move=top,
                         predicted=predicted, basis=basis, low=low, high=high,
                         realised=realised)
    board = scoreboard([pair("a", 2.0, 1.0, low=1.33, high=3.0),
                        pair("s", 1.2, 0.9, low=0.8, high=1.8),   # a band below 1, as printed
                        pair("b", 1.5, 1.5, low=1.0, high=2.25),
                        pair("c", 1.0, 4.0, top="x", low=0.67, high=1.5),
                        pair("d", None, 2.0, offered=False),
                        pair("r", 40.0, 3.0, basis="roof", low=1.0, high=40.0),  # a range
                        pair("u", 2.0, 3.0, basis="at_least", low=2.0),   # no high end
                        pair("o", 4.0, 3.0),      # an older verdict: "up to" its gain
                        pair("t1", None, 1.0, trap=True, offered=False),
                        pair("t2", 1.2, 1.0, trap=True)])
    assert board.estimates == 5    # errors 0, log(4/3), log(4/3), log(2), log(4)
    assert board.median_error == pytest.approx(math.log(4 / 3))
    assert board.p90_error == pytest.approx(math.log(2) + 0.6 * (math.log(4) - math.log(2)))
    assert (board.top_is_move, board.moves) == (7, 8)
    # a: 1.0 under 1.33; s: 0.9 in 0.8-1.8; b: 1.5 in 1-2.25; c: 4 past 1.5; r: 3 of 40;
    # u: 3 past 2; o: 3 of 4
    assert board.inside == 5

    assert (board.traps_ruled_out, board.traps) == (1, 2)


def test_quantiles_run_from_the_least_to_the_most_in_order():
    values = sorted([0.3, 0.1, 2.0, 0.7, 0.7, 1.4])
    qs = [i / 20 for i in range(21)]
    found = [percentile(values, q) for q in qs]
    assert found[0] == values[0] and found[-1] == values[-1]
    assert all(a <= b for a, b in zip(found, found[1:]))
    assert percentile([5.0], 0.9) == 5.0


def run_board(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "moves.py"), *args],
                          capture_output=True, text=True, timeout=120)


GOOD = ("- {pair: p, result: examples/GPU-bundled.json, family: stream, before: copy_scalar, "
        "after: copy_float4, move: vectorize_loads}")


@pytest.mark.parametrize("text, said", [
    ("[", "cannot be read as YAML"),
    ("{}", "not a list of pairs"),
    ("- 3", "pair 1: not a mapping"),
    ("- {pair: p, result: r}", "family, before, after, move missing"),
    (GOOD.replace("vectorize_loads", "teleport"), "move 'teleport' is not one of the catalog's"),
    (GOOD.replace("examples/GPU-bundled.json", "../../etc/passwd"), "outside the repository"),
    (GOOD.replace("GPU-bundled", "GPU-nothing"), "p: "),
    (GOOD.replace("family: stream", "family: nope"), "holds no family 'nope'"),
    (GOOD.replace("copy_float4", '"copy\\e[2J"'), "has no timed variant"),
    (GOOD.replace("move:", "gpus: h200, move:"), "gpus is not a list of GPUs' short names"),
    (GOOD.replace("move:", 'gpus: ["../h200"], move:'), "gpus is not a list"),
    (GOOD.replace("move:", "gpus: [h100], move:"), "no pair was measured on h200"),
])
def test_a_bad_pairs_file_gets_one_line_and_nothing_written(tmp_path, text, said):
    pairs, out = tmp_path / "pairs.yaml", tmp_path / "moves.json"
    pairs.write_text(text)
    done = run_board("--pairs", str(pairs), "--out", str(out))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr
    assert "\x1b" not in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_the_board_never_writes_over_one_of_its_inputs(tmp_path):
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(GOOD + "\n")
    for out in (pairs, REPO / "examples" / "h200-bundled.json"):
        before = out.read_bytes()
        done = run_board("--pairs", str(pairs), "--out", str(out))
        assert done.returncode == 2 and "not overwritten" in done.stderr
        assert out.read_bytes() == before
    done = run_board("--pairs", str(pairs), "--gpu", "../h200")
    assert done.returncode == 2 and "--gpu '../h200'" in done.stderr
