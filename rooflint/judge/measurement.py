"""Judge a measured family: the device's spec, whether its variants' precisions have roofs
there, and each variant's measurements and counters made into its result (roofline point,
verdict, expectations, comparison with the variant it was meant to beat).

`run` (manifests, lanes, workers), `compare` (its measured sides, engine/compare_sides.py) and
`profile` (the device behind a program's kernels) all judge through here, so a family
measured any way reads the same.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from rooflint.common.vocabularies import CacheMode
from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.counters import Counters
from rooflint.analysis.evidence import Bound
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.analysis.diagnose import Verdict
from rooflint.analysis.moves import refuted_traps
from rooflint.analysis.sourcelines import SourceProfile, top_stall_line
from rooflint.common.errors import RooflintError
from rooflint.common.paths import portable_path
from rooflint.formats.calibration import Calibration
from rooflint.formats.family_job import ResolvedFamily, VariantModel
from rooflint.formats.gpus import DeviceInfo, find_spec, match_device
from rooflint.formats.jobs import Measurement, VariantJob
from rooflint.formats.manifest import Manifest
from rooflint.formats.results import FamilyResult, VariantResult
from rooflint.formats.status import Status
from rooflint.judge.kernel_libraries import library
from rooflint.judge.comparison import reconcile


def device_spec(device: DeviceInfo, gpu: str | None, specs: list[GpuSpec]) -> GpuSpec:
    """The spec a measured device is judged against: ``--gpu``'s (a family name settled by
    the device itself), else the one whose NVML name is the device's."""
    if gpu:
        return find_spec(gpu, specs, present=lambda: [device.name])
    spec = match_device(device.name, specs)
    if spec is None:
        raise RooflintError(f"no spec matches this GPU ({device.name}); pass --gpu ID "
                            f"(known: {', '.join(s.id for s in specs)}) or add specs/<id>.yaml")
    return spec


def check_precisions(manifests: list[Manifest], spec: GpuSpec) -> None:
    """Every variant's precision must have a roof on this GPU: say so before measuring."""
    for manifest in manifests:
        for variant in manifest.variants:
            if variant.precision not in spec.peaks:
                raise RooflintError(
                    f"{manifest.name}:{variant.name} is declared {variant.precision}, but "
                    f"{spec.id} has no {variant.precision} roof (it has: "
                    f"{', '.join(spec.peaks)}); change the precision or add the peak to "
                    f"{spec.path}")


def family_result(family: ResolvedFamily, measurements: list[Measurement],
                  counters: dict[str, Counters], spec: GpuSpec, device: DeviceInfo,
                  calibration: Calibration | None = None,
                  sources: dict[str, SourceProfile] | None = None) -> FamilyResult:
    variants = [variant_result(family, family.models[m.variant], m, counters.get(m.variant),
                               spec, device, calibration)
                for m in measurements]
    for v in variants:
        v.source_lines = portable_files((sources or {}).get(v.name))
        v.verdict = without_refuted_traps(v.verdict, v.source_lines)
    baseline = next((v for v in variants if v.baseline and v.time), None)
    by_name = {v.name: v for v in variants}
    for v in variants:
        if baseline and v.time and v is not baseline:
            v.speed_vs_baseline = baseline.time.median_s / v.time.median_s
        v.expectation_mismatch = expectation_mismatch(v, by_name)
        other = by_name.get(v.expect.get("faster_than") or "")
        v.versus = reconcile(v, other) if other else None
    return FamilyResult(name=family.manifest.name,
                        directory=portable_path(family.manifest.directory),
                        params=family.params, baseline=baseline.name if baseline else None,
                        variants=variants)


def variant_result(family: ResolvedFamily, model: VariantModel, m: Measurement,
                   counters: Counters | None, spec: GpuSpec, device: DeviceInfo,
                   calibration: Calibration | None) -> VariantResult:
    job = next(v for v in family.job.variants if v.name == model.name)
    analysis = analyse(Observation(
        name=model.name, precision=model.precision,
        samples_s=m.samples_s if m.status == Status.OK else [], counters=counters,
        model=Model(model.flops, model.bytes, model.written_bytes),
        grid_blocks=model.grid_blocks, threads_per_block=model.threads_per_block,
        launches=model.launches, graph_samples_s=m.graph_samples_s,
        cached=family.job.timing.cache == CacheMode.WARM), spec, device.sms, calibration)
    return VariantResult(
        name=model.name, description=model.description, status=m.status, message=m.message,
        baseline=model.baseline, source_sha256=_sha256(job.source),
        precision=model.precision, tolerance=job.tolerance, checks=m.checks,
        samples_s=m.samples_s, time=analysis.time, clocks=m.clocks, gpm=m.gpm,
        graph_time=analysis.graph_time, flops=analysis.flops, dram_bytes=analysis.dram_bytes,
        counters=analysis.counters, notes=analysis.notes, roofs=analysis.roofs,
        point=analysis.point,
        verdict=analysis.verdict and library_moves.with_caller_moves(
            analysis.verdict, library_timed(job, counters)),
        expect={"bound": model.expect.bound, "faster_than": model.expect.faster_than,
                "move": model.expect.move},
        expectation_mismatch=None, versus=None, speed_vs_baseline=None, gate=model.gate,
        compiler=m.compiler, levels=analysis.levels)


def without_refuted_traps(verdict: Verdict | None,
                          profile: SourceProfile | None) -> Verdict | None:
    """The verdict less the traps its source lines refute (moves.refuted_traps): a kernel
    whose most-stalled line is an async copy is not told async copies are a trap."""
    if verdict is None or profile is None:
        return verdict
    heads = refuted_traps(top_stall_line(profile))
    if not heads:
        return verdict
    return replace(verdict, ruled_out=[t for t in verdict.ruled_out if not t.startswith(heads)])


def library_timed(job: VariantJob, counters: Counters | None) -> str | None:
    """The library whose kernel a python variant times (cuBLAS for cupy.matmul), by its
    first kernel's name: its caller's moves (shapes, bf16, fp8) lead its verdict, as a
    program's library kernels' do, since nobody can change cuBLAS's FMAs. None for a CUDA
    variant, whose kernels are the user's whatever their names."""
    if job.source is not None or not counters or not counters.kernels:
        return None
    return library(counters.kernels[0])


def portable_files(profile: SourceProfile | None) -> SourceProfile | None:
    """The source lines with their files as a result records paths (see portable_path)."""
    if profile is None:
        return None
    lines = [replace(line, file=portable_path(Path(line.file))) for line in profile.lines]
    return replace(profile, lines=lines)


def expectation_mismatch(v: VariantResult, by_name: dict[str, VariantResult]) -> str | None:
    """What the measurement contradicts in the author's stated expectation, if anything."""
    problems = []
    if (v.verdict and v.expect.get("bound") and v.expect["bound"] != v.verdict.bound
            and not unseen_level(v)):
        problems.append(f"expected {v.expect['bound']}-bound, measured {v.verdict.bound}-bound")
    other = by_name.get(v.expect.get("faster_than") or "")
    if v.time and other and other.time and v.time.median_s >= other.time.median_s:
        problems.append(f"expected faster than {other.name}, measured "
                        f"{v.time.median_s / other.time.median_s:.2f}x its time")
    return "; ".join(problems) or None


def unseen_level(v: VariantResult) -> bool:
    """Expected bandwidth-bound, judged chain-bound without counters: the level that binds
    may be L1 or L2, which only counters show, so the expectation cannot be checked."""
    return (v.expect.get("bound") == Bound.BANDWIDTH and v.verdict.bound == Bound.CHAIN
            and v.counters is None)


def _sha256(source: str | None) -> str | None:
    if not source:
        return None
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()
