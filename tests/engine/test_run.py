"""From worker measurements to the result document, without a GPU.

The measurements below are shaped like the worker's output, with times from a real
H200 run of the bundled families (2026-11-21).
"""

import json

import pytest

from recorded import counters_of, use_stand_in_pools

from rooflint.formats.gpus import find_spec
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.jobs import Clocks, DeviceInfo, Measurement, OutputCheck, TimingJob
from rooflint.formats.results import read_result, write_result, RunResult
from rooflint.judge.measurement import family_result

H200 = DeviceInfo(name="NVIDIA H200", index=0, compute_capability="9.0", sms=132,
                  l2_bytes=62914560, memory_bytes=150109880320, max_sm_clock_mhz=1980,
                  max_mem_clock_mhz=3201, driver="580.159.04", cuda_runtime="13020", cupy="14.2.0")
H100 = DeviceInfo(name="NVIDIA H100 80GB HBM3", index=0, compute_capability="9.0", sms=132,
                  l2_bytes=52428800, memory_bytes=85045477376, max_sm_clock_mhz=1980,
                  max_mem_clock_mhz=2619, driver="580.159.04", cuda_runtime="13020", cupy="14.2.0")


def measured(name, median_s, spread=0.005, status="ok", message=""):
    samples = [median_s * (1 + spread * k) for k in (-1, -0.5, 0, 0.5, 1)] if status == "ok" else []
    checks = [OutputCheck("C", 1.1e-6, 3e-5, 1e-6, 0)] if status != "error" else []
    return Measurement(name, status, message, checks, samples,
                       Clocks(sm_mhz=[1980.0], mem_mhz=[3201.0]))


@pytest.fixture
def gemm(specs):
    family = resolve(load_manifest("gemm_fp32"), {}, {"num_sms": 132}, TimingJob())
    measurements = [measured("naive", 275.9e-3), measured("coalesced", 22.67e-3),
                    measured("tiled", 15.34e-3), measured("blocked_1d", 8.09e-3),
                    measured("blocked_2d", 3.004e-3), measured("cublas", 2.682e-3)]
    return family_result(family, measurements, {}, find_spec("h200", specs), H200)


def by_name(family):
    return {v.name: v for v in family.variants}


def test_points_and_verdicts(gemm):
    v = by_name(gemm)
    assert v["blocked_2d"].point.achieved_flops == pytest.approx(2 * 4096**3 / 3.004e-3)
    assert v["blocked_2d"].verdict.bound == "compute"
    assert v["tiled"].verdict.bound == "chain"
    assert v["tiled"].verdict.causes[0].name == "dependency_chain"
    assert v["naive"].dram_bytes == {"model": 12 * 4096**2}


def test_speed_against_the_baseline(gemm):
    assert gemm.baseline == "cublas"
    assert by_name(gemm)["blocked_2d"].speed_vs_baseline == pytest.approx(2.682 / 3.004)
    assert by_name(gemm)["cublas"].speed_vs_baseline is None


def test_expectations_hold_for_the_walk(gemm):
    """On model bytes the first steps read chain: their L1 binding is not seen without
    counters, so their expected bandwidth bound is not called a miss."""
    assert [v.expectation_mismatch for v in gemm.variants] == [None] * 6
    assert by_name(gemm)["naive"].verdict.bound == "chain"


def test_a_bound_the_counters_contradict_is_a_missed_prediction(specs):
    """With counters, naive's L1 at 1 % would make it chain-bound: a real miss."""
    from rooflint.analysis.counters import Counters
    family = resolve(load_manifest("gemm_fp32"), {}, {"num_sms": 132}, TimingJob(), ["naive"])
    counters = Counters(kernels=["sgemm_naive"], duration_s=0.2759, dram_read=2e8,
                        dram_write=6.7e7, l2_bytes=2e10, l1_bytes=5e11, local_bytes=0,
                        flops={"fp32": 2 * 4096**3}, occupancy_pct=95, waves=15.5,
                        registers_per_thread=32, grid_size=16384, l1_pct=1.0)
    result = family_result(family, [measured("naive", 275.9e-3)], {"naive": counters},
                           find_spec("h200", specs), H200)
    assert result.variants[0].expectation_mismatch == \
        "expected bandwidth-bound, measured chain-bound"


def test_a_missed_prediction_is_reported(specs):
    family = resolve(load_manifest("gemm_fp32"), {}, {"num_sms": 132}, TimingJob(),
                     ["tiled", "blocked_1d"])
    result = family_result(family, [measured("tiled", 8e-3), measured("blocked_1d", 9e-3)],
                           {}, find_spec("h200", specs), H200)
    assert by_name(result)["blocked_1d"].expectation_mismatch == \
        "expected faster than tiled, measured 1.12x its time"


def test_failed_variants_get_no_speed_figure(specs):
    family = resolve(load_manifest("gemm_fp32"), {}, {"num_sms": 132}, TimingJob(),
                     ["naive", "tiled"])
    result = family_result(family, [
        measured("naive", 0, status="fail",
                 message="C: relative error 3.1e-01 > tolerance 1.0e-05"),
        measured("tiled", 0, status="error", message="compile error: sgemm.cu(40): error: ...")],
        {}, find_spec("h200", specs), H200)
    for v in result.variants:
        assert v.time is None and v.point is None and v.verdict is None and v.status != "ok"


def test_result_document_round_trip(gemm, tmp_path):
    result = RunResult(gpu=H200, spec_id="h200", families=[gemm])
    path = tmp_path / "result.json"
    write_result(result, path)
    data = json.loads(path.read_text())
    assert data["schema"] == "rooflint.result/1"
    assert data["families"][0]["variants"][4]["verdict"]["bound"] == "compute"
    assert read_result(path) == result
    assert not list(path.parent.glob(".*.tmp"))  # the atomic write left nothing behind


def test_counters_replace_model_bytes(specs):
    """The recorded ncu profile of a float4 copy of 2**26 floats on an H100, judged as
    stream's copy."""
    from pathlib import Path
    log = (Path(__file__).parents[1] / "fixtures" / "ncu" / "h100-probe-5-variants.csv").read_text()
    copy = counters_of(log, ["copy_float4"])
    family = resolve(load_manifest("stream"), {"N": 2**26}, {"num_sms": 132}, TimingJob(),
                     ["copy_float4"])
    result = family_result(family, [measured("copy_float4", 182.6e-6)], copy,
                           find_spec("h100-sxm", specs), H100)
    v = result.variants[0]
    assert v.point.bytes_source == "ncu"
    # 268,457,984 read + 249,922,304 written + 18,513,152 still dirty in L2 = 2**28 + 2**28 + 22 KB
    assert v.dram_bytes["ncu"] == 268_457_984 + 2**28
    assert v.dram_bytes["model"] == 2**29
    assert "17.7 MiB of output still in L2" in v.notes[0]
    assert v.point.traffic_fraction == pytest.approx(2**29 / (268_457_984 + 2**28))
    assert v.counters.kernels == ["copy4"]
    assert v.verdict.bound == "bandwidth"


def counters_with(dram_read, dram_write, waves=0.06):
    from rooflint.analysis.counters import Counters
    return Counters(kernels=["k"], duration_s=1e-3, dram_read=dram_read, dram_write=dram_write,
                    l2_bytes=3 * dram_read, l1_bytes=3 * dram_read, local_bytes=0.0,
                    flops={"fp32": 1.7e9}, occupancy_pct=3.0, waves=waves,
                    registers_per_thread=40, grid_size=256,
                    stalls={"long_scoreboard": 11.0, "wait": 1.5, "barrier": 0.0})


def test_int8_against_v3_reports_a_byte_cut_that_did_not_pay(specs):
    """H200 figures: v3 2.29 ms on 134 MB, INT8 KV 2.14 ms on 68 MB (2026-11-21)."""
    family = resolve(load_manifest("decode_attention"), {}, {"num_sms": 132}, TimingJob(),
                     ["v3_vectorized", "int8_kv"])
    result = family_result(
        family, [measured("v3_vectorized", 2.29e-3), measured("int8_kv", 2.14e-3)],
        {"v3_vectorized": counters_with(134.5e6, 2.6e6), "int8_kv": counters_with(68.3e6, 2.6e6)},
        find_spec("h200", specs), H200)
    int8 = by_name(result)["int8_kv"]
    # (134.5 + 2.6) MB against (68.3 + 2.6) MB: 0.52x the bytes, 1.93x the intensity
    assert int8.versus.startswith("vs v3_vectorized: DRAM bytes 0.52x, observed AI 1.93x, "
                                  "time 0.93x")
    assert "the byte cut did not set the time: 1.93x fewer DRAM bytes, 1.07x less time; " \
           "v3_vectorized was chain-bound (DRAM at 1% of its roof), so bytes were not its limit" \
           in int8.versus
    assert int8.expectation_mismatch is None            # it was (slightly) faster


def test_reconcile_two_copies_without_arithmetic(specs):
    family = resolve(load_manifest("stream"), {}, {"num_sms": 132}, TimingJob(),
                     ["copy_scalar", "copy_float4"])
    result = family_result(
        family, [measured("copy_scalar", 393e-6), measured("copy_float4", 272e-6)],
        {"copy_scalar": counters_with(537e6, 517e6, waves=496),
         "copy_float4": counters_with(537e6, 516e6, waves=1)}, find_spec("h200", specs), H200)
    assert by_name(result)["copy_float4"].versus == \
        "vs copy_scalar: DRAM bytes 1.00x, time 0.69x"


def test_each_family_is_reported_before_the_next_is_measured(monkeypatch, tmp_path):
    """`run` streams: the listener hears of a family (already in the result file) before
    the next family is sent to the worker."""
    from recorded import RecordedPool
    from rooflint.engine import families as run_module
    pool = RecordedPool()
    use_stand_in_pools(monkeypatch, lambda env=None: pool)
    path = tmp_path / "result.json"

    def finished(result, family):
        pool.log.append(("finished", family.name))
        assert [f.name for f in read_result(path).families] == [f.name for f in result.families]
    listener = run_module.Listener(started=lambda result: pool.log.append(("started", "")),
                                   finished=finished)
    result = run_module.run(run_module.RunOptions(targets=["stream", "gemm_fp32"], variants=[],
                                                  sizes={}, json_path=path, counters="off"),
                            listener)
    assert pool.log == [("started", ""), ("measure", "stream"), ("finished", "stream"),
                        ("measure", "gemm_fp32"), ("finished", "gemm_fp32")]
    assert by_name(result.families[1])["blocked_2d"].verdict.bound == "compute"


FAKE_WORKER = """
import json, sys, time
print(json.dumps({"event": "hello", "device": %r}), flush=True)
sys.stdin.readline()
print(json.dumps({"event": "start", "variant": "copy_scalar"}), flush=True)
time.sleep(5)  # busy timing a kernel; it would read the end of its input only after this
"""


def test_an_interrupt_kills_a_busy_worker(monkeypatch):
    """Ctrl-C during a measurement: the worker is killed at once, not left to finish its
    family (a worker still busy would exit by itself, code 0, seconds later)."""
    import signal
    import sys
    from dataclasses import asdict
    from rooflint.engine import families as run_module
    from rooflint.measure.runner import WorkerPool
    pools = []

    def busy_pool(env=None):
        pools.append(WorkerPool(prefix=[sys.executable, "-c", FAKE_WORKER % asdict(H200)]))
        return pools[-1]

    def interrupt(event, variant):
        if event == "start":
            raise KeyboardInterrupt
    use_stand_in_pools(monkeypatch, busy_pool)
    with pytest.raises(KeyboardInterrupt):
        run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={},
                                             counters="off"),
                       run_module.Listener(progress=lambda family, phase, total: interrupt))
    assert pools[0].worker.process.returncode == -signal.SIGKILL


def test_a_busy_tensor_pipe_under_a_cuda_core_precision_is_noted():
    """A run reads tensor FLOPs only for the tensor precisions it declares; the tensor
    pipe's activity still shows work the manifest did not declare."""
    from dataclasses import replace
    from rooflint.analysis.counters import traffic
    busy = replace(counters_with(1e6, 1e6), flops={"fp32": 1e6}, tensor_pipe_pct=97.0)
    notes = traffic(busy, 2e9, 2e6, 1e6, "fp32").notes
    assert any("tensor pipe was busy 97 % of active cycles in a precision whose FLOPs were "
               "not read" in n for n in notes)
    assert not any("tensor pipe" in n for n in traffic(busy, 2e9, 2e6, 1e6, "fp16-tensor").notes)
    idle = replace(busy, tensor_pipe_pct=0.5)
    assert not any("tensor pipe" in n for n in traffic(idle, 2e9, 2e6, 1e6, "fp32").notes)


def test_a_library_baseline_is_told_its_callers_moves_and_a_cuda_variant_is_not(specs):
    """Issue 48: cuBLAS's SGEMM at 81 % of the FP32 roof (the H200's recorded counters)
    was told "more FMAs in flight", which nobody outside NVIDIA can make. Its caller's
    moves lead (shapes and bf16 operands, fp8), the kernel's own after them; the
    vectorized CUDA variant, with its own counters, keeps its kernel-level moves."""
    from edges import REPO
    walk = REPO / "examples" / "gemm_walk"
    recorded = {v.name: v for v in read_result(walk / "h200-gemm_walk.json").families[0].variants}
    family = resolve(load_manifest(walk / "kernel.yaml"), {}, {"num_sms": 132}, TimingJob(),
                     ["vectorized", "cublas"])
    result = family_result(family, [measured("vectorized", 3.16e-3), measured("cublas", 2.68e-3)],
                           {name: recorded[name].counters for name in ("vectorized", "cublas")},
                           find_spec("h200", specs), H200)
    cublas, vectorized = by_name(result)["cublas"].verdict, by_name(result)["vectorized"].verdict
    # shapes first; then the precision trades, TF32 for FP32 data before fp8
    assert [m.id for m in cublas.moves[:3]] == ["gemm_shapes", "gemm_tf32", "gemm_fp8"]
    assert all(m.gain_from == "caller" for m in cublas.moves[:3])
    assert "cuBLAS GEMM: not the program's code" in cublas.moves[0].reason
    assert not any(m.gain_from == "caller" for m in vectorized.moves)


def test_a_kernel_whose_top_stall_line_is_an_async_copy_is_not_told_async_copies_are_a_trap(
        specs):
    """Issue 48: a double-buffered kernel with 71 % of its stall samples on
    cuda::memcpy_async was told "not cp.async ... (the book's v5 trap)". The corpus's
    cp.async chain (H200 counters, chain-bound on its FMAs' waits) keeps the trap while its
    FMA line leads its stall samples, and loses it where the copy's line does."""
    from edges import REPO
    from rooflint.analysis.sourcelines import SourceLine, profile_of
    corpus = REPO / "benchmarks" / "moves" / "corpus"
    counters = {v.name: v.counters for v in read_result(
        REPO / "benchmarks" / "results" / "h200" / "corpus.json").families[0].variants}
    family = resolve(load_manifest(corpus / "kernel.yaml"), {}, {"num_sms": 132}, TimingJob(),
                     ["chain_serial_cp_async"])
    copy = SourceLine("corpus.cu", 121, 'asm volatile("cp.async.ca.shared.global [%0], [%1], 4;"')
    chain = SourceLine("corpus.cu", 128, "for (int s = 0; s < steps; ++s) CHAIN_STEP(p, b);")

    def ruled_out(copy_samples, chain_samples):
        lines = [SourceLine(**{**copy.__dict__, "stall_samples": copy_samples}),
                 SourceLine(**{**chain.__dict__, "stall_samples": chain_samples})]
        result = family_result(family, [measured("chain_serial_cp_async", 328e-6)],
                               {"chain_serial_cp_async": counters["chain_serial_cp_async"]},
                               find_spec("h200", specs), H200,
                               sources={"chain_serial_cp_async": profile_of(lines)})
        return result.variants[0].verdict.ruled_out

    assert any(t.startswith("not cp.async") for t in ruled_out(29, 71))
    kept = ruled_out(71, 29)
    assert not any(t.startswith("not cp.async") for t in kept)
    assert any(t.startswith("not fewer bytes per element") for t in kept)
