"""What `rooflint compare` compares: variants in result files, or kernels measured now.

A side is ``result.json`` (every variant, matched by family and name with the other
file), ``result.json:VARIANT``, ``TARGET:VARIANT`` (a family directory, kernel.yaml or
bundled name; measured now), or, with ``--rev REV``, ``TARGET:VARIANT`` as its family
directory was at that git revision against the working tree. Two measured sides run in
one worker with their timing batches interleaved (A B A B ...), so drift hits both.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, replace
from io import BytesIO
from pathlib import Path
from typing import Callable

from rooflint.common.vocabularies import CountersMode
from rooflint.formats import calibration as calibrations
from rooflint.formats.baseline import Baseline
from rooflint.common.errors import RooflintError
from rooflint.formats.gpus import load_specs
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest, select_variants
from rooflint.formats.jobs import TimingJob
from rooflint.measure import build, ncu
from rooflint.measure.runner import Progress, WorkerPool
from rooflint.common.paths import locate_family
from rooflint.formats.results import RunResult, VariantResult, read_result
from rooflint.formats.settings import DEFAULT_COUNTERS, Settings
from rooflint.judge.measurement import check_precisions, device_spec, family_result
from rooflint.measure.protocol import check_fits
from rooflint.engine.counters_switch import CountersSwitch
from rooflint.engine.families import RunOptions, family_counters, load_family


@dataclass
class Side:
    label: str
    result: RunResult
    variant: VariantResult


def _no_progress(family: object, phase: str) -> Progress:
    return lambda event, variant: None


def _no_note(line: str) -> None:
    pass


@dataclass(frozen=True)
class Measuring:
    """How a side measured now is measured, whichever command asks: the spec it is judged
    against (None: the device's), where its bytes and FLOPs come from, and who hears each
    family's progress (timing, counters) and the notes its loading has. Silent unless told."""

    gpu: str | None = None
    counters: CountersMode = DEFAULT_COUNTERS
    progress_for: Callable[[object, str], Progress] = _no_progress
    note: Callable[[str], None] = _no_note


def split_side(text: str) -> tuple[str, str | None]:
    """``path:VARIANT`` -> (path, VARIANT); a plain path -> (path, None)."""
    path, sep, variant = text.rpartition(":")
    return (path, variant) if sep and variant and "/" not in variant else (text, None)


def _is_file(path: str) -> bool:
    return path.endswith(".json")


def file_sides(text: str) -> list[Side]:
    path, variant = split_side(text)
    sides = result_sides(read_result(Path(path)), variant)
    if not sides:
        raise RooflintError(f"{path} has no variant {variant!r}" if variant else
                            f"{path} has no variants to compare")
    return sides


def result_sides(result: RunResult, variant: str | None = None) -> list[Side]:
    """Every variant of ``result`` (only those called ``variant``, when named) as a side
    labelled by its name."""
    return [Side(v.name, result, v)
            for f in result.families for v in f.variants if variant in (None, v.name)]


def pairs_from_files(a: str, b: str) -> list[tuple[Side, Side]]:
    names = (Path(split_side(a)[0]).name, Path(split_side(b)[0]).name)
    pairs = paired(file_sides(a), file_sides(b), names)
    if not pairs:
        raise RooflintError(f"{a} and {b} share no variant names; name one on each side "
                            f"(file.json:VARIANT)")
    return pairs


def paired(left: list[Side], right: list[Side], names: tuple[str, str]
           ) -> list[tuple[Side, Side]]:
    """The sides of two files paired: one with one, else by variant name (none when no name
    is shared); a label both sides share is told apart by the file's name in ``names``."""
    if len(left) == 1 and len(right) == 1:
        pairs = [(left[0], right[0])]
    else:
        by_name = {s.variant.name: s for s in right}
        pairs = [(s, by_name[s.variant.name]) for s in left if s.variant.name in by_name]
    return [(replace(x, label=f"{x.label} ({names[0]})"),
             replace(y, label=f"{y.label} ({names[1]})"))
            if x.label == y.label else (x, y) for x, y in pairs]


def unmatched(a: str, b: str) -> tuple[list[str], list[str]]:
    """For two whole result files: the variants (a profile's kernels) only in A, which
    vanished, and only in B, which are new (a fused kernel replacing two, say)."""
    if not (_is_file(a) and _is_file(b)):
        return [], []
    return unmatched_names(file_sides(a), file_sides(b))


def whole_results(a: str, b: str | None, pairs: list[tuple[Side, Side]]
                  ) -> tuple[RunResult, RunResult] | None:
    """The two results, when both sides are whole result files (no ``:VARIANT``): what
    the per-fix comparison of two profiles of a program reads; None otherwise."""
    whole = b is not None and all(_is_file(side) for side in (a, b))
    return (pairs[0][0].result, pairs[0][1].result) if whole and pairs else None


def unmatched_names(left: list[Side], right: list[Side]) -> tuple[list[str], list[str]]:
    """The variant names only on the left (vanished) and only on the right (new), sorted."""
    names = [{s.variant.name for s in sides} for sides in (left, right)]
    return sorted(names[0] - names[1]), sorted(names[1] - names[0])


def gpu_warning(pairs: list[tuple[Side, Side]], allow_different_gpu: bool) -> str | None:
    a, b = pairs[0][0].result.gpu.name, pairs[0][1].result.gpu.name
    if a == b:
        return None
    if not allow_different_gpu:
        raise RooflintError(f"the sides were measured on different GPUs ({a} vs {b}); pass "
                            f"--allow-different-gpu to compare them anyway")
    return (f"COMPARING DIFFERENT GPUs: {a} vs {b}. The speedup mixes the change with the "
            f"hardware; do not read it as the effect of the change.")


def _family_at_revision(target: str, rev: str, into: Path) -> Path:
    """The family directory of ``target`` as it was at git revision ``rev``, unpacked."""
    manifest_dir = load_manifest(target).directory.resolve()
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], manifest_dir).decode().strip())
        relative = manifest_dir.relative_to(top)
        archive = _git(["archive", "--format=tar", commit_of(rev, top), "--", str(relative)], top)
    except subprocess.CalledProcessError as exc:
        reason = " ".join(exc.stderr.decode(errors="replace").split())
        raise RooflintError(f"cannot read {manifest_dir} at revision {rev!r}: {reason}") from None
    except (FileNotFoundError, ValueError):
        raise RooflintError(f"{manifest_dir} is not in a git repository: --rev needs one") from None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / relative


def _git(args: list[str], cwd: Path) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def commit_of(rev: str, repository: Path) -> str:
    """The commit SHA a revision names. Only this SHA reaches other git commands, so a
    revision such as ``--output=FILE`` (from ``--rev`` or a baseline's recorded
    ``git_revision``) can never be read as an option."""
    try:
        return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                    repository).decode().strip()
    except subprocess.CalledProcessError:
        raise RooflintError(f"git revision {rev!r} names no commit in {repository}") from None


def measured_pair(a: str, b: str | None, rev: str | None, measuring: Measuring
                  ) -> list[tuple[Side, Side]]:
    """Measure two TARGET:VARIANT sides now, interleaved (or A at ``rev`` against A)."""
    gpu, counters, progress_for = measuring.gpu, measuring.counters, measuring.progress_for
    (target_a, variant_a), (target_b, variant_b) = split_side(a), split_side(b or a)
    check_variants_named(a, b, rev)
    with tempfile.TemporaryDirectory(prefix="rooflint-rev-") as old:
        path_a = _family_at_revision(target_a, rev, Path(old)) if rev else target_a
        manifests = [load_family(str(path_a), measuring.note),
                     load_family(target_b, measuring.note)]
        for manifest, variant in zip(manifests, (variant_a, variant_b)):
            select_variants(manifest, [variant])    # an unknown name, before the GPU starts
        labels = [f"{variant_a}@{rev}" if rev else a, b or a]
        options = RunOptions(targets=[], variants=[], sizes={}, gpu=gpu, counters=counters)
        pool = WorkerPool()
        try:
            device = pool.start()
            spec = device_spec(device, gpu, load_specs())
            check_precisions(manifests, spec)
            calibration = calibrations.find(spec.id, device.driver)
            families = [resolve(m, {}, {"num_sms": device.sms}, TimingJob(), [v])
                        for m, v in zip(manifests, (variant_a, variant_b))]
            for family in families:
                check_fits(family, device)
            measurements = pool.measure_pair(families[0].job, families[1].job, options.timeout_s,
                                             progress_for(families[0], "timing"))
        finally:
            pool.close()
        settings = Settings(counters=counters, **calibrations.settings(calibration),
                            ncu_version=ncu.version() if counters != CountersMode.OFF else None,
                            nvcc_version=build.toolkit_version())
        switch = CountersSwitch(counters != CountersMode.OFF, settings, lambda said: None)
        sides = []
        for family, measurement, label in zip(families, measurements, labels):
            found = family_counters(family, [measurement], options, switch,
                                    progress_for(family, "counters"), device)
            result = RunResult(gpu=device, spec_id=spec.id, settings=replace(settings))
            result.families.append(family_result(family, [measurement], found, spec, device,
                                                 calibration))
            sides.append(Side(label, result, result.families[0].variants[0]))
    return [(sides[0], sides[1])]


def check_variants_named(a: str, b: str | None, rev: str | None) -> None:
    """A measured side compares one variant, named as TARGET:VARIANT (whole families are
    compared only between result files); a side that names none is refused saying which
    side it is, or that --rev needs it, and what its family holds."""
    for which, side in ({"A": a} if b is None else {"A": a, "B": b}).items():
        target, variant = split_side(side)
        if variant is None and rev:
            raise RooflintError(f"--rev {rev} measures one variant as it was then and as it "
                                f"is now: name it, {target}:VARIANT{_variants_of(target)}")
        if variant is None:
            raise RooflintError(f"{which} ({target}) is measured now, so it names one variant: "
                                f"{target}:VARIANT{_variants_of(target)}; whole families "
                                f"compare as result files (FILE.json)")


def _variants_of(target: str) -> str:
    """`` (stream has copy, triad)``: the variants of the family ``target`` names, for a
    message asking for one; nothing where no family reads there (the message stands
    without, and naming the variant then brings the family's own error)."""
    try:
        return f" ({target} has {', '.join(v.name for v in load_manifest(target).variants)})"
    except RooflintError:
        return ""


def resolve_pairs(a: str, b: str | None, rev: str | None, measuring: Measuring
                  ) -> list[tuple[Side, Side]]:
    """The pairs to compare: A and B read from result files, or measured now as
    ``measuring`` says (A against itself at ``rev``, with --rev)."""
    if rev:
        if b is not None:
            raise RooflintError("--rev compares one TARGET:VARIANT with itself at REV; "
                                "give one side")
        return measured_pair(a, None, rev, measuring)
    if b is None:
        raise RooflintError("compare needs two sides (or one side and --rev REV)")
    if _is_file(split_side(a)[0]) and _is_file(split_side(b)[0]):
        return pairs_from_files(a, b)
    if _is_file(split_side(a)[0]) or _is_file(split_side(b)[0]):
        raise RooflintError("compare a result file with a result file, or two targets measured "
                            "now; mixing the two would time them at different moments")
    return measured_pair(a, b, None, measuring)


def remeasure_against(baseline: Baseline, result: RunResult
                      ) -> Callable[[str, str], tuple[list[float], list[float]]]:
    """For `gate --recheck`: (family, variant) -> (samples of the baseline's code, samples
    of the current code), timed now, interleaved."""
    revision = (baseline.git_revision or "").removesuffix("-dirty")
    if not revision or (baseline.git_revision or "").endswith("-dirty"):
        raise RooflintError("--recheck needs the baseline's git revision of clean code; this "
                            "baseline has none (re-run `rooflint gate --update` from a commit)")
    directories = {f.name: locate_family(f.directory) for f in result.families}

    def remeasure(family: str, variant: str) -> tuple[list[float], list[float]]:
        [(then, now)] = measured_pair(f"{directories[family]}:{variant}", None, revision,
                                      Measuring(counters=CountersMode.OFF))
        return then.variant.samples_s, now.variant.samples_s
    return remeasure
