"""The Nsight Compute CSV parser, on a log recorded on our H100 (2026-11-22) with the
command a run uses (``ncu.command`` with every metric).

tests/fixtures/ncu/probe-5-variants.py is the program that was profiled: five variants,
each run inside its NVTX range: a float4 copy of 256 MiB, cuBLAS SGEMM 1024^3
(cupy.matmul), cuBLAS HGEMM 1024^3 (tensor cores), a kernel that spills, and the same copy
made in two launches of one half each.
"""

from pathlib import Path

import pytest

from recorded import counters_of

from rooflint.measure import ncu

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu" / "h100-probe-5-variants.csv"
NAMES = ["copy", "sgemm", "hgemm", "spill", "two_halves"]


@pytest.fixture(scope="module")
def counters():
    return counters_of(FIXTURE.read_text(), NAMES)


def test_rows_skip_profiler_messages_and_units():
    rows = ncu.parse_rows(FIXTURE.read_text())
    assert [r["ID"] for r in rows] == [float(i) for i in range(6)]
    assert rows[0]["Kernel Name"] == "copy4" and rows[0][ncu.DRAM_READ] == 268_457_984


def test_nvtx_ranges_split_the_variants(counters):
    assert list(counters) == NAMES
    assert counters["copy"].kernels == ["copy4"]
    assert counters["sgemm"].kernels[0].startswith("sm80_xmma_gemm_f32f32")
    assert counters["two_halves"].kernels == ["copy4", "copy4"]


def test_launches_outside_every_variant_range_are_left_out():
    inside = {"ID": 0.0, "Kernel Name": "k",
              "thread Domain:Push/Pop_Range:PL_Type": '7  "<default domain>:step:none" '
                                                      '"<default domain>:rooflint-variant/12:none"'}
    outside = inside | {"thread Domain:Push/Pop_Range:PL_Type": '7  "<default domain>:step"'}
    assert ncu.split_by_variant([outside, inside, outside]) == {12: [inside]}


def test_copy_bytes_and_the_dirty_l2_writes(counters):
    copy = counters["copy"]
    assert copy.dram_read == 268_457_984          # 256 MiB + 22 KB of other traffic
    assert copy.dram_write == 249_922_304         # 17.7 MiB short: dirty lines left in L2
    assert copy.dram_bytes == 268_457_984 + 249_922_304
    assert copy.counted_flops == 0
    assert copy.duration_s == pytest.approx(182.624e-6)   # 2.9 TB/s of 3.35
    assert copy.grid_size == 1056 and copy.waves == 1


def test_sgemm_flops_from_sass_counters(counters):
    # 2 x FFMA count: 1024^3 FMAs plus cuBLAS's epilogue, within 0.1 %
    assert counters["sgemm"].flops["fp32"] == pytest.approx(2 * 1024**3, rel=1e-3)
    # a few HFMA2 instructions (used by the compiler as moves) show up as fp16: negligible
    assert counters["sgemm"].flops.get("fp16", 0) < 1e-4 * counters["sgemm"].flops["fp32"]


def test_hgemm_flops_from_tensor_ops(counters):
    assert counters["hgemm"].flops == {"fp16-tensor": 2 * 1024**3}
    assert counters["hgemm"].tensor_pipe_pct == pytest.approx(42.69)
    assert counters["sgemm"].tensor_pipe_pct == 0.0


def test_spills_and_stalls(counters):
    spill = counters["spill"]
    assert spill.local_bytes == 1_081_344_000 + 69_206_016
    assert spill.stalls["long_scoreboard"] == pytest.approx(20.49)
    assert spill.registers_per_thread == 23
    assert spill.occupancy_pct == pytest.approx(12.1)


def test_multi_launch_variants_sum_and_weight():
    rows = [
        {"Kernel Name": "a", ncu.DURATION: 100.0, ncu.DRAM_READ: 10.0, ncu.DRAM_WRITE: 1.0,
         ncu.OCCUPANCY: 50.0, ncu.GRID_SIZE: 8.0, ncu.WAVES: 0.1, ncu.REGISTERS: 32.0},
        {"Kernel Name": "b", ncu.DURATION: 300.0, ncu.DRAM_READ: 30.0, ncu.DRAM_WRITE: 3.0,
         ncu.OCCUPANCY: 10.0, ncu.GRID_SIZE: 800.0, ncu.WAVES: 2.0, ncu.REGISTERS: 64.0},
    ]
    for row in rows:
        for metric in ncu.METRICS:
            row.setdefault(metric, 0.0)
    c = ncu.summarize(rows)
    assert c.dram_read == 40 and c.dram_write == 4 and c.duration_s == pytest.approx(400e-9)
    assert c.occupancy_pct == pytest.approx((50 * 100 + 10 * 300) / 400)
    assert c.grid_size == 800 and c.waves == 2 and c.registers_per_thread == 64


# The same program recorded on 2026-11-25 with the list of that day, plus ncu's own
# l1tex__throughput beside the L1 stages that replaced it.
FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"
STAGES = {gpu: Path(__file__).parents[1] / "fixtures" / "ncu" / f"{gpu}-probe-l1-stages.csv"
          for gpu in ("h100", "h200")}


@pytest.mark.parametrize("gpu", sorted(STAGES))
def test_every_metric_asked_for_is_in_the_recorded_csv(gpu):
    """The recordings hold what rooflint asks for: these every metric of the time they
    were taken, the GEMM walk's (issue 24) the access-pattern metrics added since."""
    header = next(line for line in STAGES[gpu].read_text().splitlines()
                  if line.startswith('"ID"'))
    then = [m for m in ncu.METRICS if m not in ncu.ACCESS_PATTERN_METRICS]
    assert all(f'"{metric}"' in header for metric in then)
    walk = (FIXTURES / "h100-gemm-walk-counters.csv").read_text()
    header = next(line for line in walk.splitlines() if line.startswith('"ID"'))
    assert all(f'"{metric}"' in header for metric in ncu.BASE_METRICS)


@pytest.mark.parametrize("gpu", sorted(STAGES))
def test_the_busiest_l1_stage_is_ncus_l1_throughput_for_gemms(gpu):
    """ncu's l1tex__throughput is the busiest of its L1 units: for the cuBLAS GEMMs (the
    kernels an L1 verdict is about) it is the LSU data pipe, one of rooflint's stages; for
    a streaming copy or a spilling kernel another unit (the L1-L2 interface: traffic the
    L2 level counts) reads higher, and the stages read at most that."""
    rows = ncu.parse_rows(STAGES[gpu].read_text())
    assert len(rows) == 6
    for row in rows:
        busiest = max(row[m] for m in ncu.L1_STAGES)
        assert busiest <= row[ncu.L1_THROUGHPUT] + 0.1
        if "gemm" in row["Kernel Name"] or "nvjet" in row["Kernel Name"]:
            assert busiest == pytest.approx(row[ncu.L1_THROUGHPUT], abs=0.1)
        else:
            assert busiest < row[ncu.L1_THROUGHPUT] / 1.5


def test_l1_is_read_from_the_stages_where_the_log_has_no_l1_throughput():
    rows = [row for row in ncu.parse_rows(STAGES["h100"].read_text())
            if "gemm" in row["Kernel Name"]]
    for row in rows:
        del row[ncu.L1_THROUGHPUT]
    assert ncu.summarize(rows).l1_pct == pytest.approx(60.1, abs=0.1)


# Every stage of L1 ncu counts, as logs recorded before rooflint read only two hold them.
EVERY_L1_STAGE = [f"l1tex__{stage}.avg.pct_of_peak_sustained_active" for stage in (
    "lsuin_requests", "t_sectors", "data_pipe_lsu_wavefronts", "data_bank_reads",
    "data_bank_writes")]
FIVE_STAGE_LOGS = [*STAGES.values(), *(FIXTURE.parent / name for name in (
    "h100-gemm-walk-counters.csv", "h100-causes-probe.csv", "h100-train-step-pass2.csv"))]


@pytest.mark.parametrize("log", FIVE_STAGE_LOGS, ids=lambda path: path.stem)
def test_the_two_l1_stages_read_as_busy_as_all_five(log):
    """LSU requests and data-bank reads and writes follow the data pipe's wavefronts, so
    the two stages rooflint reads (a ninth replay pass less) give L1's load within 3 % on
    every launch recorded with all five: GEMMs, copies, a spilling kernel, shared-memory
    walks, and the 46 kernels of the training step's pass 2 (H100, 2026-11-27)."""
    rows = ncu.parse_rows(log.read_text())
    assert rows and set(ncu.L1_STAGES) < set(EVERY_L1_STAGE)
    for row in rows:
        busiest = max(float(row[stage]) for stage in EVERY_L1_STAGE)
        assert max(float(row[stage]) for stage in ncu.L1_STAGES) >= 0.97 * busiest


def test_a_log_without_the_xu_pipe_reads_as_zero():
    """Logs recorded before rooflint read the XU pipe's activity have no such column."""
    text = without_columns(FIXTURE.read_text(), {ncu.XU_PIPE})
    counters = counters_of(text, ["copy"])["copy"]
    assert counters.xu_pipe_pct == 0.0 and counters.dram_bytes > 0


@pytest.mark.parametrize("log, fragment", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
     "Performance Counters on the target device 0.", "ERR_NVGPUCTRPERM"),
    ("==ERROR== Failed to initialize the profiler: LibraryNotLoaded", "LibraryNotLoaded"),
    ("==ERROR== Something new went wrong", "Something new went wrong"),
    ("==PROF== Connected to process 1", "no kernels"),
])
def test_failure_reasons(log, fragment):
    assert fragment in ncu.failure_reason(log)


def test_the_workers_own_reason_when_ncu_gives_none():
    """A worker that could not make its profiled runs says why (e.g. a CuPy without NVTX);
    an error of ncu's own still comes first."""
    failures = ["copy: this CuPy has no NVTX"]
    assert ncu.failure_reason("==PROF== Connected to process 1", failures) == failures[0]
    assert "ERR_NVGPUCTRPERM" in ncu.failure_reason("==ERROR== ERR_NVGPUCTRPERM", failures)


def test_missing_ncu(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ncu.CountersUnavailable, match="not on PATH"):
        ncu.command("/tmp/log.csv", "cold", ncu.BASE_METRICS)


def test_a_two_launch_variant_sums_its_launches(counters):
    split, whole = counters["two_halves"], counters["copy"]
    assert split.kernels == ["copy4", "copy4"]
    assert split.dram_read == pytest.approx(whole.dram_read, rel=0.01)
    # each launch ends with part of its output dirty in L2: writes stay under 256 MiB
    assert split.dram_write < 2**28 and whole.dram_write < 2**28
    assert split.duration_s == pytest.approx(whole.duration_s, rel=0.1)
    assert split.grid_size == 528


def test_a_run_reads_only_the_tensor_flops_it_declares():
    """Each tensor precision's FLOP counter costs replay passes (11 passes for all six
    against 6 without, on an H100): a run reads those its variants declare."""
    assert ncu.metrics_for(["fp32", "fp16"], None) == ncu.BASE_METRICS
    assert ncu.metrics_for(["fp32", "bf16-tensor", "bf16-tensor"], None) == \
        [*ncu.BASE_METRICS, ncu.TENSOR_FLOPS["bf16-tensor"], ncu.HMMA, ncu.GMMA]
    assert set(ncu.METRICS) - set(ncu.BASE_METRICS) == {*ncu.TENSOR_FLOPS.values(),
                                                        ncu.HMMA, ncu.GMMA}
    assert ncu.TENSOR_PIPE in ncu.BASE_METRICS     # tensor work is seen in every run


def without_columns(text: str, dropped: set[str]) -> str:
    """The recorded log as if those metrics had not been asked for."""
    import csv
    import io
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    keep = [i for i, name in enumerate(rows[0]) if name not in dropped]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(
        [[row[i] for i in keep] for row in rows])
    return "\n".join(lines[:start]) + "\n" + out.getvalue()


def test_a_log_without_tensor_flop_columns_counts_the_cuda_cores_only():
    text = without_columns(FIXTURE.read_text(), set(ncu.TENSOR_FLOPS.values()))
    counters = counters_of(text, NAMES)
    assert "fp16-tensor" not in counters["hgemm"].flops
    assert counters["sgemm"].flops["fp32"] == pytest.approx(2 * 1024**3, rel=1e-3)
    assert counters["hgemm"].tensor_pipe_pct == pytest.approx(42.69)   # read in every run


def test_l1_shared_memory_and_tensor_instruction_counters(counters):
    """cuBLAS's SGEMM stages tiles in shared memory and feeds ~16 FMAs from each shared
    load (register-blocked); its HGEMM on the H100 issues warpgroup MMA (HGMMA); a copy
    uses neither and keeps L1 a fifth busy."""
    sgemm, hgemm, copy = counters["sgemm"], counters["hgemm"], counters["copy"]
    assert sgemm.shared_loads == 2_131_968
    assert sgemm.flops["fp32"] / 64 / sgemm.shared_loads == pytest.approx(15.75, rel=0.01)
    assert hgemm.gmma_instructions == 65_536 and hgemm.tensor_pipe_pct > 40
    assert copy.shared_loads == 0 and copy.l1_pct == pytest.approx(21.37)
    assert sgemm.l1_pct == pytest.approx(60.0)
