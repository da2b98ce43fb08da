"""The counter names each GPU's chip lists: Nsight Compute writes "n/a" for a metric the
chip lacks, which would refuse every counter of the kernel, so a run asks for each
quantity by the name its chip has.

tests/fixtures/ncu/metrics/CHIP.txt.xz are ``ncu --query-metrics --chip CHIP`` of Nsight
Compute 2025.3.1, the chips of every GPU rooflint has a spec for but the V100 (this ncu
answers "Invalid chip gv100"). Only Hopper's names (gh100) were measured on hardware; the
others are checked here against these lists.
"""

from __future__ import annotations

import lzma
import math
from dataclasses import replace
from pathlib import Path

import pytest

from recorded import RECORDED, RecordedPool, RecordedProfiler, use_stand_in_pools
from rooflint.analysis.counters import implausible
from rooflint.common.paths import cache_dir
from rooflint.engine import families as run_module
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.measure import ncu

LISTS = Path(__file__).parents[1] / "fixtures" / "ncu" / "metrics"
CHIPS = ["tu104", "ga100", "ga102", "ga104", "ad102", "ad104", "gh100", "gb100", "gb202"]
LOG = Path(__file__).parents[1] / "fixtures" / "ncu" / "h100-probe-5-variants.csv"
H100 = find_spec("h100-sxm", load_specs())
FASTEST = max(p.flops_per_s for p in H100.peaks.values())


def query(chip: str) -> str:
    return lzma.decompress((LISTS / f"{chip}.txt.xz").read_bytes()).decode()


def listed(chip: str) -> frozenset[str]:
    return ncu.listed_names(query(chip))


@pytest.mark.parametrize("chip", CHIPS)
def test_every_name_asked_is_in_its_chips_list(chip):
    """What a run of every precision asks for exists on the chip (but the launch
    attributes, which ncu computes and no list names), and every quantity the roofline
    stands on (bytes, FLOPs, time, stalls, occupancy) is read on every chip."""
    names = listed(chip)
    asked = ncu.metrics_for(None, names)
    assert all(m.partition(".")[0] in names for m in asked if m not in ncu.LAUNCH_ATTRIBUTES)
    assert all(ncu.on_chip([m], names) for m in ncu.BASE_METRICS)


def test_hopper_reads_the_names_it_was_measured_with():
    names = listed("gh100")
    assert ncu.metrics_for(None, names) == ncu.METRICS
    for precisions in ([], ["fp32"], ["bf16-tensor"], ["fp16-tensor", "fp8-tensor"]):
        assert ncu.metrics_for(precisions, names) == ncu.metrics_for(precisions, None)


@pytest.mark.parametrize("chip, lacking", [
    ("tu104", {"bf16-tensor", "tf32-tensor", "fp8-tensor", "fp64-tensor"}),
    ("ga100", {"fp8-tensor"}), ("ga102", {"fp8-tensor"}),
    ("ad102", set()), ("gb100", set()), ("gb202", set()),
])
def test_what_a_chip_has_no_counter_for_is_not_asked(chip, lacking):
    """Turing has no BF16, TF32, FP64 or FP8 tensor path, Ampere no FP8; only Hopper has
    wgmma (GMMA). The rest of each list is asked."""
    names = listed(chip)
    left_out = [m for m in ncu.METRICS if not ncu.on_chip([m], names)]
    assert left_out == [*(ncu.TENSOR_FLOPS[p] for p in ncu.TENSOR_FLOPS if p in lacking),
                        ncu.GMMA]


@pytest.mark.parametrize("chip, metric, names", [
    ("ga100", ncu.TENSOR_FLOPS["fp16-tensor"],
     ["sm__ops_path_tensor_src_fp16_dst_fp16.sum", "sm__ops_path_tensor_src_fp16_dst_fp32.sum"]),
    ("tu104", ncu.TENSOR_FLOPS["fp16-tensor"],
     ["sm__ops_path_tensor_src_fp16_dst_fp16.sum",
      "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum"]),
    ("gb100", ncu.TENSOR_FLOPS["fp8-tensor"],
     ["sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp16.sum",
      "sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp32.sum"]),
    ("gb202", ncu.TENSOR_FLOPS["fp8-tensor"],
     ["sm__ops_path_tensor_src_fp8_dst_fp16.sum", "sm__ops_path_tensor_src_fp8_dst_fp32.sum"]),
    ("ad102", ncu.TENSOR_FLOPS["fp8-tensor"], [ncu.TENSOR_FLOPS["fp8-tensor"]]),
    ("gb202", ncu.DRAM_READ, ["dram__bytes_op_read.sum"]),
    ("gb100", ncu.HMMA, ["sm__inst_executed_pipe_tensor_subpipe_hmma.sum"]),
    ("ad102", ncu.HMMA, ["sm__inst_executed_pipe_tensor_op_hmma_v2.sum"]),
    ("ad102", ncu.TENSOR_PIPE,
     ["sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active"]),
    ("gb100", ncu.TENSOR_PIPE, [ncu.TENSOR_PIPE]),
])
def test_a_quantity_by_its_name_on_the_chip(chip, metric, names):
    assert ncu.on_chip([metric], listed(chip)) == names


@pytest.mark.parametrize("chip", ["ga104", "ad104"])
def test_the_chips_of_one_compute_capability_list_the_same_metrics(chip):
    """ncu.CHIPS names one chip a capability: ga102 for the A10 and RTX 3090 (and ga104's
    boards), ad102 for the L40S, RTX 4090 and L4 (an ad104)."""
    named = ncu.CHIPS[{"ga104": "8.6", "ad104": "8.9"}[chip]]
    assert listed(chip) == listed(named)
    assert set(ncu.CHIPS.values()) <= set(CHIPS)


def test_the_triage_groups_lines_are_not_metric_names():
    names = listed("gh100")
    assert "dram__bytes_read" in names and "sm__ops_path_tensor_src_fp16" in names
    assert "sm__throughput" in names and not any("." in n for n in names)
    assert "TriageCompute.sm__throughput" in query("gh100")
    assert ncu.listed_names(query("gv100")) == frozenset()   # "==ERROR== Invalid chip gv100"


@pytest.fixture
def stand_in_ncu(fake_ncu, monkeypatch):
    """The stand-in ncu (tests/fake_ncu.py) on PATH: Nsight Compute 2025.3.1, answering
    --query-metrics from LISTS."""
    env, _ = fake_ncu
    monkeypatch.setenv("PATH", env["PATH"])
    ncu.version.cache_clear()
    yield
    ncu.version.cache_clear()


def test_a_chips_list_is_asked_once_and_kept_by_ncu_version(stand_in_ncu):
    assert ncu.listed_metrics("8.0") == listed("ga100")
    kept = cache_dir() / "ncu-metrics" / "2025.3.1.0-ga100.txt"
    assert kept.read_text().split() == sorted(listed("ga100"))
    kept.write_text("dram__bytes_read\n")          # read back, not asked again
    assert ncu.listed_metrics("8.0") == frozenset({"dram__bytes_read"})


def test_a_gpu_whose_chip_is_unknown_reads_hoppers_names(stand_in_ncu, tmp_path, monkeypatch):
    """A compute capability no spec has (a Jetson's 8.7), or an ncu that lists nothing for
    the chip (one too old to know it answers as 2025.3.1 does for gv100)."""
    assert ncu.listed_metrics("8.7") is None
    older = tmp_path / "older" / "ncu"
    older.parent.mkdir()
    older.write_text(f"#!/bin/sh\necho '{query('gv100').strip()}'\nexit 1\n")
    older.chmod(0o755)
    monkeypatch.setenv("PATH", f"{older.parent}:/usr/bin:/bin")
    ncu.version.cache_clear()
    assert ncu.listed_metrics("12.0") is None


def test_a_run_asks_for_the_names_of_its_gpus_chip(stand_in_ncu, monkeypatch):
    """The recorded H200 run's worker, reporting an RTX 5090's compute capability: the
    counter pass reads gb202's DRAM names, and its counter cache keys by them."""
    rtx5090 = replace(RECORDED.gpu, compute_capability="12.0")

    class Pool(RecordedPool):
        def start(self):
            return rtx5090
    made = []

    def profiler(cache, collection, env=None, preload=()):
        made.append(collection)
        return RecordedProfiler(cache, collection, env)
    use_stand_in_pools(monkeypatch, lambda env=None: Pool(env=env))
    monkeypatch.setattr(run_module, "Profiler", profiler)
    result = run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={},
                                                  counters="ncu"))
    assert made[0].metrics == tuple(ncu.metrics_for(["fp32"], listed("gb202")))
    assert "dram__bytes_op_read.sum" in made[0].metrics
    assert ncu.DRAM_READ not in made[0].metrics
    assert result.families[0].variants[0].counters is not None


def recorded_rows() -> list[dict]:
    return ncu.parse_rows(LOG.read_text())


def recorded_hgemm() -> dict:
    """cuBLAS's HGEMM 1024^3 on the H100 (nvjet, wgmma): its launch's row."""
    return next(r for r in recorded_rows() if r[ncu.TENSOR_FLOPS["fp16-tensor"]])


def test_a_column_ncu_left_na_for_a_counter_the_chip_lacks_reads_as_not_read():
    """The recorded H100 HGEMM's launch as an A100's ncu would write it asked by Hopper's
    names: no wgmma counter there ("n/a"), no FP16 tensor FLOPs under that name. Its
    counters stand, with neither read; DRAM bytes "n/a" are still refused."""
    hgemm = recorded_hgemm()
    edited = hgemm | {ncu.GMMA: "n/a", ncu.TENSOR_FLOPS["fp16-tensor"]: "n/a"}
    counters = ncu.summarize([edited])
    assert counters.gmma_instructions == 0 and "fp16-tensor" not in counters.flops
    assert counters.hmma_instructions == hgemm[ncu.HMMA] > 0
    assert implausible(counters, H100.dram_bandwidth, FASTEST) is None
    refused = ncu.summarize([edited | {ncu.DRAM_READ: "n/a"}])
    assert implausible(refused, H100.dram_bandwidth, FASTEST) == "dram_read is nan"


def test_a_quantity_a_chip_counts_in_two_metrics_is_their_sum():
    """The HGEMM's FP16 tensor ops as an A100 counts them, by destination (a quarter and
    three quarters of the recorded count, hand-split), and its DRAM bytes as an RTX 5090
    names them: the same counters as read on the H100."""
    hgemm = recorded_hgemm()
    ops = hgemm[ncu.TENSOR_FLOPS["fp16-tensor"]]
    renamed = {k: v for k, v in hgemm.items()
               if k not in (ncu.TENSOR_FLOPS["fp16-tensor"], ncu.DRAM_READ, ncu.DRAM_WRITE)}
    renamed |= {"sm__ops_path_tensor_src_fp16_dst_fp16.sum": ops / 4,
                "sm__ops_path_tensor_src_fp16_dst_fp32.sum": 3 * ops / 4,
                "dram__bytes_op_read.sum": hgemm[ncu.DRAM_READ],
                "dram__bytes_op_write.sum": hgemm[ncu.DRAM_WRITE]}
    assert ops == 2 * 1024**3
    assert ncu.summarize([renamed]) == ncu.summarize([hgemm])


def test_a_log_without_a_quantity_the_roofline_needs_is_refused_not_a_crash():
    row = {k: v for k, v in recorded_rows()[0].items() if k != ncu.DRAM_WRITE}
    assert math.isnan(ncu.summarize([row]).dram_write)
