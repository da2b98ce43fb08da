"""`rooflint report` (issue 27): one self-contained HTML file from result documents.

Read as text: every family, variant and move of the committed H200 run is in the page,
nothing in it loads from anywhere, names from a file come out as text, never markup, a
profile leads with its summary and fixes, then its kernel table, no folder of the machine
is named, two documents are compared, and bad input costs one line and exit 2. Read by a
real browser (headless Chromium, tests/browser.py; skipped where there is none): the
roofline, the tables and the tooltip are in the DOM after the page's script ran, a dot
shows its numbers and opens its details, a click on a header sorts the rows by value,
words typed above a table filter its rows, a link opens the details it leads to, with
JavaScript off the page is all there as written, the screenshot is a picture, and the
console is silent.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shlex
import shutil
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from browser import WINDOW, dom_of, screenshot
from edges import REPO, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.common.paths import relative_paths
from rooflint.common.units import format_time
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import fixes_of
from rooflint.output.html_page import DATA_ID, SCRIPT as PAGE_SCRIPT, TOOLTIP_ID
from rooflint.output.html_report import Document, report_html
from rooflint.output.profile_view import top_move_cell
from rooflint.output.program_summary import change_words, compile_lines, header_lines

BUNDLED = REPO / "examples" / "h200-bundled.json"
H100 = REPO / "examples" / "h100-bundled.json"
SOURCE = REPO / "examples" / "h200-source-stream.json"
PROFILE = REPO / "examples" / "profile" / "h200-profile-train-eager-fixes.json"
SVG_NAMES = ('xmlns="http://www.w3.org/2000/svg"', 'xmlns:xlink="http://www.w3.org/1999/xlink"')
SCRIPT = "<script>alert('owned')</script>"
EVIL = f'{SCRIPT}"><img src=x onerror=alert(2)>\x1b[2J'


def report(tmp_path: Path, *results: Path, name: str = "report.html") -> str:
    """The page `rooflint report RESULTS -o tmp_path/name` writes."""
    output = tmp_path / name
    outcome = rooflint("report", *map(str, results), "-o", str(output))
    assert outcome.code == 0 and outcome.stderr == f"report written to {output}\n", outcome.stderr
    assert outcome.stdout == ""
    return output.read_text()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """The reports the tests read, each written once: the H200 run, the H200 training
    step's profile with its fixes and program timing, the H100 run against the H200 run,
    and a run whose names are EVIL."""
    out = tmp_path_factory.mktemp("reports")
    evil = out / "evil.json"
    evil.write_text(json.dumps(evil_document(json.loads(BUNDLED.read_text()))))
    written = {"bundled": [BUNDLED], "profile": [PROFILE], "compared": [H100, BUNDLED],
               "evil": [evil]}
    for name, results in written.items():
        report(out, *results, name=f"{name}.html")
    return {name: out / f"{name}.html" for name in written}


def evil_document(data: dict) -> dict:
    """``data`` with EVIL in every name, description, note, summary and move it shows."""
    data["gpu"]["name"] += EVIL
    for family in data["families"]:
        family["name"] += EVIL
        for v in family["variants"]:
            v["name"] += EVIL
            v["description"] += EVIL
            v["notes"].append(EVIL)
            if v["verdict"]:
                v["verdict"]["summary"] += EVIL
                for move in v["verdict"]["moves"]:
                    move["action"] += EVIL
    return data


# --- the page as text -----------------------------------------------------------------------

def test_every_family_variant_and_move_is_in_the_page(pages):
    page = pages["bundled"].read_text()
    result = read_result(BUNDLED)
    for family in result.families:
        assert html.escape(family.name) in page
        for v in family.variants:
            assert re.search(rf">{re.escape(html.escape(v.name))}( \(baseline\))?</a>", page)
            for move in v.verdict.moves if v.verdict else []:
                for words in (move.action, move.reason, move.expect):
                    assert html.escape(words) in page, (v.name, words)
            for text in v.verdict.ruled_out if v.verdict else []:
                assert html.escape(text) in page


@pytest.mark.parametrize("name", ["bundled", "profile", "compared"])
def test_the_page_loads_nothing_from_anywhere(pages, name):
    """No script, stylesheet, font or picture from outside: the only addresses in the page
    are the SVG's namespace names, which are never fetched; the policy forbids loading."""
    page = pages[name].read_text()
    for loader in ("<script src", "src=", "<link", "@import", "url(http", "@font-face"):
        assert loader not in page, loader
    rest = page
    for namespace in SVG_NAMES:
        rest = rest.replace(namespace, "")
    assert "http://" not in rest and "https://" not in rest
    assert "default-src 'none'" in page and page.count("<script") == 2


def test_the_policy_lets_only_the_reports_script_run(pages):
    page = pages["bundled"].read_text()
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in page


def test_names_from_a_file_are_text_never_markup(pages):
    page = pages["evil"].read_text()
    assert "alert(" in page                                      # shown...
    assert SCRIPT not in page and "<img" not in page and "\x1b" not in page   # ...as text
    assert page.count("<script") == 2
    assert html.escape(SCRIPT) in page and "\\x1b[2J" in page
    data = re.search(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page,
                     re.S).group(1)
    assert "<" not in data and "\\u003cscript\\u003e" in data
    dots = json.loads(data)["dots"].values()
    assert dots and all(SCRIPT in dot["name"] for dot in dots)     # textContent in the tooltip


def test_a_profile_has_its_application_view(pages):
    page = pages["profile"].read_text()
    result = read_result(PROFILE)
    assert "where a fix could save the most" in page and "launched from" in page
    assert "biggest upside: " in page and "not profiled: " in page
    for v in result.families[0].variants:
        assert f">{html.escape(v.name)}</a>" in page
        if v.share.origins:
            assert html.escape(v.share.origins[0].line) in page


def test_a_profile_leads_with_its_summary_and_fixes_then_its_kernel_table(pages):
    page = pages["profile"].read_text()
    result = read_result(PROFILE)
    fixes = fixes_of(result)
    marks = ['<section class="program">', '<table class="fixes"', '<table class="kernels"',
             '<section id="roofline">', '<section id="kernels-1">']
    at = [page.index(mark) for mark in marks]
    assert at == sorted(at), marks
    assert html.escape(header_lines(result)[0]) in page
    assert "under the profiler, GPU busy 27.9 ms of 193 ms (14%)" in page
    assert html.escape(compile_lines(result, fixes)[0].strip()) in page
    fixes_table = page[at[1]:page.index("</table>", at[1])]
    assert fixes_table.count("<tr>") == len(fixes) + 1 == 9
    for fix in fixes:
        assert html.escape(change_words(fix)) in fixes_table


def test_a_fix_for_no_kernels_has_no_share_of_the_gpu_time(tmp_path):
    """A job's communication fix acts on exposed waits, not on any kernel's GPU time: its
    row's "GPU time" says none (nanoGPT's had read the accumulation's 39.4 %, of the GPU
    time and the exposed time together, beside kernel fixes' shares of the GPU time)."""
    job = REPO / "examples" / "profile" / "h200x2-profile-nanogpt-ddp.json"
    page = report(tmp_path, job)
    start = page.index('<table class="fixes"')
    rows = re.findall(r'<tr><td class="num" data-value="\d+">\d+</td>.*?</td><td>.*?</td>'
                      r'<td class="num" data-value="([^"]*)">([^<]*)</td>'
                      r'<td data-value="([^"]*)">', page[start:page.index("</table>", start)])
    fixes = fixes_of(read_result(job))
    assert len(rows) == len(fixes) >= 5
    for (value, shown, kernels), fix in zip(rows, fixes):
        if fix.kernels:
            assert shown == f"{fix.share:.1%}" and int(kernels) == len(fix.kernels)
        else:
            assert (value, shown, kernels) == ("", "-", "")
    assert sum(not f.kernels for f in fixes) >= 1


def test_the_kernel_table_names_each_kernels_top_move_and_links_its_details(pages):
    page = pages["profile"].read_text()
    variants = read_result(PROFILE).families[0].variants
    start = page.index('<table class="kernels"')
    kernels = page[start:page.index("</table>", start)]
    assert "<th>top move</th>" in kernels
    rows = re.findall(r'<tr><td><a href="#details-1-1-(\d+)">([^<]*)</a></td>.*?'
                      r'<td>([^<]*)</td></tr>', kernels)
    assert len(rows) == len([v for v in variants if v.share]) == 48
    for index, name, top_move in rows:
        v = variants[int(index) - 1]
        assert (name, top_move) == (html.escape(v.name), html.escape(top_move_cell(v)))
    # a fix's kernels lead to the same details
    fixes = page[page.index('<table class="fixes"'):start]
    links = re.findall(r'<a href="#details-1-1-(\d+)">([^<]*)</a>', fixes)
    assert len(links) == sum(len(fix.kernels) for fix in fixes_of(read_result(PROFILE)))
    assert all(html.escape(variants[int(i) - 1].name) == name for i, name in links)


@pytest.mark.parametrize("command", ["report", "show"])
def test_no_folder_of_the_machine_is_named_in_the_page(tmp_path, command):
    """The result is named by its file's name; a path in it, relative to the result's
    folder where it lies under it, else by its last name behind an ellipsis."""
    runs = tmp_path / "runs"
    runs.mkdir()
    data = json.loads(PROFILE.read_text())
    data["settings"]["command"] = ["python3", f"{runs}/apps/train.py", f"--data={tmp_path}/data",
                                   "--out_dir=/home/someone/secret/out"]
    data["families"][0]["variants"][0]["notes"].append(f"built from {runs}/src/k.cu(12): ok")
    result, written = runs / "r.json", tmp_path / "page.html"
    result.write_text(json.dumps(data))
    args = (["report", str(result), "-o", str(written)] if command == "report" else
            ["show", str(result), "--html", str(written)])
    assert rooflint(*args, cwd=REPO).code == 0
    page = written.read_text()
    command = shlex.join(["python3", "apps/train.py", "--data=…/data", "--out_dir=…/out"])
    assert f"a profile of {html.escape(command)}, " in page
    assert "built from src/k.cu(12): ok" in page
    assert "<title>rooflint report: r.json</title>" in page and "<h2>(1) r.json</h2>" in page
    for local in (str(tmp_path), str(REPO), str(Path.home()), "/home/someone", "secret"):
        assert local not in page, local


@pytest.mark.parametrize("text, shown", [
    ("python3 /work/x/train.py --out=/tmp/prof/out", "python3 train.py --out=…/out"),
    ("/work/x/a/b.py:12 in f; /home/u/model.py(62): forward",
     "a/b.py:12 in f; …/model.py(62): forward"),
    ("(/usr/lib/libcuda.so.1)", "(…/libcuda.so.1)"),
    ("3.1 TB/s, AI obs/alg 1/2, see https://a.example/b/c, ~/data/x, a / b, f<(int)/2/4>",
     "3.1 TB/s, AI obs/alg 1/2, see https://a.example/b/c, ~/data/x, a / b, f<(int)/2/4>"),
])
def test_paths_are_written_relative_to_the_results_folder(text, shown):
    assert relative_paths(text, Path("/work/x")) == shown


def test_source_lines_stand_under_their_moves(tmp_path):
    page = report(tmp_path, SOURCE)
    assert "<th>source lines</th>" in page
    line = ("stream.cu:36  100% of excessive L2 sectors  "
            "if (i < n) out[i] = x[(i % m) * stride + i / m];")
    assert f"<span>{html.escape(line)}</span>" in page


def test_two_documents_are_compared_by_variant_name(pages):
    page = pages["compared"].read_text()
    section = page[page.index('<section id="comparison">'):]
    assert "COMPARING DIFFERENT GPUs" in section
    names = {v.name for f in read_result(BUNDLED).families for v in f.variants}
    rows = re.findall(r"<tr><td>([^<]*)</td>", section)
    assert set(rows) == names
    assert re.search(r'class="decision-(faster|slower|same|inconclusive)"', section)


def test_every_id_in_the_page_is_its_own(pages):
    """Two GPUs, two figures: each figure's ids are prefixed, so no id is used twice."""
    page = pages["compared"].read_text()
    ids = re.findall(r'\sid="([^"]*)"', page)
    assert len(ids) == len(set(ids))
    assert 'id="roofline1-variant-tiled"' in page and 'id="roofline2-variant-tiled"' in page


def without_drawing(page: str) -> str:
    """The page with each SVG reduced to the ids of its marks and its texts (matplotlib's
    paths move with its version; what the picture says does not), as test_golden reads one."""
    def said(svg: re.Match) -> str:
        ids = re.findall(r'id="((?:variant|roof)[^"]*)"', svg.group())
        texts = re.findall(r"<text\b[^>]*>(.*?)</text>", svg.group(), re.S)
        # a text's characters, without the spans matplotlib lays them out in (one per
        # character in 3.7, one per run of a font later)
        return "\n".join(ids + [re.sub(r"<[^>]*>|\s+", "", text) for text in texts])
    return re.sub(r"<svg.*?</svg>", said, page, flags=re.S)


def test_the_committed_example_is_what_report_writes_now():
    """examples/h200-report.html (README) is regenerated when the page changes."""
    outcome = rooflint("report", "examples/h200-bundled.json", "-o", "-", cwd=REPO)
    assert outcome.code == 0, outcome.stderr
    committed = (REPO / "examples" / "h200-report.html").read_text()
    assert without_drawing(outcome.stdout) == without_drawing(committed), \
        "rooflint report examples/h200-bundled.json -o examples/h200-report.html"


def test_the_same_results_make_the_same_page():
    documents = [Document.of(BUNDLED, read_result(BUNDLED))]
    assert report_html(documents) == report_html(documents)


def test_a_dash_writes_the_page_to_standard_output(pages):
    outcome = rooflint("report", str(BUNDLED), "-o", "-")
    assert outcome.code == 0 and outcome.stdout == pages["bundled"].read_text()


def test_an_earlier_report_is_replaced(tmp_path):
    first, second = report(tmp_path, BUNDLED), report(tmp_path, SOURCE)
    assert "gemm_fp32" in first and "gemm_fp32" not in second


# --- bad input: one line, exit 2, nothing touched -----------------------------------------

@pytest.mark.parametrize("args, fragments", [
    (["nosuch.json"], ["cannot read result nosuch.json", "No such file"]),
    (["notes.txt"], ["cannot read result notes.txt", "not JSON"]),
    (["calibration.json"], ["calibration.json is not a rooflint result"]),
    (["d"], ["cannot read result d", "directory"]),
    (["r.json", "-o", "r.json"], ["--output r.json is RESULT r.json"]),
    (["r.json", "-o", "link.json"], ["--output link.json is RESULT r.json"]),
    (["r.json", "-o", "d"], ["cannot write d", "directory"]),
    (["r.json", "-o", "notes.txt"], ["--output notes.txt exists and is not a rooflint report"]),
    (["r.json", "-o", "nodir/r.html"], ["cannot write nodir/r.html: no directory nodir"]),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragments):
    shutil.copy(BUNDLED, tmp_path / "r.json")
    shutil.copy(REPO / "examples" / "h200-calibration.json", tmp_path / "calibration.json")
    (tmp_path / "link.json").symlink_to("r.json")
    (tmp_path / "notes.txt").write_text("my notes, not a report\n")
    (tmp_path / "d").mkdir()
    before, listing = snapshot(tmp_path), sorted(tmp_path.rglob("*"))
    outcome = rooflint("report", *args, cwd=tmp_path)
    assert_one_line_error(outcome, 2, *fragments)
    assert_intact(before)
    assert sorted(tmp_path.rglob("*")) == listing          # and nothing new written


# --- the page in a browser -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["bundled", "profile"])
def test_the_browser_draws_the_roofline_tables_and_tooltip(pages, tmp_path, name):
    visit = dom_of(pages[name], tmp_path / "profile")
    dom = visit.dom
    assert visit.console == []
    assert re.search(r'<figure class="roofline"><svg[^>]*>', dom)
    assert 'class="family"' in dom and (name != "profile" or 'class="application"' in dom)
    assert f'id="{TOOLTIP_ID}"' in dom
    dots = json.loads(re.search(rf'id="{DATA_ID}">(.*?)</script>', dom, re.S).group(1))["dots"]
    # the script ran: it made each dot a link to its details
    assert dots and len(re.findall(r'class="dot" tabindex="0" role="link"', dom)) == len(dots)


@pytest.mark.parametrize("name", ["bundled", "profile"])
def test_the_screenshot_is_a_picture(pages, tmp_path, name):
    png = tmp_path / "report.png"
    visit = screenshot(pages[name], tmp_path / "profile", png)
    assert visit.console == []
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 50_000
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    colours = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)
    assert len(colours) > 100                      # text, lines, dots: not one colour
    samples = pixels[::20, ::20].reshape(-1, pixels.shape[2])     # a pixel every 20
    drawn = np.any(samples != pixels[0, 0], axis=1).mean()       # not the background's
    assert 0.01 < drawn < 0.9, drawn


# Appended to a copy of a page (and allowed by its hash): hovers the first dot, leaves it,
# clicks it, and writes what happened where --dump-dom shows it.
PROBE = """
(function () {
  var dots = JSON.parse(document.getElementById("%(data)s").textContent).dots;
  var id = Object.keys(dots)[0];
  var dot = document.getElementById(id);
  var tip = document.getElementById("%(tooltip)s");
  var box = dot.getBoundingClientRect();
  dot.dispatchEvent(new MouseEvent("mouseenter", {clientX: box.x, clientY: box.y}));
  var hovered = {hidden: tip.hidden, text: tip.textContent};
  dot.dispatchEvent(new MouseEvent("mouseleave"));
  var left = tip.hidden;
  dot.dispatchEvent(new MouseEvent("click"));
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({dot: dots[id], hovered: hovered, left: left,
                                    hash: location.hash, scrolled: window.scrollY});
  document.body.append(out);
})();
""" % {"data": DATA_ID, "tooltip": TOOLTIP_ID}


def probed(page: Path, into: Path, probe: str = PROBE) -> Path:
    """A copy of ``page`` that runs ``probe`` after the page's own script."""
    digest = base64.b64encode(hashlib.sha256(probe.encode()).digest()).decode()
    text = page.read_text().replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    into.write_text(text.replace("</body>", f"<script>{probe}</script>\n</body>"))
    return into


def probe(page: Path, tmp_path: Path, script: str = PROBE) -> tuple[dict, str]:
    """What ``script`` wrote into its <pre id="probe"> after it ran on ``page``, and the
    DOM it left; the console stays silent."""
    visit = dom_of(probed(page, tmp_path / "probed.html", script), tmp_path / "profile")
    assert visit.console == []
    written = re.search(r'<pre id="probe">(.*?)</pre>', visit.dom, re.S).group(1)
    return json.loads(html.unescape(written)), visit.dom


def test_a_dot_shows_its_numbers_and_opens_its_details(pages, tmp_path):
    seen, dom = probe(pages["bundled"], tmp_path)
    dot, hovered = seen["dot"], seen["hovered"]
    assert not hovered["hidden"] and seen["left"]
    for label, value in dot["rows"]:
        assert label in hovered["text"] and value in hovered["text"]
    assert [label for label, _ in dot["rows"]][:7] == [
        "family", "time", "FLOP/s", "DRAM", "AI observed", "AI algorithmic", "verdict"]
    assert seen["hash"] == f"#{dot['anchor']}" and seen["scrolled"] > 0
    details = re.search(rf'<details class="variant" id="{dot["anchor"]}" open="">'
                        rf'<summary><h4>([^<]*)', dom)
    assert details and details.group(1) == dot["name"]
    assert len(re.findall(r"<details[^>]* open=", dom)) == 1    # that one alone


# Clicks the headers named in %(clicks)s of the explorable table in section %(section)s, and
# writes each row's first cell, in order, before and after each click.
SORT_PROBE = """
(function () {
  var table = document.querySelector("#%(section)s table[data-explore]");
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function rows() {
    return Array.prototype.map.call(table.tBodies[0].rows, function (row) {
      return row.cells[0].textContent;
    });
  }
  function click(name) {
    var head = heads.filter(function (h) { return h.textContent === name; })[0];
    head.querySelector("button.sort").click();
    return {rows: rows(), sort: head.getAttribute("aria-sort")};
  }
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({page: rows(), clicks: %(clicks)s.map(click)});
  document.body.append(out);
})();
"""


def sorted_rows(page: Path, tmp_path: Path, section: str, *clicks: str) -> dict:
    return probe(page, tmp_path, SORT_PROBE % {"section": section,
                                                "clicks": json.dumps(clicks)})[0]


def test_a_click_on_a_header_sorts_the_rows_by_value(pages, tmp_path):
    """decode_attention's times run from 44.3 us to 3.84 ms: as text they would sort
    "1.07 ms" before "44.3 us"; the header sorts by the seconds: up, down, then back to
    the page's order. A column of words sorts by its words."""
    seen = sorted_rows(pages["bundled"], tmp_path, "family-1-2", "time", "time", "time",
                       "verdict")
    variants = read_result(BUNDLED).families[1].variants
    shown = dict(zip(seen["page"], variants))          # the page's order is the result's
    assert len(shown) == len(variants) == 13
    by_time = sorted(seen["page"], key=lambda name: shown[name].time.median_s)
    assert by_time != sorted(seen["page"], key=lambda name: format_time(
        shown[name].time.median_s))
    up, down, back, verdict = seen["clicks"]
    assert up == {"rows": by_time, "sort": "ascending"}
    assert down == {"rows": by_time[::-1], "sort": "descending"}
    assert back == {"rows": seen["page"], "sort": None}
    assert verdict == {"rows": sorted(seen["page"], key=lambda name: shown[name].verdict.bound),
                       "sort": "ascending"}
    assert {shown[name].verdict.bound for name in seen["page"]} == {"chain", "bandwidth"}


def test_a_row_without_a_value_sorts_last_either_way(pages, tmp_path):
    """stream's copies count no FLOPs (their FLOP/s say -): after triad, up or down."""
    seen = sorted_rows(pages["bundled"], tmp_path, "family-1-6", "FLOP/s", "FLOP/s")
    variants = read_result(BUNDLED).families[5].variants
    counted = [name for name, v in zip(seen["page"], variants) if v.point and v.point.flops]
    uncounted = [name for name in seen["page"] if name not in counted]
    assert len(counted) == 1 and len(uncounted) == 4
    assert [c["rows"] for c in seen["clicks"]] == [counted + uncounted] * 2


# Types each of %(typed)s into the box above the kernel table, and writes the names of the
# rows left to see and what the count says.
FILTER_PROBE = """
(function () {
  var table = document.querySelector("table.kernels");
  var filter = table.previousElementSibling;
  var box = filter.querySelector("input");
  function type(text) {
    box.value = text;
    box.dispatchEvent(new Event("input"));
    var seen = Array.prototype.filter.call(table.tBodies[0].rows, function (row) {
      return row.getClientRects().length > 0;
    });
    return {rows: seen.map(function (row) { return row.cells[0].textContent; }),
            count: filter.querySelector("span").textContent};
  }
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(%(typed)s.map(type));
  document.body.append(out);
})();
"""


def test_words_typed_above_a_table_filter_its_rows(pages, tmp_path):
    typed = ["cuBLAS GEMM", "  gemm CUBLAS ", "train_step.py:53", "no such kernel", ""]
    seen, _ = probe(pages["profile"], tmp_path, FILTER_PROBE % {"typed": json.dumps(typed)})
    kernels = [v for v in read_result(PROFILE).families[0].variants if v.share]
    cublas = [v.name for v in kernels if v.share.library == "cuBLAS GEMM"]
    line_53 = [v.name for v in kernels if v.share.origins[0].line.startswith("train_step.py:53 ")]
    everything = [v.name for v in kernels]
    assert len(cublas) == 11 and len(line_53) == 4 and len(everything) == 48
    assert seen == [{"rows": rows, "count": f"{len(rows)} of 48 rows"}
                    for rows in (cublas, cublas, line_53, [], everything)]


# Clicks the first kernel's link in the kernel table; writes whether its details were open
# before and after.
LINK_PROBE = """
(function () {
  var link = document.querySelector("table.kernels a[href^='#']");
  var target = document.getElementById(link.hash.slice(1));
  var before = target.open;
  link.click();
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({anchor: link.hash, before: before, after: target.open,
                                    tag: target.tagName, hash: location.hash});
  document.body.append(out);
})();
"""


def test_a_link_opens_the_details_it_leads_to(pages, tmp_path):
    seen, _ = probe(pages["profile"], tmp_path, LINK_PROBE)
    assert seen == {"anchor": "#details-1-1-1", "before": False, "after": True,
                    "tag": "DETAILS", "hash": "#details-1-1-1"}


def test_without_javascript_the_page_is_all_there_as_written(pages, tmp_path):
    """The page without its script (as a browser with JavaScript off opens it; Chromium's
    switch for that leaves --dump-dom nothing to print): no buttons, boxes or dots made
    links, and every table, row and folded detail as the file has them, the summary and
    fixes first."""
    page = pages["profile"].read_text()
    assert page.count(f"<script>{PAGE_SCRIPT}</script>") == 1
    unscripted = tmp_path / "unscripted.html"
    unscripted.write_text(page.replace(f"<script>{PAGE_SCRIPT}</script>", ""))
    visit = dom_of(unscripted, tmp_path / "profile")
    dom = visit.dom
    assert visit.console == [] and "</html>" in dom
    assert 'class="sort"' not in dom and 'type="search"' not in dom and 'class="dot"' not in dom
    for mark in ("<tr>", "<table ", "<details ", "<summary>"):
        assert dom.count(mark) == page.count(mark) > 0, mark
    assert dom.index('<section class="program">') < dom.index('<table class="kernels"')
    assert not re.search(r"<details[^>]* open", dom)


def test_the_browser_shows_evil_names_as_text(pages, tmp_path):
    visit = dom_of(pages["evil"], tmp_path / "profile")
    assert visit.console == []
    assert visit.dom.count("<script") == 2 and "<img" not in visit.dom
    assert html.escape(SCRIPT, quote=False) in visit.dom
