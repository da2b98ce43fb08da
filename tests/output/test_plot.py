"""`rooflint plot` on the recorded H200 results, with no GPU: what the picture shows, that
its labels can be read, that several files stay apart, and that a bad output path costs
one line and no file."""

import copy
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.transforms import Bbox
from edges import cli_runner

import rooflint
from rooflint.commands.cli import app
from rooflint.common.errors import RooflintError
from rooflint.output.plot_labels import LEADER_FROM, MAX_LABELS
from rooflint.output.plotting import figure, save
from rooflint.formats.results import read_result

from edges import assert_intact, assert_one_line_error, rooflint as run_rooflint, snapshot

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "fixtures" / "results" / "h200-bundled.json"
RESULTS = Path(__file__).parents[1] / "fixtures" / "results"
RESULT = RESULTS / "h200-bundled.json"
WALK = ["naive", "coalesced", "tiled", "blocked_1d", "blocked_2d"]
runner = cli_runner()


@pytest.fixture(scope="module")
def result():
    return read_result(RESULT)


@pytest.fixture(scope="module")
def earlier():
    """The earlier H200 run of gemm_fp32 and stream (tests/fixtures/results)."""
    return RESULTS / "h200-stream-gemm_fp32.json"


@pytest.fixture(autouse=True)
def close_figures():
    """The axes a test passes as a user would (plt.subplots) are pyplot's, kept until closed;
    figure()'s own are not pyplot's (test_a_figure_leaves_pyplot_alone)."""
    before = set(plt.get_fignums())
    yield
    for number in set(plt.get_fignums()) - before:
        plt.close(number)


@pytest.fixture(scope="module")
def everything():
    """Every variant of the recorded H200 run (tests/fixtures/results/h200-bundled.json),
    drawn once for the tests that only look."""
    return figure([read_result(EXAMPLE)])


def svg_ids(path: Path) -> list[str]:
    return [e.get("id") for e in ET.parse(path).iter() if e.get("id")]


def drawn(fig) -> tuple:
    fig.canvas.draw()
    return fig.axes[0], fig.canvas.get_renderer()


def labels(ax) -> dict[str, object]:
    """The variants' labels by their SVG id (``label-KEY``)."""
    return {t.get_gid(): t for t in ax.texts if (t.get_gid() or "").startswith("label-")}


def notes(ax) -> str:
    """The notes under the chart: what it leaves out."""
    return "\n".join(t.get_text() for t in ax.texts if t.xycoords == "axes fraction")


def marker_boxes(ax, renderer) -> list[Bbox]:
    """Every marker drawn (dots, hollow markers, ridge diamonds), as a box on the canvas."""
    boxes = []
    for line in ax.get_lines():
        if line.get_marker() in ("None", "", None):
            continue
        radius = renderer.points_to_pixels(line.get_markersize()) / 2
        for x, y in line.get_transform().transform(line.get_xydata()):
            boxes.append(Bbox([[x - radius, y - radius], [x + radius, y + radius]]))
    return boxes


# --- labels ------------------------------------------------------------------------------

DECODE = ["v0_two_pass", "v1_online_naive", "v1_prefetch", "v2_single_sync", "v3_vectorized",
          "v4_split_k", "v5_cp_async", "int8_kv", "int4_kivi", "v6a_more_warps",
          "v6b_bytes_in_flight", "v6_gqa_group", "sdpa"]
LAYOUTS = {
    "every variant of the example": None,
    "the gemm walk with arrows": lambda r, e: ([r], WALK + ["cublas"], True),
    "decode_attention, eleven dots at one intensity": lambda r, e: ([r], DECODE, False),
    "the earlier gemm_fp32 and stream run": lambda r, e: ([read_result(e)], None, False),
    "both runs, every variant twice": lambda r, e: ([r, read_result(e)], None, False),
    "the gemm walk with its L2 and L1 marks": lambda r, e: ([with_levels(r, 0.8)],
                                                            WALK + ["cublas"], False),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_labels_overlap_no_label_marker_or_text(layout, result, earlier, everything):
    """The example overlapped sdpa / v6_gqa_group, blocked_2d / cublas, v0-v3 and
    triad / warp_shuffle; every label's rendered box must now stand clear of every other
    text (labels, ridge notes) and every marker, inside the axes."""
    ax, renderer = drawn(figure(*LAYOUTS[layout](result, earlier)) if LAYOUTS[layout] else
                         everything)
    placed = {gid: t.get_window_extent(renderer) for gid, t in labels(ax).items()}
    dots = [line for line in ax.get_lines() if (line.get_gid() or "").startswith("variant-")]
    assert len(placed) == len(dots) >= 5
    texts = [t.get_window_extent(renderer) for t in ax.texts if t.get_text()]
    touching = [(a, b) for a, b in combinations(texts, 2) if a.overlaps(b)]
    assert touching == []
    on_markers = [gid for gid, box in placed.items()
                  if any(box.overlaps(m) for m in marker_boxes(ax, renderer))]
    assert on_markers == []
    outside = [gid for gid, box in placed.items()
               if not (ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and
                       ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1)]
    assert outside == []


def test_dots_with_no_room_beside_them_stay_unnamed_and_are_counted(result):
    """A result of many variants at one point (the campaign's replicated variant) draws in
    bounded time: the first variants take the spots around the point, the rest get no label
    (one on another's spot would name neither; it had been drawn over the others), and a
    line under the chart counts them."""
    family = result.families[0]
    many = [replace(family.variants[0], name=f"v{i}") for i in range(MAX_LABELS + 40)]
    fig = figure([replace(result, families=[replace(family, variants=many)])])
    ax, renderer = drawn(fig)
    named = labels(ax)
    assert 20 <= len(named) < MAX_LABELS and "label-v0" in named
    boxes = [t.get_window_extent(renderer) for t in named.values()]
    assert not [(a, b) for a, b in combinations(boxes, 2) if a.overlaps(b)]
    assert f"{MAX_LABELS + 40 - len(named)} dots unnamed, with no room beside them" in \
        notes(ax)


def test_a_label_moved_away_from_its_dot_has_a_leader(everything):
    """In the v0-v3 cluster labels cannot sit beside their dots; each that moved is joined
    to its dot by a leader line (``leader-KEY``), and no label near its dot has one."""
    ax, renderer = drawn(everything)
    leaders = {t.arrow_patch.get_gid() for t in ax.texts
               if t.arrow_patch is not None
               and (t.arrow_patch.get_gid() or "").startswith("leader-")}
    pixels = renderer.points_to_pixels(1.0)
    dots = {line.get_gid(): ax.transData.transform(line.get_xydata()[0]) for line in ax.get_lines()
            if (line.get_gid() or "").startswith("variant-")}
    moved = set()
    for gid, text in labels(ax).items():
        key = gid.removeprefix("label-")
        box, dot = text.get_window_extent(renderer), dots[f"variant-{key}"]
        near = np.clip(dot, box.min, box.max)
        if np.hypot(*(near - dot)) > LEADER_FROM * pixels:
            moved.add(f"leader-{key}")
    assert {"leader-v1_prefetch", "leader-v2_single_sync"} <= moved
    assert leaders == moved


# --- several files -----------------------------------------------------------------------

def test_two_files_sharing_variant_names_keep_ids_and_labels_apart(earlier, tmp_path):
    """Two runs of the gemm walk: before, both dots were `variant-tiled` and both labels
    `tiled`. Now each file has its number in ids and labels, and the legend says which
    run each number is."""
    out = tmp_path / "two.svg"
    args = ["plot", str(RESULT), str(earlier), "-o", str(out)] + \
        [a for n in WALK for a in ("-v", n)] + ["--trajectory"]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    ids = svg_ids(out)
    assert len(ids) == len(set(ids))
    assert [i for i in ids if i.startswith("variant-")] == \
        [f"variant-{k}-{n}" for n in WALK for k in (1, 2)]
    texts = ["".join(e.itertext()) for e in ET.parse(out).iter("{http://www.w3.org/2000/svg}text")]
    shown = [t for t in texts if t.split(" (")[0] in WALK]
    assert sorted(shown) == sorted(f"{n} ({k})" for n in WALK for k in (1, 2))
    assert "(1) run of 2026-11-21T13:31:30+00:00" in texts
    assert "(2) run of 2026-11-21T12:23:09+00:00" in texts


def test_a_name_two_families_share_is_qualified_by_family(result, tmp_path):
    twin = copy.deepcopy(result)
    w4a16 = next(f for f in twin.families if f.name == "w4a16_gemv")
    w4a16.variants[0] = replace(w4a16.variants[0], name="naive")
    path = tmp_path / "twin.svg"
    save(figure([twin], ["naive"]), path)
    ids = svg_ids(path)
    assert len(ids) == len(set(ids))
    assert {"variant-gemm_fp32/naive", "variant-w4a16_gemv/naive"} <= set(ids)
    assert {"gemm_fp32/naive", "w4a16_gemv/naive"} <= {e.text for e in ET.parse(path).iter()}


# --- what the picture says ---------------------------------------------------------------

def test_the_legend_explains_dots_hollow_markers_gap_lines_and_roofs(result):
    ax, _ = drawn(figure([result], WALK + ["cublas"]))
    legend = ax.get_legend()
    entries = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles))
    hollow = next(h for t, h in entries.items() if t.startswith("algorithmic intensity"))
    assert "compulsory bytes only" in next(t for t in entries if t.startswith("algorithmic"))
    assert hollow.get_marker() == "o" and hollow.get_markerfacecolor() == "none"
    gap = next(h for t, h in entries.items() if t.startswith("gap between observed"))
    assert gap.get_linestyle() == ":"
    assert {"chain-bound", "compute-bound", "fp32 roof (datasheet)", "L2 roof (calibrated)"} \
        <= set(entries)


def test_the_y_axis_reads_in_tflops_and_the_x_axis_in_flop_per_byte(result):
    ax, _ = drawn(figure([result], WALK))
    assert ax.get_ylabel() == "achieved TFLOP/s"
    assert ax.get_xlabel() == "arithmetic intensity (FLOP / DRAM byte)"
    ticks = {tick.get_loc(): tick.label1.get_text() for tick in ax.yaxis.get_major_ticks()}
    assert ticks[1e12] == "1" and ticks[1e13] == "10" and ticks[1e14] == "100"
    blocked = rooflint.variant(result, "blocked_2d").point.achieved_flops
    assert ax.get_lines()[0].get_ydata().max() > 1e13 and 4e13 < blocked < 5e13  # data in FLOP/s


def test_the_title_names_family_size_and_gpu_and_stays_short(result, everything):
    ax, _ = drawn(figure([result], WALK))
    assert ax.get_title() == "gemm_fp32 (N=4096) on NVIDIA H200"
    ax, renderer = drawn(everything)
    assert ax.get_title() == \
        "causes, decode_attention, gemm_fp32, reduction, stream, w4a16_gemv on NVIDIA H200"
    assert ax.title.get_window_extent(renderer).width <= ax.bbox.width
    _, narrow = plt.subplots(figsize=(6, 4))
    fig = rooflint.plot(result, ax=narrow)                       # the Python API, on your axes
    assert fig is narrow.figure and narrow.get_title() == "6 families on NVIDIA H200"


# A notebook's session: its backend chosen (the inline one is a module; svg stands in for it
# here), one plot of its own open; then rooflint draws a profile's roofline and shows it.
IN_A_NOTEBOOK = """
import matplotlib.pyplot as plt
import rooflint
from rooflint.output.plotting import rendered
plt.subplots()
fig = rooflint.plot(rooflint.load("examples/profile/h200-profile-eager.json"))
png = fig._repr_png_()
print(plt.get_backend(), plt.get_fignums(), png[:8] == b"\\x89PNG\\r\\n\\x1a\\n",
      png == rendered(fig, "png"))
"""


def test_a_figure_leaves_pyplot_alone():
    """Drawing changes no matplotlib state: the notebook keeps its backend (forcing Agg once
    switched a notebook's inline plots off) and pyplot holds only the user's figure; the
    figure shows itself as the PNG `plot -o roofline.png` writes. In a fresh interpreter:
    a backend is chosen once a process."""
    done = subprocess.run([sys.executable, "-c", IN_A_NOTEBOOK], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "MPLBACKEND": "svg"})
    assert (done.returncode, done.stdout, done.stderr) == (0, "svg [1] True True\n", "")


# --- the SVG, the CLI, the API -----------------------------------------------------------

def test_plot_the_gemm_walk_as_svg(result, tmp_path):
    path = tmp_path / "walk.svg"
    save(figure([result], WALK, trajectory=True), path)
    ids = svg_ids(path)
    assert {"roof-fp32", "roof-fp32-datasheet", "ridge-fp32"} <= set(ids)
    assert [i for i in ids if i.startswith("variant-")] == [f"variant-{n}" for n in WALK]
    assert [i for i in ids if i.startswith("algorithmic-")] == [f"algorithmic-{n}" for n in WALK]
    assert sorted(i for i in ids if i.startswith("label-")) == sorted(f"label-{n}" for n in WALK)
    assert sorted(i for i in ids if i.startswith("trajectory-")) == \
        [f"trajectory-{k}" for k in range(1, len(WALK))]
    assert "NVIDIA H200" in path.read_text()


def test_the_svg_is_deterministic(result, tmp_path):
    """Labels placed around a cluster, leaders and arrows included, land the same way."""
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    save(figure([result], DECODE, trajectory=True), first)
    save(figure([result], DECODE, trajectory=True), second)
    assert first.read_bytes() == second.read_bytes()


def test_plot_everything_places_what_it_can(everything, tmp_path):
    path = tmp_path / "all.png"
    save(everything, path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    svg = tmp_path / "all.svg"
    save(everything, svg)
    placed = [i for i in svg_ids(svg) if i.startswith("variant-")]
    assert "variant-v3_vectorized" in placed and "variant-copy_float4" not in placed  # no FLOPs
    assert "roof-fp16" in svg_ids(svg)                      # w4a16's cuBLAS row is fp16
    assert "copy_float4" in svg.read_text()                 # named in the "not placed" note


def test_plot_refuses_mixed_gpus(result):
    other = copy.deepcopy(result)
    other.gpu = replace(other.gpu, name="NVIDIA H100 80GB HBM3")
    with pytest.raises(RooflintError, match="different GPUs"):
        figure([result, other])


def test_plot_cli_without_a_gpu(tmp_path):
    out = tmp_path / "r.svg"
    outcome = runner.invoke(app, ["plot", str(RESULT), "-o", str(out), "-v", "tiled",
                                  "-v", "blocked_2d", "--trajectory"])
    assert outcome.exit_code == 0, outcome.output
    assert "trajectory-1" in svg_ids(out)


def test_a_picture_is_written_with_normal_permissions(result, tmp_path):
    path = tmp_path / "walk.svg"
    old = os.umask(0o022)
    try:
        save(figure([result], WALK), path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_keeps_the_old_picture_and_leaves_no_partial_file(result, tmp_path,
                                                                         monkeypatch):
    path = tmp_path / "walk.png"
    path.write_bytes(b"the picture from yesterday")
    before = snapshot(tmp_path)
    fig = figure([result], WALK)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("rooflint.formats.jsonfile.os.fsync", disk_full)   # after a partial write
    with pytest.raises(RooflintError, match=f"cannot write {path}: No space left on device"):
        save(fig, path)
    assert_intact(before)
    assert sorted(tmp_path.iterdir()) == [path]


# --- bad output paths --------------------------------------------------------------------

def read_only_directory(tmp_path: Path) -> Path:
    """A directory this process cannot write, holding the picture rooflint drew there
    yesterday: a chmod 0o555 one, or, as root (who writes there anyway), /sys, which the
    kernel refuses to anyone."""
    locked = tmp_path / "locked"
    locked.mkdir()
    save(figure([read_result(EXAMPLE)], ["tiled"]), locked / "roofline.svg")
    locked.chmod(0o555)
    return locked if not os.access(locked, os.W_OK) else Path("/sys")


BAD_OUTPUTS = {
    "missing directory": (lambda tmp: tmp / "missing" / "roofline.svg", "no directory"),
    "read-only directory": (lambda tmp: read_only_directory(tmp) / "roofline.svg",
                            "Permission denied"),
    "unsupported extension": (lambda tmp: tmp / "roofline.jpg", "use .svg, .png or .pdf"),
    "no extension": (lambda tmp: tmp / "roofline", "use .svg, .png or .pdf"),
    "a directory": (lambda tmp: tmp / "pictures.svg", "Is a directory"),
}


@pytest.mark.parametrize("case", list(BAD_OUTPUTS))
def test_a_bad_output_path_is_one_line_and_no_file_lost(case, tmp_path):
    path_of, reason = BAD_OUTPUTS[case]
    (tmp_path / "roofline.jpg").write_bytes(b"someone's photo")
    (tmp_path / "pictures.svg").mkdir()
    (tmp_path / "pictures.svg" / "keep.svg").write_text("<svg/>")
    output = path_of(tmp_path)
    before = snapshot(tmp_path)
    listing = sorted(tmp_path.rglob("*"))
    try:
        outcome = run_rooflint("plot", str(EXAMPLE), "-v", "tiled", "-o", str(output))
    finally:
        for directory in tmp_path.iterdir():
            if directory.is_dir():
                directory.chmod(0o755)
    assert_one_line_error(outcome, 2, f"cannot write {output}", reason)
    assert_intact(before)
    assert sorted(tmp_path.rglob("*")) == listing          # no partial or temporary file


def with_levels(result, l2_bandwidth_share: float):
    """The gemm walk of the recorded run with levels added to each variant, as a run with
    counters now gives them: L2 traffic 3x and L1 traffic 10x the DRAM bytes, and
    calibrated L2 and L1 roofs ``1 / l2_bandwidth_share`` times tiled's L2 and L1
    bandwidths."""
    from rooflint.analysis.roofline import levels
    result = copy.deepcopy(result)
    gemm = next(f for f in result.families if f.name == "gemm_fp32")
    tiled = next(v for v in gemm.variants if v.name == "tiled")
    l2_roof = 3 * tiled.point.dram_bytes / tiled.point.time_s / l2_bandwidth_share
    l1_roof = 10 / 3 * l2_roof
    result.settings.l2_bandwidth, result.settings.l1_bandwidth = l2_roof, l1_roof
    for v in gemm.variants:
        if v.point:
            v.levels = levels(v.point, v.roofs, 3 * v.point.dram_bytes, l2_roof,
                              10 * v.point.dram_bytes, l1_roof, 0.5)
    return result


def test_each_kernel_has_a_mark_per_memory_level_on_that_levels_roof(result):
    """Hierarchical roofline: tiled moving exactly its L2 and L1 roofs' bandwidths has its
    L2 square on the L2 roof line, at its L2 intensity (a third of its DRAM one), and its
    L1 triangle on the L1 roof line at a tenth, all at its FLOP/s."""
    fig = figure([with_levels(result, 1.0)], names=WALK)
    ax, _ = drawn(fig)
    marks = {line.get_gid(): line for line in ax.lines if line.get_gid()}
    dot = marks["variant-tiled"].get_xydata()[0]
    square = marks["level-l2-tiled"].get_xydata()[0]
    triangle = marks["level-l1-tiled"].get_xydata()[0]
    assert square == pytest.approx([dot[0] / 3, dot[1]]) and triangle == pytest.approx(
        [dot[0] / 10, dot[1]])
    for level, mark in (("l2", square), ("l1", triangle)):
        roof = marks[f"roof-{level}"].get_xydata()
        on_roof = np.interp(np.log(mark[0]), np.log(roof[:, 0]), np.log(roof[:, 1]))
        assert np.exp(on_roof) == pytest.approx(mark[1], rel=1e-6), level
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "the same kernel's FLOP per L2 byte" in legend
    assert {f"level-l1-{name}" for name in WALK} <= set(marks)


def test_a_run_without_levels_draws_no_level_marks(result):
    ax, _ = drawn(figure([result], names=WALK))
    assert not [line for line in ax.lines if (line.get_gid() or "").startswith("level")]
