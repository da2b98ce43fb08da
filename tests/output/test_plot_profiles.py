"""`rooflint plot` on the recorded profiles (examples/profile), with no GPU: a program's
roofline stays readable however many kernels it has. Before, the H200 training step drew a
picture 5,468 pixels wide (its list of what is not placed on one line), its cuBLAS labels
on top of each other, an x axis to 1e9 FLOP/B (L1 intensities of GEMMs whose data went
around L1), and its bf16, fp32 and fp16 roofs alike."""

import re
import struct
import xml.etree.ElementTree as ET
from itertools import combinations
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from rooflint.formats.results import read_result
from rooflint.output.picture_marks import SVG
from rooflint.output.plot_marks import NUMBERED_KERNELS
from rooflint.output.plotting import (DPI, MAX_PIXELS, NOT_PLACED_NAMED, NOTE_CHARS, figure,
                                      rendered)

from edges import rooflint

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "examples" / "profile"
# The recorded profiles that drew worst: the training step of the report (30 kernels placed,
# 16 not, three precisions), the ResNet (88 placed, a picture 12,049 pixels wide), nanoGPT
# (an L1 intensity of 3e8), JAX (TF32 GEMMs whose names differ in the middle only), the
# regression of attorch (fp32, fp16 and fp16 tensor roofs).
HARD = ["h200-profile-train-eager", "h200-profile-convnet-eager", "h100-profile-nanogpt-eager",
        "h100-profile-jax", "h100-profile-attorch-regression"]


@pytest.fixture(scope="module")
def drawn():
    """Each hard profile drawn once, with its PNG's size in pixels and a renderer."""
    pictures = {}
    for name in HARD:
        fig = figure([read_result(PROFILES / f"{name}.json")])
        png = rendered(fig, "png")
        pictures[name] = fig, struct.unpack(">II", png[16:24])
    yield pictures
    for fig, _ in pictures.values():
        plt.close(fig)


def notes(ax) -> list[str]:
    """The lines under the chart: what it leaves out."""
    return [line for t in ax.texts if t.xycoords == "axes fraction"
            for line in t.get_text().splitlines()]


@pytest.mark.parametrize("name", HARD)
def test_the_picture_is_no_larger_than_the_caps(drawn, name):
    _, (width, height) = drawn[name]
    assert width <= MAX_PIXELS[0] and height <= MAX_PIXELS[1], (width, height)


@pytest.mark.parametrize("name", HARD)
def test_no_two_texts_overlap_and_no_label_sits_on_a_marker(drawn, name):
    """Labels, ridge notes, the notes under the chart, the title and the legend's key, as
    Agg renders them."""
    fig, _ = drawn[name]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_text()] + [ax.title] + ax.get_legend().get_texts()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    assert [(a, b) for (a, x), (b, y) in combinations(boxes, 2) if x.overlaps(y)] == []
    labels = [t.get_window_extent(renderer) for t in ax.texts
              if (t.get_gid() or "").startswith("label-")]
    markers = [line.get_transform().transform(line.get_xydata()) for line in ax.get_lines()
               if line.get_marker() not in ("None", "", None)]
    on_markers = [box for box in labels for points in markers for x, y in points
                  if box.x0 < x < box.x1 and box.y0 < y < box.y1]
    assert on_markers == []


@pytest.mark.parametrize("name", HARD)
def test_the_x_axis_stays_near_the_dots(drawn, name):
    """No inner level's intensity stretches the axis: the training step's right end had
    been 1e8 (nvjet's L1 at 2.6e7 FLOP/B), nanoGPT's 1e9."""
    ax = drawn[name][0].axes[0]
    assert ax.get_xlim()[1] < 1e5


def test_the_levels_data_went_around_are_left_out_and_said_so(drawn):
    """13 of the training step's placed kernels moved under half their DRAM bytes through
    L1 (its GEMMs, its flash attention), none through L2; the axis ends at 4x its furthest
    mark (the 1,458 FLOP/B GEMM), not at 4x the 26 million FLOP/B of an L1 that saw 1,984
    bytes."""
    ax = drawn["h200-profile-train-eager"][0].axes[0]
    assert any(line.startswith("L1 marks left out for 13 kernels: L1 moved under 50% of the "
                               "kernel's DRAM bytes") for line in notes(ax))
    assert not any(line.startswith("L2 marks") for line in notes(ax))
    triangles = [line.get_gid() for line in ax.get_lines()
                 if (line.get_gid() or "").startswith("level-l1-")]
    assert len(triangles) == 30 - 13
    assert "level-l1-nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NTT" not in triangles
    assert ax.get_xlim()[1] == pytest.approx(4 * 1457.03, rel=1e-3)


@pytest.mark.parametrize("name", HARD)
def test_each_precisions_roof_has_a_style_and_a_name_of_its_own(drawn, name):
    fig, _ = drawn[name]
    ax = fig.axes[0]
    styles = {}                 # (precision, datasheet) -> (colour, line style)
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if gid.startswith("roof-") and gid not in ("roof-l2", "roof-l1"):
            precision = gid.removeprefix("roof-").removesuffix("-datasheet")
            styles[precision, gid.endswith("-datasheet")] = (line.get_color(),
                                                             line.get_linestyle())
    precisions = {precision for precision, _ in styles}
    assert len(precisions) >= 2
    assert len(set(styles.values())) == len(styles)      # no two roofs drawn alike
    colours = {p: {c for (q, _), (c, _) in styles.items() if q == p} for p in precisions}
    assert all(len(c) == 1 for c in colours.values())    # measured and datasheet: one colour
    assert len({min(c) for c in colours.values()}) == len(precisions)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    notes_at_ridges = " ".join(t.get_text() for t in ax.texts if "ridge" in t.get_text())
    for precision in precisions:
        said = precision.replace("-tensor", " tensor")
        assert f"{said} roof (datasheet)" in legend
        assert f"{said} ridge" in notes_at_ridges


def test_the_attorch_regression_draws_fp32_fp16_and_fp16_tensor_apart(drawn):
    ax = drawn["h100-profile-attorch-regression"][0].axes[0]
    colours = {line.get_gid(): line.get_color() for line in ax.get_lines()
               if line.get_gid() in ("roof-fp32-datasheet", "roof-fp16-datasheet",
                                     "roof-fp16-tensor-datasheet")}
    assert len(colours) == 3 and len(set(colours.values())) == 3


@pytest.mark.parametrize("name", HARD)
def test_what_is_not_placed_is_a_bounded_list_the_most_time_first(drawn, name):
    ax = drawn[name][0].axes[0]
    lines = notes(ax)
    assert all(len(line) <= NOTE_CHARS for line in lines)
    said = " ".join(lines[next((i for i, line in enumerate(lines)
                                if line.startswith("not placed")), len(lines)):])
    skipped = sum(1 for f in read_result(PROFILES / f"{name}.json").families
                  for v in f.variants if not (v.point and v.point.flops > 0))
    if skipped > NOT_PLACED_NAMED:
        assert said.endswith(f" and {skipped - NOT_PLACED_NAMED} more")
    assert said.count(", ") <= NOT_PLACED_NAMED


def test_the_training_steps_list_names_its_costliest_copies_and_counts_the_rest(drawn):
    """16 kernels without FLOPs, the four with the most GPU time named (the 65,536-element
    copy took 2.4 % of the step, the most of them)."""
    lines = notes(drawn["h200-profile-train-eager"][0].axes[0])
    said = " ".join(lines[[i for i, line in enumerate(lines) if line.startswith("not placed")][0]:])
    assert said.startswith("not placed (no FLOPs, no DRAM bytes or no measurement): "
                           "unrolled_elementwise_kerne\u2026l_cuda>@65536, ")
    assert said.endswith(" and 12 more")


def test_the_kernels_with_the_most_time_are_numbered_and_named_in_the_key(drawn):
    """The training step's ten costliest kernels carry 1 to 10 beside their dots, the key
    names them by share (nvjet_..._coopB_NNT took 7.3 % of the step, the most), and the
    other 20 dots carry no label."""
    ax = drawn["h200-profile-train-eager"][0].axes[0]
    labels = {t.get_gid(): t.get_text() for t in ax.texts
              if (t.get_gid() or "").startswith("label-")}
    assert sorted(labels.values(), key=int) == [str(n) for n in range(1, NUMBERED_KERNELS + 1)]
    assert labels["label-nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT"] == "1"
    key = [t.get_text() for t in ax.get_legend().get_texts()]
    start = key.index("the 10 kernels with the most GPU time, numbered on the chart:")
    assert key[start + 1] == "1  nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT, 7%"
    assert len(key) == start + 1 + NUMBERED_KERNELS
    assert notes(ax)[0].startswith("20 of 30 kernels unnumbered")


def test_every_dot_of_the_svg_is_named_on_hover(drawn):
    """An SVG <title> in each dot's group: its name in full (the 101 characters of cuDNN's
    flash attention), its share and its verdict."""
    fig, _ = drawn["h200-profile-train-eager"]
    root = ET.fromstring(rendered(fig, "svg"))
    titles = {g.get("id"): g.find(f"{{{SVG}}}title").text for g in root.iter(f"{{{SVG}}}g")
              if (g.get("id") or "").startswith("variant-")}
    assert len(titles) == 30
    name = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_" \
           "1x4x1_cga1x1x1_kernel0_0"
    assert titles[f"variant-{name}"] == f"{name}, 4% of the GPU time: chain-bound"


def test_the_reports_roofline_is_as_bounded_and_has_no_second_tooltip():
    """The HTML report inlines the same figure: its list of what is not placed had run off
    the page; its own tooltip names a dot, so the SVG's <title>s are left out."""
    outcome = rooflint("report", str(PROFILES / "h200-profile-train-eager.json"), "-o", "-")
    assert outcome.code == 0, outcome.stderr
    svg = re.search(r"<svg[^>]*>", outcome.stdout).group()
    width = float(re.search(r'width="([\d.]+)pt"', svg).group(1))
    assert width * DPI / 72 <= MAX_PIXELS[0]
    assert "<title>" not in outcome.stdout.split("<svg", 1)[1].split("</svg>", 1)[0]
