"""`rooflint profile` above the measurement: parsing, ranking, choosing, matching pass 2 to pass 1,
naming, verdicts and the upside arithmetic, on Nsight Compute logs recorded from
examples/apps/transformer_block.py (bf16, B=8, S=1024, D=2048; NVTX range "timed", 20
steps) on our H200 and H100 (2026-11-22)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import random
import re
from dataclasses import replace

import pytest

from rooflint.judge import (distinct_names, kernel_choice, kernel_libraries, kernel_names,
                            kernel_times, launch_matching, pass2_patterns, time_spread)
from rooflint.judge import upside
from rooflint.engine import program as app
from rooflint.output import profile_words
from rooflint.analysis import ceilings
from rooflint.formats import calibration as calibrations
from rooflint.analysis.stats import TimeStats
from rooflint.formats.results import read_result
from rooflint.formats.settings import Settings
from rooflint.formats.gpus import find_spec
from rooflint.measure.ncu import parse_rows

from edges import REPO, assert_one_line_error, rooflint

NCU = Path(__file__).parents[1] / "fixtures" / "ncu"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "calibration"
H200_PASS1 = parse_rows((NCU / "h200-transformer-block-pass1.csv").read_text())
H200_PASS2 = parse_rows((NCU / "h200-transformer-block-pass2.csv").read_text())
H100_PASS1 = parse_rows((NCU / "h100-transformer-block-pass1.csv").read_text())


def test_every_launch_of_the_region_is_counted():
    kernels = kernel_times.kernel_times(H200_PASS1)
    assert sum(len(k.durations_s) for k in kernels) == len(H200_PASS1) == 200   # 10 per step
    assert [len(k.durations_s) for k in kernels] == [80, 20, 20, 40, 40]
    totals = [k.total_s for k in kernels]
    assert totals == sorted(totals, reverse=True)
    assert math.isclose(sum(totals), sum(r["gpu__time_duration.sum"] for r in H200_PASS1) * 1e-9)


def test_template_instances_stay_apart_and_get_short_names():
    names = set(distinct_names.unique_names(kernel_times.kernel_times(H100_PASS1)).values())
    assert {"GELU", "add", "LayerNorm"} <= names


def test_a_kernel_at_two_grids_gets_two_names():
    kernels = [kernel_times.KernelTime("void k<float>(int)", "(4, 1, 1)", [1e-6]),
               kernel_times.KernelTime("void k<float>(int)", "(16, 2, 1)", [1e-6])]
    assert set(distinct_names.unique_names(kernels).values()) == {"k (4 blocks)", "k (32 blocks)"}


def test_a_kernel_at_one_grid_with_several_block_sizes_is_named_by_its_block():
    """llm.c's softmax_forward sweeps block sizes at one grid: its kernels had read
    ``softmax_forward_kernel7@8192``, ``#2``, ``#3``."""
    kernels = [kernel_times.KernelTime("void k<float>(int)", "(8192, 1, 1)", [1e-6],
                                          block=f"({threads}, 1, 1)")
               for threads in (128, 256, 512)]
    kernels.append(kernel_times.KernelTime("void k<float>(int)", "(64, 1, 1)", [1e-6],
                                              block="(256, 1, 1)"))
    assert set(distinct_names.unique_names(kernels).values()) == {
        "k (8192×128)", "k (8192×256)", "k (8192×512)", "k (64×256)"}


@pytest.mark.parametrize("coverage, top, chosen", [
    (0.90, None, 3),     # GEMMs 79 %, GELU 7 %, SDPA 6 % -> 92 %
    (0.50, None, 1),
    (1.00, None, 5),
    (0.99, 2, 2),        # --top wins
])
def test_choose_covers_the_asked_share(coverage, top, chosen):
    kernels = kernel_times.kernel_times(H200_PASS1)
    picked = kernel_choice.choose(kernels, coverage, top)
    assert len(picked) == chosen
    assert picked == kernels[:chosen]


def _families(kernels):
    return [kernel_names.name_key(k.kernel) for k in kernels]


def _random_program(rng: random.Random) -> list[kernel_times.KernelTime]:
    """Kernels of a few functions, each at one to six launch shapes, the most time first."""
    kernels = [kernel_times.KernelTime(f"void f{function}<float>(int)", f"({grid}, 1, 1)",
                                          [rng.uniform(1e-6, 1e-3)] * rng.randint(1, 20))
               for function in range(rng.randint(1, 12)) for grid in range(rng.randint(1, 6))]
    return sorted(kernels, key=lambda k: k.total_s, reverse=True)


@pytest.mark.parametrize("seed", range(200))
def test_the_choice_takes_whole_functions_until_they_cover_the_share(seed):
    """Pass 2 profiles every launch shape of a chosen kernel's function (Nsight Compute
    selects by name): those siblings are chosen with it, and count towards the coverage;
    no function is taken once the share is reached."""
    rng = random.Random(seed)
    kernels = _random_program(rng)
    coverage = rng.choice([0.5, 0.8, 0.9, 0.99, 1.0])
    picked = kernel_choice.choose(kernels, coverage)
    families = set(_families(picked))
    assert picked == [k for k in kernels if kernel_names.name_key(k.kernel) in families]
    total = sum(k.total_s for k in kernels)
    assert sum(k.total_s for k in picked) >= coverage * total * (1 - 1e-12)
    # in the order of their kernels' time, and the last one was still needed
    order = list(dict.fromkeys(_families(kernels)))
    assert order[:len(families)] == [f for f in order if f in families]
    last = order[len(families) - 1]
    without_last = sum(k.total_s for k in picked if kernel_names.name_key(k.kernel) != last)
    assert without_last < coverage * total


@pytest.mark.parametrize("top", [None, 1, 2])
def test_a_collective_is_never_chosen_nor_counted_in_the_share(top):
    """NCCL's all-reduce, the most GPU time of a data-parallel step, is timed by the trace:
    replayed under Nsight Compute it would wait for peers that are not replaying it. The
    share to cover is the other kernels' time."""
    all_reduce = kernel_times.KernelTime(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "(24, 1, 1)", [4e-3], block="(640, 1, 1)")
    gemm = kernel_times.KernelTime("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_NNT", "(132, 1, 1)",
                                   [2e-3])
    norm = kernel_times.KernelTime("void at::native::(anonymous namespace)::"
                                   "vectorized_layer_norm_kernel<float, float>(int)",
                                   "(4096, 1, 1)", [1e-4])
    picked = kernel_choice.choose([all_reduce, gemm, norm], 0.9, top)
    assert picked == ([gemm] if top == 1 else [gemm, norm] if top else [gemm])


@pytest.mark.parametrize("seed", range(50))
def test_top_n_takes_the_n_first_kernels_and_their_siblings(seed):
    rng = random.Random(seed)
    kernels = _random_program(rng)
    top = rng.randint(1, len(kernels))
    picked = kernel_choice.choose(kernels, 0.9, top)
    assert picked[:top] == kernels[:top]
    assert set(_families(picked)) == set(_families(kernels[:top]))


def test_on_a_training_step_every_profiled_launch_shape_is_a_chosen_kernel():
    """The recorded step (tests/fixtures/trace/step.py, H100), where PyTorch's copy kernels
    run at six shapes each: choosing kernels one by one had pass 2 profile 38 shapes for
    26 kernels (90 % of the GPU time); whole functions give 34 kernels for 34 shapes."""
    from rooflint.formats.trace_events import launches
    trace = json.loads((Path(__file__).parents[1] / "fixtures" / "trace"
                        / "h100-step-trace.json").read_text())
    kernels = kernel_times.kernel_times_from_trace(launches(trace))
    picked = kernel_choice.choose(kernels)
    assert (len(picked), len(set(_families(picked)))) == (34, 18)
    copies = [k for k in picked if "direct_copy_kernel_cuda" in k.kernel]
    assert len(copies) == 6
    assert sum(k.total_s for k in picked) / sum(k.total_s for k in kernels) >= 0.9


def test_pass_two_rows_are_matched_by_identity():
    kernels = kernel_times.kernel_times(H200_PASS1)
    counters = app.counters_by_identity(kernels, H200_PASS2)
    assert len(counters) == 5
    gemm = counters[kernels[0].identity]
    assert len(gemm.kernels) == 2                       # two GEMM launches in pass 2
    assert gemm.flops["bf16-tensor"] > 1e11


def test_a_pass_two_in_another_launch_order_finds_the_same_counters():
    """Two runs of one program need not launch in the same order (the GPT-2 step's did
    not): every chosen kernel still gets its own counters, none another's."""
    kernels = kernel_times.kernel_times(H200_PASS1)
    in_order = app.counters_by_identity(kernels, H200_PASS2)
    shuffled = list(H200_PASS2)
    random.Random(7).shuffle(shuffled)
    assert [r["Kernel Name"] for r in shuffled] != [r["Kernel Name"] for r in H200_PASS2]
    moved = app.counters_by_identity(kernels, shuffled[1:] + shuffled[:1])
    assert moved.keys() == in_order.keys()
    for key, counters in in_order.items():
        assert moved[key].dram_read == pytest.approx(counters.dram_read)
        assert moved[key].flops == pytest.approx(counters.flops)


LIGER_PASS2 = parse_rows((NCU / "h100-liger-rms-norm-pass2.csv").read_text())


def test_lambdas_nsight_compute_spells_with_placeholders_are_matched():
    """Liger-Kernel's RMSNorm benchmark (linkedin/Liger-Kernel, unmodified; H100): 12 of
    its 60 chosen kernels, PyTorch's element-wise lambdas inside templated functions, found
    no launch in pass 2 and had no counters (a quarter of its GPU time). PyTorch's
    demangler writes the enclosing function's parameters out (``BinaryFunctor<float, ...>
    const&``), Nsight Compute as the template's placeholders (``const T1 &``)."""
    unmatched = json.loads((Path(__file__).parents[1] / "fixtures" / "trace"
                            / "h100-liger-rms-norm-unmatched.json").read_text())
    seen = {kernel_times.identity(row) for row in LIGER_PASS2}
    assert len(unmatched) == 12
    for kernel in unmatched:
        assert (kernel_names.name_key(kernel["kernel"]), kernel["grid"],
                kernel["block"]) in seen, kernel["kernel"][:120]


@pytest.mark.parametrize("runtime, ncu", [
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor"
     "<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor"
     "<float> > const&)::{lambda(int)#1})",
     "void at::elementwise_kernel<128, 2, void at::gpu_kernel_impl_nocast<at::BinaryFunctor"
     "<float, float, float, binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, "
     "const T1 &)::[lambda(int) (instance 1)]>(int, T3)"),
    ("void k<f(int)::{lambda()#1}::operator()() const::{lambda()#2}>(int)",
     "void k<f(T1)::[lambda() (instance 1)]::operator()() const::[lambda() (instance 2)]>(T1)"),
])
def test_an_enclosing_functions_parameters_do_not_tell_kernels_apart(runtime, ncu):
    assert kernel_names.name_key(runtime) == kernel_names.name_key(ncu)


def test_lambdas_of_different_instances_stay_apart():
    assert kernel_names.name_key("void k<f(int)::{lambda()#1}>(int)") != \
        kernel_names.name_key("void k<f(int)::{lambda()#2}>(int)")


def test_a_kernel_pass_two_missed_says_why():
    kernels = kernel_times.kernel_times(H200_PASS1)
    gemm, other = kernels[0], kernels[1]
    without_gemm = [r for r in H200_PASS2 if r["Kernel Name"] != gemm.kernel]
    assert why_no_counters(gemm, without_gemm) == profile_words.NO_COUNTERS
    reshaped = [{**r, "Grid Size": "(7, 7, 7)"} if r["Kernel Name"] == other.kernel else r
                for r in H200_PASS2]
    assert other.identity not in app.counters_by_identity(kernels, reshaped)
    assert "only at other launch shapes (grid (7, 7, 7)" in why_no_counters(other, reshaped)
    twin = [{**r, "Grid Size": gemm.grid, "Block Size": gemm.block} if r["Kernel Name"] ==
            other.kernel else r for r in without_gemm]
    assert "pass 2 profiled only" in why_no_counters(gemm, twin)   # at its shape


# A cuDNN CUTLASS convolution as PyTorch's profiler named it on an H200 (DCGAN, pytorch/
# examples, cudnn.benchmark): the C++ runtime's demangler gives up on it, so the trace keeps
# it mangled, where Nsight Compute's demangles it; the name ncu wrote is shaped as it
# writes one, its template arguments cut short.
CUTLASS_MANGLED = (
    "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock"
    "22ImplicitGemmMultistageINS_4gemm9GemmShapeILi64ELi64ELi32EEENS4_52Conv2dWgradOutputGradi"
    "entTileAccessIteratorOptimizedINS_11MatrixShapeILi64ELi32EEENS_10tfloat32_tENS_9transform"
    "29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi64ELi32EEELi128ENSF_ILi8ELi4EEELi4"
    "EEENS_12AlignedArrayISC_Li4ELi16EEEEENSD_11threadblock25RegularTileAccessIteratorISB_SC_NS"
    "_6layout40ColumnMajorTensorOpMultiplicandCongruousILi32ELi32EEELi1ESI_Li16EEELNS_4arch14Ca"
    "cheOperation4KindE0EEELi5EbEENS1_17Conv2dProblemSizeELNS1_9GroupModeE0EEEEEvNT_6ParamsE")
CUTLASS_BY_NCU = (
    "void cutlass__5x_cudnn::Kernel<cutlass__5x_cudnn::conv::kernel::ImplicitGemmConvolution<"
    "cutlass__5x_cudnn::conv::threadblock::ImplicitGemmMultistage<cutlass__5x_cudnn::gemm::"
    "GemmShape<64, 64, 32>, cutlass__5x_cudnn::conv::threadblock::Conv2dWgradOutputGradient"
    "TileAccessIteratorOptimized<cutlass__5x_cudnn::MatrixShape<64, 32>, cutlass__5x_cudnn::"
    "tfloat32_t>, 5, bool>, cutlass__5x_cudnn::conv::Conv2dProblemSize, "
    "(cutlass__5x_cudnn::conv::GroupMode)0>>(T1::Params)")


def test_a_kernel_pass_one_kept_mangled_meets_its_launches_by_function_and_shape():
    """DCGAN's CUTLASS weight-gradient convolution (5 % of its GPU time) and one of the
    ResNet-50 step's had no counters: pass 2 profiled them (its pattern is the mangled name
    itself) but their rows, named as ncu demangles, were not read as theirs. They meet on
    the function's name read off the mangled one, the grid and the block, where no other
    row does."""
    kernels = kernel_times.kernel_times(H200_PASS1)
    gemm = kernels[0]
    mangled = replace(gemm, kernel=CUTLASS_MANGLED)
    rows = [{**r, "Kernel Name": CUTLASS_BY_NCU} if r["Kernel Name"] == gemm.kernel else r
            for r in H200_PASS2]
    timed = [mangled, *kernels[1:]]
    found = app.counters_by_identity([mangled], rows, timed)
    alike = app.counters_by_identity([gemm], H200_PASS2)[gemm.identity]
    assert set(found[mangled.identity].kernels) == {CUTLASS_BY_NCU}
    assert replace(found[mangled.identity], kernels=alike.kernels) == alike
    other_tile = CUTLASS_BY_NCU.replace("GemmShape<64, 64, 32>", "GemmShape<128, 64, 32>")
    twin = {**next(r for r in rows if r["Kernel Name"] == CUTLASS_BY_NCU),
            "Kernel Name": other_tile}
    assert not app.counters_by_identity([mangled], [*rows, twin], timed)   # two: neither
    assert not app.counters_by_identity([mangled], rows, timed, loosely=False)


@pytest.mark.parametrize("mangled, function, argument", [
    (CUTLASS_MANGLED, "Kernel", "ImplicitGemmConvolution"),
    ("_Z6kernelIfEvPT_", "kernel", None),                        # a template's builtin type
    ("_ZL9my_kernelPfi", "my_kernel", None),                     # internal linkage
    ("_Z3fooPfS_", "foo", None),
    ("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_implINS0_13BinaryFunctorEEEvv",
     "elementwise_kernel", None),                                # a literal's first
    ("_ZN7cutlass6KernelINS_4gemm6kernel4GemmIiEEEEvNT_6ParamsE", "Kernel", "Gemm"),
    ("vectorized_elementwise_kernel", None, None),               # extern "C", not mangled
    ("void foo<int>(int)", None, None),
    ("_Z", None, None),
])
def test_a_mangled_names_function_and_first_argument_are_read_off_its_start(
        mangled, function, argument):
    assert kernel_names.mangled_names(mangled) == (function, argument)


def _mangled(namespaces: tuple[str, ...], function: str, argument: str | None,
             internal: bool) -> str:
    """An Itanium-mangled kernel name: in ``namespaces``, with a first template argument
    that is a class in the first namespace (a substitution of it) or none."""
    def names(parts):
        return "".join(f"{len(p)}{p}" for p in parts)
    nested = bool(namespaces)
    head = f"N{names(namespaces)}{len(function)}{function}" if nested else \
        f"{len(function)}{function}"
    template = f"INS_{len(argument)}{argument}EE" if argument and nested else \
        (f"I{len(argument)}{argument}E" if argument else "")
    return f"_Z{'L' if internal else ''}{head}{template}{'E' if nested else ''}vPfi"


@pytest.mark.parametrize("namespaces", [(), ("at",), ("at", "native"), ("cutlass__5x_cudnn",)])
@pytest.mark.parametrize("argument", [None, "Gemm", "ImplicitGemmConvolution"])
@pytest.mark.parametrize("internal", [False, True])
def test_every_mangled_shape_reads_its_function_and_first_argument(namespaces, argument,
                                                                  internal):
    for function in ("k", "Kernel", "elementwise_kernel", "x" * 123):
        name = _mangled(namespaces, function, argument, internal)
        assert kernel_names.mangled_names(name) == (function, argument), name


def test_no_cut_of_a_mangled_name_breaks_its_reading():
    """Every prefix of a real name (a truncated or hand-edited trace) is read without
    error, and any name it reads is spelled inside it."""
    for end in range(len(CUTLASS_MANGLED) + 1):
        cut = CUTLASS_MANGLED[:end]
        function, argument = kernel_names.mangled_names(cut)
        assert all(n is None or n in cut for n in (function, argument))
        kernel_names.short_name(cut), kernel_names.function_name(cut)


def test_a_kernel_pass_one_kept_mangled_is_named_and_said_what_it_does():
    assert kernel_names.short_name(CUTLASS_MANGLED) == "Kernel<ImplicitGemmConvolution>"
    assert kernel_names.function_name(CUTLASS_MANGLED) == "Kernel"
    assert kernel_names.what_it_does(CUTLASS_MANGLED) == "convolution backward (weights)"
    assert kernel_names.what_it_does(CUTLASS_BY_NCU) == "convolution backward (weights)"


def why_no_counters(k: kernel_times.KernelTime, rows: list[dict]) -> str:
    """The message a chosen kernel without counters gets: what pass 2 saw of it, in words."""
    return profile_words.missed_words(k, launch_matching.missed(k, rows))


@pytest.fixture(scope="module")
def h200_result(specs):
    kernels = kernel_times.kernel_times(H200_PASS1)
    counters = app.counters_by_identity(kernels, H200_PASS2)
    spec = find_spec("h200", specs)
    device = app.device_from(H200_PASS1, "580.159.04")
    calibration = calibrations.load(FIXTURES / "h200-calibration-2026-11-22.json")
    return app.profile_result("transformer_block.py", "/work", kernels, kernels, counters,
                              spec, device, calibration, Settings(counters="ncu"))


def test_a_gemm_near_its_compute_roof_is_done_whatever_l2_reads(specs):
    """The GPT-2 step's cuBLAS GEMMs at 83-90 % of the bf16 roof were called bandwidth-bound
    at L2 with up to 977 us of upside: a kernel within reach of its compute roof is
    compute-bound and done, whichever memory level is also near its own."""
    kernels = kernel_times.kernel_times(H200_PASS1)
    counters = app.counters_by_identity(kernels, H200_PASS2)
    gemm = kernels[0]
    calibration = calibrations.load(FIXTURES / "h200-calibration-2026-11-22.json")
    l2_roof = ceilings.bandwidth(calibration, "l2")
    measured = counters[gemm.identity]                  # 96 % of the roof on the H200
    slower = replace(measured, duration_s=measured.duration_s * 96 / 85)
    hot_l2 = replace(slower, l2_bytes=0.95 * l2_roof * slower.duration_s)
    result = app.profile_result("gpt2.py", ".", [gemm], [gemm], {gemm.identity: hot_l2},
                                find_spec("h200", specs), app.device_from(H200_PASS1, "x"),
                                calibration, Settings())
    (v,) = result.families[0].variants
    assert 0.80 <= v.point.compute_fraction < 0.90
    assert v.levels and max(level.fraction or 0 for level in v.levels) >= 0.9
    assert v.verdict.bound == "compute" and v.verdict.level is None
    assert upside.is_done(v)


def test_the_device_comes_from_the_log():
    device = app.device_from(H200_PASS1, "580.159.04")
    assert (device.name, device.sms, device.l2_bytes, device.compute_capability) == \
        ("NVIDIA H200", 132, 62914560, "9.0")


def test_verdicts_from_the_same_engine(h200_result):
    by_name = {v.name: v for v in h200_result.families[0].variants}
    gemm = by_name["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]
    assert gemm.precision == "bf16-tensor" and gemm.verdict.bound == "compute"
    assert gemm.share.library == "cuBLAS GEMM"
    assert by_name["add"].verdict.bound == "bandwidth"
    norm = by_name["LayerNorm"]
    assert norm.verdict.bound == "chain" and norm.verdict.causes     # a named cause
    assert all(not v.point.algorithmic_known for v in by_name.values())   # nobody counted them
    assert all(v.share.library for v in by_name.values())


def test_upside_is_what_the_best_move_could_save_by_the_move_rankings_arithmetic(h200_result):
    """The time after a kernel's best move is its time / the move's estimated speed-up (the
    gain that ranks the moves); a move with no estimate (fewer bytes per element) falls
    back to the nearest roof's distance, and so does a kernel whose only move trades its
    precision (the bf16 GEMM's fp8): it is judged as written, at 96 % of its roof: done."""
    by_name = {v.name: v for v in h200_result.families[0].variants}
    norm = by_name["LayerNorm"]
    assert upside.best_move(norm.verdict).id == "bytes_in_flight"
    assert norm.share.upside_s == pytest.approx(
        norm.share.total_s * (1 - 1 / upside.best_move(norm.verdict).gain))
    gelu = by_name["GELU"]
    assert upside.best_move(gelu.verdict).gain is None
    assert gelu.share.upside_s == pytest.approx(gelu.share.total_s * (1 - gelu.share.best_fraction))
    gemm = by_name["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]
    assert [m.id for m in gemm.verdict.moves if m.gain_from != "caller"] == ["fp8_tensor_cores"]
    assert upside.best_move(gemm.verdict) is None
    assert gemm.share.upside_s == pytest.approx(gemm.share.total_s * (1 - gemm.share.best_fraction))
    variants = list(by_name.values())
    for v in variants:
        assert v.share.best_fraction >= max(v.point.dram_fraction, v.point.compute_fraction)
    upsides = [v.share.upside_s for v in variants]
    assert upsides == sorted(upsides, reverse=True)                      # the view's order
    assert math.isclose(sum(v.share.share for v in variants), 1.0)
    done = [v.name for v in variants if upside.is_done(v)]
    assert done == ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]


def test_a_kernel_without_counters_has_no_verdict_but_keeps_its_time(specs):
    kernels = kernel_times.kernel_times(H200_PASS1)
    result = app.profile_result("p", "/", kernels, kernels[:2], {}, find_spec("h200", specs),
                                app.device_from(H200_PASS1, "x"), None, Settings())
    [v, _] = result.families[0].variants
    assert v.point is None and v.share.upside_s is None
    assert v.share.launches == len(v.samples_s) == 80
    # its time: that of the most frequent of the shapes this persistent GEMM ran
    assert v.time.n == 40 and any(n.startswith("3 shapes at one launch") for n in v.notes)
    assert result.settings.other_kernels == 3


def test_a_kernel_of_many_launches_keeps_some_samples_and_the_time_of_all(specs):
    """The word language model's LSTM launched one kernel 60,000 times, all kept: its
    result took 6.7 MB. A row keeps KEPT_SAMPLES durations, evenly spaced (the first and
    the last among them); its time is still every launch's."""
    [k, *_] = kernel_times.kernel_times(H200_PASS1)
    rng = random.Random(5)
    many = replace(k, durations_s=[rng.uniform(1e-6, 3e-6) for _ in range(25_001)])
    result = app.profile_result("p", "/", [many], [many], {}, find_spec("h200", specs),
                                app.device_from(H200_PASS1, "x"), None, Settings())
    [v] = result.families[0].variants
    assert len(v.samples_s) == app.KEPT_SAMPLES
    assert v.samples_s[0] == many.durations_s[0] and v.samples_s[-1] == many.durations_s[-1]
    assert v.time.n == v.share.launches == 25_001
    assert v.time.median_s == pytest.approx(2e-6, rel=0.02)
    assert TimeStats.of(v.samples_s).median_s == pytest.approx(v.time.median_s, rel=0.02)


@pytest.mark.parametrize("n", [0, 1, 2, 1999, 2000, 2001, 4000, 123_457])
def test_kept_samples_are_evenly_spaced_and_in_launch_order(n):
    durations = [float(i) for i in range(n)]
    kept = app.kept_samples(durations)
    assert len(kept) == min(n, app.KEPT_SAMPLES) and kept == sorted(set(kept))
    if n:
        assert (kept[0], kept[-1]) == (0.0, n - 1.0)
        gaps = {b - a for a, b in zip(kept, kept[1:])}
        assert max(gaps, default=1) - min(gaps, default=1) <= 1


@pytest.mark.parametrize("kernel, words", [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", "cuBLAS GEMM"),
    ("triton_poi_fused_gelu_view_2", "Triton (torch.compile)"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", "attention"),
    ("void at::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float, 0>(int)",
     "normalisation"),
    ("my_own_kernel", None),
])
def test_library_kernels_are_named_plainly(kernel, words):
    found = kernel_libraries.library(kernel)
    assert (found is None) if words is None else words in found


@pytest.mark.parametrize("command, name", [
    (["python3", "examples/apps/transformer_block.py", "--compile"], "transformer_block.py"),
    (["./my_binary", "--size", "4"], "my_binary"),
    # attorch's examples are run as modules: the family had been called "python3"
    (["python3", "-m", "examples.regression.main", "--epochs", "1"], "examples.regression.main"),
    (["python3", "-u", "-m", "pytest", "tests/test_x.py"], "test_x.py"),
    (["./sgemm", "-m", "5"], "sgemm"),           # a program's own -m is not Python's
])
def test_the_program_is_named_by_its_script(command, name):
    assert app.program_name(command) == name


# -- the committed profiles read like any result -------------------------------------------

PROFILES = sorted((REPO / "examples" / "profile").glob("*-profile-*.json"))


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_committed_profiles_show_with_their_upside_table(path):
    outcome = rooflint("show", str(path), "--detail", env={"COLUMNS": "120"})
    assert outcome.code == 0, outcome.stderr
    assert "where a fix could" in outcome.stdout
    assert "py ()" not in outcome.stdout                # a program has no parameters to show


def test_two_profiles_compare_by_kernel_name_and_say_what_vanished(tmp_path):
    eager, compiled = (REPO / "examples" / "profile" / f"h200-profile-{k}.json"
                       for k in ("eager", "compiled"))
    outcome = rooflint("compare", str(eager), str(compiled), "--json", "-")
    assert outcome.code == 0, outcome.stderr
    doc = json.loads(outcome.stdout)
    assert "vectorized_elementwise_kernel<GeluCUDAKernelImpl>" in doc["vanished"]
    assert "triton_poi_fused_gelu_view_2" in doc["new"]
    assert any("nvjet" in c["a"] for c in doc["comparisons"])


def test_compared_kernels_are_named_so_forward_and_backward_tell_apart():
    """nanoGPT's eager and compiled profiles (H100): the attention forward and backward
    are each compared under a name that shows which it is, the file's name whole after
    it; the JSON keeps the whole names."""
    eager, compiled = (REPO / "examples" / "profile" / f"h100-profile-nanogpt-{k}.json"
                       for k in ("eager", "compiled"))
    outcome = rooflint("compare", str(eager), str(compiled), env={"COLUMNS": "300"})
    assert outcome.code == 0, outcome.stderr
    sentences = [line for line in outcome.stdout.splitlines() if "take the same time" in line
                 or " faster than " in line or " slower than " in line]
    for part in ("fprop", "bprop"):
        assert any(f"flash_{part}_…kernel0_0 (h100-profile-nanogpt-eager.json)" in line
                   for line in sentences), part
    doc = json.loads(rooflint("compare", str(eager), str(compiled), "--json", "-").stdout)
    assert any(c["a"].startswith("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma")
               and c["a"].endswith("kernel0_0 (h100-profile-nanogpt-eager.json)")
               for c in doc["comparisons"])


def traced_on_h100(held: float | None) -> dict:
    """A trace of one kernel on an 80 GB GPU, its program holding ``held`` bytes."""
    from rooflint.formats.trace_events import PEAK_RESERVED
    trace = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                   "totalGlobalMem": 85_000_000_000, "numSms": 132}],
             "traceEvents": [{"cat": "kernel", "args": {"device": 0}}]}
    return trace | ({PEAK_RESERVED: held} if held is not None else {})


@pytest.mark.parametrize("held, warned", [(48e9, True), (16e9, False), (None, False)])
def test_a_program_holding_most_of_its_gpu_is_told_pass_2_may_crawl(held, warned):
    """Measured on an H100: 40 profiled launches took 14.7 s with 16 GB held and had not
    ended after 400 s with 48 GB (Nsight Compute's save and restore no longer fits)."""
    memory = app.memory_held_past_replay_room(traced_on_h100(held))
    assert (memory is not None) == warned
    if warned:
        words = profile_words.held_memory_words(*memory)
        assert "48.0 GB" in words or "44.7 GiB" in words, words
        assert "--top" in words
    assert app.memory_held_past_replay_room(None) is None
    # no GPU named: no warning
    assert app.memory_held_past_replay_room({"traceEvents": []}) is None


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragments", [
    (("--kernel", "gemm(", "--", "python", "x.py"), ["--kernel", "not a regular expression"]),
    (("--json", "/no/such/dir/p.json", "--", "python", "x.py"), ["cannot write", "no directory"]),
    (("--", "sh", "x.sh"), ["needs Nsight Compute", "ncu is not on PATH"]),
])
def test_profile_refuses_in_one_line(args, fragments):
    outcome = rooflint("profile", *args, env={"PATH": "/usr/bin:/bin"})
    assert_one_line_error(outcome, 2, *fragments)


def test_logs_that_are_a_file_are_refused_in_one_line(tmp_path):
    """(Where the folder is made, and when: test_trust_inputs_round2.py.)"""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    outcome = rooflint("profile", "--logs", str(a_file), "--", "python", "x.py")
    assert_one_line_error(outcome, 2, "--logs", "not a directory")
    assert a_file.read_text() == "mine\n"


def test_a_profile_plot_sizes_dots_by_time_share(h200_result):
    from rooflint.output.plot_marks import SHARE_DOT_SIZE
    from rooflint.output.plotting import figure
    fig = figure([h200_result])
    sizes = {line.get_gid().removeprefix("variant-"): line.get_markersize()
             for line in fig.axes[0].lines if (line.get_gid() or "").startswith("variant-")}
    shares = {v.name: v.share.share for v in h200_result.families[0].variants}
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"
    assert sizes[gemm] == pytest.approx(SHARE_DOT_SIZE * math.sqrt(shares[gemm]))
    assert sizes[gemm] == max(sizes.values())


# Mangled names as the compiler writes them, with the names PyTorch's profiler gives them
# (the C++ runtime's demangler; c++filt writes the same).
MANGLED = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_":
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, "
        "std::array<char*, 3ul>)",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EE"
    "ESt5arrayIPcLm3EEEEviT0_T1_":
        "void at::native::vectorized_elementwise_kernel<4, "
        "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, "
        "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_":
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_10NormTwoOpsIfffLb1EEEjfLi4ELi4EEEEEvT1_":
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
        "at::native::NormTwoOps<float, float, float, true>, unsigned int, float, 4, 4> "
        ">(at::native::ReduceOp<float, "
        "at::native::NormTwoOps<float, float, float, true>, unsigned int, float, 4, 4>)",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT":
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT_v2":
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT_v2",
    "_Z33my_vectorized_elementwise_kernel2v": "void my_vectorized_elementwise_kernel2()",
}


def test_pass_two_skips_the_programs_first_launches_only_when_asked():
    """Nsight Compute's --launch-skip-before-match counts every launch, whatever its name
    (checked on an H200: a program launching a fill, then three rounds of foo at four grids
    and bar at two; foo profiled from round 1's fourth grid on after 10 skipped, from round
    2's second after 14), where --launch-skip counts only the matching ones."""
    from rooflint.measure import program as passes
    args = passes.selection(["nvjet"], 2669)
    assert args[args.index("--launch-skip-before-match") + 1] == "2669"
    assert "--launch-skip" not in args
    assert "--launch-skip-before-match" not in passes.selection(["nvjet"])


def _pass2_expression(chosen_names: list[str]) -> str:
    from rooflint.measure import program as passes
    timed = [kernel_times.KernelTime(name, "(1, 1, 1)", [1e-6]) for name in MANGLED.values()]
    chosen = [k for k in timed if k.kernel in chosen_names]
    args = passes.selection(pass2_patterns.mangled_patterns(chosen, timed))
    assert args[args.index("--kernel-name-base") + 1] == "mangled"
    assert args[args.index("--print-kernel-base") + 1] == "demangled"
    return args[args.index("-k") + 1].removeprefix("regex:")


@pytest.mark.parametrize("chosen", [
    ["CUDAFunctor_add<c10::BFloat16>", "FillFunctor", "coopA_NNT"],
    ["NormTwoOps"], ["CUDAFunctor_add<float>"], ["coopA_NNT_v2", "FillFunctor"]])
def test_pass_two_selects_each_chosen_kernel_by_its_mangled_name(chosen):
    """ncu's -k (on mangled names, the one spelling every tool shares) matches each chosen
    kernel, and of the others of its function only those its template words cannot tell
    apart (``CUDAFunctor_add<float>`` is every word of ``<c10::BFloat16>``: a float is
    no word of a mangled name); never another function whose name holds its name."""
    names = [n for n in MANGLED.values() if any(word in n for word in chosen)
             and not (n.endswith("_v2") and "coopA_NNT_v2" not in chosen)]
    expression = _pass2_expression(names)
    selected = {d for m, d in MANGLED.items() if re.search(expression, m)}
    loose = {MANGLED[m] for m in MANGLED if "CUDAFunctor_addIN3c10" in m} \
        if "CUDAFunctor_add<float>" in chosen else set()
    assert selected == set(names) | loose


REAL_NAMES = dict(line.split("\t") for line in (
    REPO / "tests" / "fixtures" / "ncu" / "h100-train-mangled-names.tsv").read_text().splitlines()
    if not line.startswith("#"))


@pytest.mark.parametrize("mangled", sorted(REAL_NAMES))
def test_each_kernel_of_a_real_training_step_is_selected_by_its_own_pattern(mangled):
    """The 51 kernels of examples/apps/train_step.py as the H100 ran them (ncu's mangled
    names, demangled as PyTorch's profiler names them: c++filt): chosen alone, each is
    matched by pass 2's expression, and no kernel of another function is."""
    timed = [kernel_times.KernelTime(name, "(1, 1, 1)", [1e-6]) for name in REAL_NAMES.values()]
    mine = REAL_NAMES[mangled]
    chosen = [k for k in timed if k.kernel == mine]
    from rooflint.measure import program as passes
    args = passes.selection(pass2_patterns.mangled_patterns(chosen, timed))
    expression = args[args.index("-k") + 1].removeprefix("regex:")
    selected = [d for m, d in REAL_NAMES.items() if re.search(expression, m)]
    assert mine in selected
    assert {kernel_names.function_name(d) for d in selected} == \
        {kernel_names.function_name(mine)}


def test_template_words_are_the_names_a_mangled_name_spells():
    name = MANGLED["_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_10NormTwoOps"
                   "IfffLb1EEEjfLi4ELi4EEEEEvT1_"]
    assert pass2_patterns.template_words(name) == ["ReduceOp", "NormTwoOps"]
    lambda_kernel = ("void at::native::vectorized_elementwise_kernel<8, "
                     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
                     "at::native::GeluType)::{lambda()#2}::operator()() const::"
                     "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, float, "
                     "std::array<char*, 2ul>)")
    assert pass2_patterns.template_words(lambda_kernel) == ["GeluCUDAKernelImpl", "array"]
    assert kernel_names.function_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward"
                                         "<8, float>(float*, int)") == "cunn_SoftMaxForward"


@pytest.mark.parametrize("columns", [100, 140])
def test_the_application_table_keeps_each_kernels_name_on_one_line(columns):
    """cuDNN's and cuBLAS's names run to 90 characters: shortened around an ellipsis, each
    kernel's name sits whole on its row at 100 and 140 columns (the full name is in the
    result document), told apart from every other row's, and at 140 each kernel is one
    line, with the line it came from."""
    from rooflint.output.terminal import shortened_names
    path = REPO / "examples" / "profile" / "h100-profile-train-eager.json"
    variants = read_result(path).families[0].variants
    shown = shortened_names(v.name for v in variants)
    assert len(set(shown.values())) == len(variants)
    outcome = rooflint("show", str(path), "--detail", env={"COLUMNS": str(columns)})
    lines = outcome.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("  not profiled"))
    rows = lines[start:end]
    assert all(len(line) <= columns for line in lines)
    for v in variants:
        assert any(row.startswith(shown[v.name] + " ") for row in rows), v.name
    if columns == 140:
        assert len(rows) == len(variants)
        assert "launched from" in lines[start - 2] and "train_step.py:34 forward" in rows[0]


@pytest.mark.parametrize("line, cell", [
    ("train_step.py:34 in Block.forward", "train_step.py:34 forward"),
    # Liger-Kernel's benchmark: its line number had read "benchmark_rms_no…3 forward"
    ("benchmark_rms_norm.py:33 in LlamaRMSNorm.forward", "benchmark_rms_…:33 forward"),
    ("utils.py:143 in run_speed_benchmark.<locals>.<lambda>", "utils.py:143 <lambda>"),
    ("a_very_long_module_name_indeed.py:1234 in a_very_long_function_name",
     "a_very_long_module_n…:1234"),
])
def test_the_origin_cell_keeps_the_line_number_whole(line, cell):
    from rooflint.output.tables import ORIGIN_WIDTH, origin_cell
    assert origin_cell(line) == cell and len(cell) <= ORIGIN_WIDTH


@pytest.mark.parametrize("name, columns", [
    # a C++ program's own kernels, timed by CUPTI's records: no library, no caller known
    ("h100-profile-llmc-layernorm-forward-3", ("kernel", "share")),
    ("h100-profile-train-eager", ("kernel", "what", "launched from", "share")),
])
def test_the_application_table_shows_only_the_columns_it_has_something_for(name, columns):
    outcome = rooflint("show", str(REPO / "examples" / "profile" / f"{name}.json"),
                       "--detail", env={"COLUMNS": "140"})
    lines = outcome.stdout.splitlines()
    header = lines[next(i for i, line in enumerate(lines) if line.startswith("----")) - 1]
    assert header.split()[:len(" ".join(columns).split())] == " ".join(columns).split()
    assert "outside PyTorch's operators" not in outcome.stdout or "what" in columns


CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_{}_wgmma_f16_knob_{}_cga1x1x1_kernel0_0"


@pytest.mark.parametrize("names", [
    # nanoGPT's table (H100) showed the attention forward and backward both as
    # "cudnn_generated_fort…kernel0_0", and two cuBLAS tile shapes alike
    [CUDNN.format("bprop", "26_64x64x64_1x4x1"), CUDNN.format("fprop", "7_64x128x64_4x1x1")],
    ["nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNN",
     "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_NTT"],
    ["a" * 40 + "x" + "b" * 40, "a" * 40 + "y" + "b" * 40, "a" * 40 + "z" + "b" * 40],
    ["short_kernel", "vectorized_elementwise_kernel<4, FillFunctor<float>>@6144"],
])
def test_names_that_shorten_alike_are_told_apart_in_the_width_of_one(names):
    from rooflint.output.terminal import NAME_WIDTH, shortened, shortened_names
    shown = shortened_names(names)
    assert len(set(shown.values())) == len(names)
    assert all(len(text) <= NAME_WIDTH for text in shown.values())
    alone = {shortened(n) for n in names}
    if len(alone) == len(names):                  # nothing collided: nothing changes
        assert set(shown.values()) == alone


def test_three_names_parting_at_two_places_are_each_told_from_the_nearest():
    """Each shows where it parts from the name nearest it (the longest common start)."""
    from rooflint.output.terminal import shortened_names
    names = ["k" * 20 + "ab" + "m" * 30 + "cd" + "t" * 20,
             "k" * 20 + "ab" + "m" * 30 + "ce" + "t" * 20,
             "k" * 20 + "ac" + "m" * 30 + "cd" + "t" * 20]
    shown = shortened_names(names)
    assert len(set(shown.values())) == 3


def test_a_persistent_gemm_running_several_shapes_is_not_called_noisy():
    """cuBLAS's persistent GEMM runs the QKV and the MLP projection at one grid: its
    launch times fall into tight groups (10 us and 27 us on the H200), a mix of shapes,
    not noise. Its time is the most frequent shape's, and a note says so; a continuous
    spread (a copy kernel between 7 and 9 us) stays noisy."""
    variants = {v.name: v for v in read_result(
        REPO / "examples" / "profile" / "h200-profile-train-eager.json").families[0].variants}
    gemm = variants["nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT"]
    stats, note = app.explained_spread(kernel_times.KernelTime(gemm.share.kernel, "",
                                                               gemm.samples_s))
    assert not stats.noisy and stats.n == 20 and len(gemm.samples_s) == 40
    assert stats.median_s == pytest.approx(9.9e-6, rel=0.03)
    assert note.startswith("2 shapes at one launch configuration") and "20 of 40" in note
    assert gemm.time == stats and note in gemm.notes       # as the committed profile says
    copy = next(v for name, v in variants.items() if name.startswith("unrolled_elementwise")
                and v.time.noisy)
    copy_times = kernel_times.KernelTime(copy.share.kernel, "", copy.samples_s)
    assert time_spread.mixed_shapes(copy_times) is None


@pytest.mark.parametrize("seed", range(20))
def test_shapes_are_told_from_noise_over_random_launch_times(seed):
    """Tight groups SHAPE_GAP or more apart are shapes wherever their mix reads noisy (a
    few launches of a second shape leave the quartiles alone: nothing to explain); one
    shape with a few percent of jitter, or with one slow outlier, is not."""
    rng = random.Random(seed)

    def jitter(t: float, n: int) -> list[float]:
        return [t * (1 + rng.uniform(-0.02, 0.02)) for _ in range(n)]
    base = rng.uniform(2e-6, 1e-3)
    shapes = (jitter(base, rng.randint(2, 30))
              + jitter(base * rng.uniform(1.3, 5), rng.randint(2, 30)))
    mixed = time_spread.mixed_shapes(kernel_times.KernelTime("k", "", shapes))
    assert (mixed is not None) == TimeStats.of(shapes).noisy
    assert mixed is None or profile_words.shapes_note(mixed).startswith("2 shapes")
    one = jitter(base, 40)
    assert time_spread.mixed_shapes(kernel_times.KernelTime("k", "", one)) is None
    assert time_spread.mixed_shapes(kernel_times.KernelTime("k", "", one + [base * 3])) is None


def test_half_precision_fmas_on_the_tensor_pipe_are_not_uncounted_tensor_work():
    """Recorded (H200, the compiled training step, every tensor precision read): Triton's
    bf16 GELU keeps the tensor pipe 14 % busy with HFMA2.MMA, which its fp16 FLOPs count;
    no tensor work went uncounted, so no note says so. A GEMM's pipe is its tensor FLOPs."""
    from rooflint.analysis.counters import traffic
    variants = {v.name: v for v in read_result(
        REPO / "examples" / "profile" / "h200-profile-train-compiled.json").families[0].variants}
    gelu = variants["triton_poi_fused_gelu_view_10"].counters
    assert gelu.tensor_pipe_pct > 10 and gelu.flops.get("fp16") and gelu.hmma_instructions
    assert not any("tensor pipe" in n for n in traffic(gelu, 0, 0, 0, "fp32").notes)
    no_half = replace(gelu, flops={"fp32": gelu.flops["fp32"]})
    assert any("tensor pipe was busy 15 %" in n for n in traffic(no_half, 0, 0, 0, "fp32").notes)


@pytest.mark.parametrize("name, ours, theirs", [
    ("XLA_PYTHON_CLIENT_PREALLOCATE", "false", "true"),   # JAX's 75 %, saved at each replay
    ("TRITON_CACHE_AUTOTUNING", "1", "0")])               # pass 2 runs pass 1's configs
def test_the_passes_set_the_programs_defaults_unless_its_user_did(monkeypatch, name, ours,
                                                                  theirs):
    from rooflint.measure.pass_runner import program_environment
    monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MY_SETTING", "1")
    assert program_environment()[name] == ours
    assert program_environment()["MY_SETTING"] == "1"
    monkeypatch.setenv(name, theirs)
    assert program_environment()[name] == theirs


@pytest.mark.parametrize("tuners, words", [
    (None, "XLA's autotuner"),                  # a result written before tuners were named
    (["Triton's autotuner"], "Triton's autotuner"),
    (["XLA's autotuner", "Triton's autotuner", "Triton's do_bench flushing L2"],
     "XLA's autotuner, Triton's autotuner and Triton's do_bench flushing L2")])
def test_the_autotuning_left_out_is_said_under_the_table(tuners, words):
    from rooflint.formats.results import RunResult
    from rooflint.output.tables import autotuning_line
    result = read_result(REPO / "examples" / "profile" / "h100-profile-train-eager.json")
    assert autotuning_line(result) is None
    tuned = RunResult(gpu=result.gpu, spec_id=result.spec_id,
                      settings=replace(result.settings, autotuning_launches=1996,
                                       autotuning_s=0.6146, autotuners=tuners))
    assert autotuning_line(tuned) == (f"left out: 1996 launches of {words} (615 ms): "
                                      f"benchmarking, not the program's work")


def test_a_gpu_known_only_from_the_trace_has_no_l2_size_to_print():
    """Pass 2 stopped before Nsight Compute named the GPU: the profiler's trace names no
    L2 (a JAX program timed out in pass 2 printed "L2 0 B")."""
    from rooflint.output.family_table import device_markup
    result = read_result(REPO / "examples" / "profile" / "h100-profile-jax.json")
    assert "L2 50 MiB" in device_markup(result)
    result.gpu = replace(result.gpu, l2_bytes=0)
    assert "L2 size unknown" in device_markup(result)


def test_a_profile_whose_pass_2_stopped_is_read_back_as_written():
    """Four FSDP2 ranks on four H200s: pass 2 stopped at its limit, the result kept pass 1's
    times and the GPU its trace named, with no L2 size; `rooflint show` of that very file
    had refused it ("field 'gpu.l2_bytes' is 0")."""
    from rooflint.output.family_table import device_markup
    stopped = REPO / "examples" / "profile" / "h200x4-profile-fsdp.json"
    result = read_result(stopped)
    assert result.gpu.l2_bytes == 0 and "L2 size unknown" in device_markup(result)
    assert "pass 2 stopped after 220 s" in result.settings.pass2_stopped
    for rank in range(4):
        assert read_result(stopped.with_suffix(f".rank{rank}.json")).gpu.l2_bytes == 0


SOFTMAX_TUTORIAL = REPO / "examples" / "profile" / "h100-profile-triton-tutorial-softmax.json"


def test_a_kernel_whose_work_changes_along_the_run_is_not_called_noisy():
    """Triton's fused-softmax tutorial (H100): its kernel at one grid ran 98 sizes through
    do_bench, and its launch times (11,959 of them, ±21 %, in an earlier recording; 9,441,
    ±19 %, in this one) read "noisy". In launch order they step 1.5 % from one launch to
    the next; shuffled, the same times are noise."""
    recorded = json.loads(SOFTMAX_TUTORIAL.read_text())
    kernel = next(v for v in recorded["families"][0]["variants"]
                  if v["name"] == "softmax_kernel@132")
    samples = kernel["samples_s"]
    stats, _ = app.explained_spread(kernel_times.KernelTime("softmax_kernel", "(132, 1, 1)",
                                                             samples))
    assert not stats.noisy and stats.spread > 0.15
    assert "not noise" in stats.varies and stats.median_s == TimeStats.of(samples).median_s
    shuffled = random.Random(0).sample(samples, len(samples))
    assert time_spread.drifting(kernel_times.KernelTime("k", "", shuffled)) is None


def test_independent_noise_stays_noise():
    rng = random.Random(1)
    samples = [rng.gauss(100e-6, 15e-6) for _ in range(500)]
    assert TimeStats.of(samples).noisy
    assert time_spread.drifting(kernel_times.KernelTime("k", "", samples)) is None
    steady = [100e-6] * 50                                        # no spread: nothing to say
    assert time_spread.drifting(kernel_times.KernelTime("k", "", steady)) is None
