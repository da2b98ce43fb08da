"""`rooflint import`: a user's Nsight Compute report and PyTorch profiler trace judged as a
profile's passes, on what an H200 recorded of tests/fixtures/import/prog.py (a bf16 MLP
training step; see its docstring): ``--set full`` in ncu's default units and in base
units, ncu's default set, and the step's trace from plain torch.profiler, with and
without record_shapes and with_stack."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import pytest

from edges import assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.engine.imported import import_result
from rooflint.formats.results import read_result
from rooflint.formats.trace_events import RECORD_SHAPES, WITH_STACK
from rooflint.judge.kernel_names import name_key
from rooflint.measure import imported_report, ncu

FIXTURES = Path(__file__).parents[1] / "fixtures" / "import"
FULL_SET_LACKS = ["l1tex__t_bytes.sum", ncu.SHARED_LOADS, ncu.SHARED_STORES,
                  ncu.TENSOR_FLOPS["fp8-tensor"], ncu.HMMA, ncu.GMMA]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The recorded files as a user has them: uncompressed, by their short names."""
    folder = tmp_path_factory.mktemp("import")
    found = {}
    for packed in FIXTURES.glob("h200-*.xz"):
        path = folder / packed.name.removesuffix(".xz")
        path.write_bytes(lzma.decompress(packed.read_bytes()))
        found[path.name.removeprefix("h200-").split(".")[0]] = path
    return found


def variants(result) -> list:
    return [v for f in result.families for v in f.variants]


def by_kernel(result) -> dict:
    """Each kernel's result by its launch identity (kernel name's key, grid, block)."""
    return {(name_key(v.share.kernel), v.counters.grid_size if v.counters else None,
             v.description): v for v in variants(result)}


def test_both_unit_styles_give_the_same_verdicts(files):
    """ncu's default units (us, Mbyte, inst/cycle) and base ones, read as one: each kernel's
    bound, causes, moves, and its place on the roofline to the rounding of base units."""
    scaled = import_result([files["full-set"]], None)
    base = import_result([files["full-set-base-units"]], None)
    assert [v.name for v in variants(scaled)] == [v.name for v in variants(base)]
    assert len(variants(scaled)) == 10 and all(v.verdict for v in variants(scaled))
    for one, other in zip(variants(scaled), variants(base), strict=True):
        assert one.verdict.bound == other.verdict.bound
        assert [c.name for c in one.verdict.causes] == [c.name for c in other.verdict.causes]
        assert [m.id for m in one.verdict.moves] == [m.id for m in other.verdict.moves]
        assert one.point.achieved_flops == pytest.approx(other.point.achieved_flops, rel=1e-4)
        assert one.point.dram_bytes == pytest.approx(other.point.dram_bytes, rel=1e-6)
    assert {v.verdict.bound for v in variants(scaled)} == {"bandwidth", "chain"}


def test_a_report_alone_is_its_own_pass_one_on_its_gpu(files):
    """14 profiled launches, 10 kernels (a launch shape each), timed as ncu replayed them,
    on the GPU the report names; every kernel's missing metrics named."""
    result = import_result([files["full-set"]], None)
    assert (result.spec_id, result.gpu.name, result.gpu.sms) == ("h200", "NVIDIA H200", 132)
    assert result.settings.mode == "profile" and result.settings.pass1_timer == "ncu"
    assert result.settings.imported == [str(files["full-set"])]
    assert sum(v.share.launches for v in variants(result)) == 14
    assert all(v.missing_metrics == FULL_SET_LACKS for v in variants(result))
    assert result.program is None and result.settings.trace_lacks is None


def test_the_default_set_gives_times_and_names_what_a_point_needs(files):
    result = import_result([files["default-set"]], None)
    assert all(v.counters is None and v.point is None for v in variants(result))
    for v in variants(result):
        assert v.message.startswith("no counters: the report lacks dram__bytes_read.sum and "
                                    "dram__bytes_write.sum and the FLOP counters")
        assert "ncu --set full" in v.message
        assert {ncu.DRAM_READ, ncu.L2_BYTES, ncu.SASS_FLOP_COUNTERS[2]} <= set(v.missing_metrics)
    assert result.settings.counters == "ncu"


def test_the_trace_alone_gives_the_time_table_and_the_fixes_without_counters(files):
    """Pass 1 from a plain torch.profiler trace: every kernel's launches and GPU time, the
    program's timeline and steps, the fixes that need no counters; what the trace was
    recorded without said."""
    trace = json.loads(files["trace-plain"].read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    result = import_result([files["trace-plain"]], None)
    assert result.settings.gpu_time_s == pytest.approx(sum(e["dur"] for e in kernels) * 1e-6)
    assert result.settings.kernels == 33 and result.settings.pass1_timer == "torch"
    assert result.settings.trace_lacks == [RECORD_SHAPES, WITH_STACK]
    assert result.settings.counters == "off"
    assert result.program.steps.count == 2 and result.program.busy_s > 0
    assert all(v.counters is None and v.message.startswith("no counters: the trace came alone")
               for v in variants(result))
    assert all(v.share.origins[0].operator and not v.share.origins[0].line
               for v in variants(result))
    assert result.fixes and result.fixes[0].saving_s > 0
    assert {f.id for f in result.fixes} >= {"bf16_parameters", "fused_optimizer"}


def test_a_trace_with_shapes_and_stack_names_the_programs_function(files):
    """with_stack's frames name each function by the line it begins at: prog.py's step()
    (line 14) made every launch; its operators' shapes say which precisions reach tensor
    cores."""
    result = import_result([files["trace-shapes-stack"]], None)
    assert result.settings.trace_lacks is None
    assert {o.line for v in variants(result) for o in v.share.origins} == {"prog.py:14 in step"}
    assert (FIXTURES / "prog.py").read_text().splitlines()[13] == "def step():"


def test_trace_and_report_meet_by_launch_identity(files):
    """The report's AdamW kernels give the trace's their counters, those of the report
    alone per launch; a trace's kernel the report has another kernel of the same function
    at its shape (a cast, the report's fill) is not given that one's counters."""
    both = import_result([files["trace-shapes-stack"], files["full-set"]], None)
    alone = {v.share.kernel: v for v in variants(import_result([files["full-set"]], None))}
    counted = [v for v in variants(both) if v.counters]
    assert len(counted) == 8 and all("multi_tensor_apply" in v.share.kernel or
                                     "FillFunctor" in v.description for v in counted)
    for v in counted:
        mine = [a for a in alone.values() if name_key(a.share.kernel) == name_key(v.share.kernel)
                and a.counters.grid_size == v.counters.grid_size]
        assert v.counters == mine[0].counters
        assert v.share.launches == 2 * mine[0].share.launches or "Fill" in v.description
        assert v.missing_metrics == FULL_SET_LACKS[:3]     # no tensor precision wanted
    casts = [v for v in variants(both) if v.name.startswith("cast") and "4096" in v.name]
    assert casts and all(v.counters is None and "the report profiled only "
                         "vectorized_elementwise_kernel<FillFunctor>" in v.message
                         for v in casts)
    assert both.settings.imported == [str(files["trace-shapes-stack"]), str(files["full-set"])]
    assert both.gpu.l2_bytes and both.program is not None


def test_the_result_is_a_profile_document_show_reads(files, tmp_path):
    out = tmp_path / "imported.json"
    done = rooflint("import", str(files["trace-plain"]), str(files["full-set"]),
                    "--json", str(out))
    assert done.code == 0, done.stderr
    assert "imported from" in done.stdout and "the report lacks 6 metrics" in done.stdout
    assert read_result(out).settings.imported == [str(files["trace-plain"]),
                                                  str(files["full-set"])]
    shown = rooflint("show", str(out), "--detail")
    assert shown.code == 0 and "not in the report, so not judged: l1tex__t_bytes.sum" in \
        shown.stdout
    assert "the trace was recorded without record_shapes" in shown.stdout


def test_a_gzipped_trace_reads_as_tensorboards_handler_writes_it(files, tmp_path):
    packed = tmp_path / "host_1.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(files["trace-plain"].read_bytes()))
    assert import_result([packed], None).settings.kernels == 33


def test_gpu_judges_against_another_spec(files):
    assert import_result([files["full-set"]], "h100-sxm").spec_id == "h100-sxm"


# --- bad input: one line naming the file, exit 2, nothing written --------------------------

@pytest.mark.parametrize("content, said", [
    (b"kernel,time\nk,1\n", "neither an Nsight Compute report"),
    (b'{"schemaVersion": 1}', "not a PyTorch profiler trace (no traceEvents)"),
    (b'{"traceEvents": [{"cat": "cpu_op", "name": "aten::mm"}]}', "no GPU kernel in it"),
    (b"{not json", "not JSON"),
    (b'"ID","Kernel Name"\n"",""\n"0","k"\n', "without the columns rooflint needs: "
     "Grid Size, Block Size, gpu__time_duration.sum"),
    (b'"ID","Kernel Name"\n', "no kernel launch in it"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": "x", "args": '
     b'{"grid": [1, 1, 1]}}]}', "kernel 'k' has dur 'x', not a number of microseconds"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": '
     b'{"grid": [1, 1, 1], "rooflint_call_us": "abc"}}]}',
     "has args.rooflint_call_us 'abc', not a number"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": true, "dur": 2, "args": '
     b'{"grid": [1, 1, 1]}}]}', "has ts 'True', not a number"),
    # an operator's arguments, or an event, that is not an object (every reader of a
    # trace reads them as one: an internal error before)
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": '
     b'{"grid": [1, 1, 1]}}, {"cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, '
     b'"args": 5}]}', "traceEvents[1] is args '5', not an object"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": '
     b'{"grid": [1, 1, 1]}}, 7]}', "traceEvents[1] is '7', not an object"),
])
def test_a_file_that_is_neither_is_named(tmp_path, content, said):
    bad = tmp_path / "what.csv"
    bad.write_bytes(content)
    assert_one_line_error(rooflint("import", str(bad)), 2, str(bad), said)


def test_the_details_page_is_named_as_such(tmp_path):
    details = FIXTURES / "h200-full-set-details-head.csv"
    assert_one_line_error(rooflint("import", str(details)), 2, str(details),
                          "details page", "--page raw")


def test_two_traces_or_a_missing_file_are_refused(files, tmp_path):
    trace = str(files["trace-plain"])
    assert_one_line_error(rooflint("import", trace, trace), 2, "both PyTorch profiler traces")
    assert_one_line_error(rooflint("import", str(tmp_path / "gone.json")), 2, "no such file")


def test_json_never_replaces_a_file_imported(files):
    before = snapshot(files["trace-plain"])
    done = rooflint("import", str(files["trace-plain"]), "--json", str(files["trace-plain"]))
    assert done.code == 2 and "Traceback" not in done.stderr
    assert_intact(before)


def test_a_report_without_nsight_compute_says_so_in_one_line(tmp_path, monkeypatch):
    report = tmp_path / "step.ncu-rep"
    report.write_bytes(b"NVIDIA Nsight Compute report")
    monkeypatch.setattr(imported_report, "report_module", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert_one_line_error(rooflint("import", str(report)), 2, str(report),
                          "ncu -i step.ncu-rep --csv --page raw")
