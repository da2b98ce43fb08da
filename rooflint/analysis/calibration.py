"""Calibrated ceilings: measured roofs for one GPU and driver, kept in the user cache.

Measured ceilings beat datasheet ones (the Empirical Roofline Toolkit's lesson): an
H200's 4.8 TB/s datasheet DRAM bandwidth is not reachable by any kernel, so judging a
kernel against it understates how close to the real roof it is. ``rooflint calibrate``
measures them; ``run`` and ``explain`` use them when present and show the datasheet
figures beside them.

Files live in rooflint's cache directory (`rooflint.common.paths.cache_dir`) under
``calibration/<spec id>-driver-<version>.json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rooflint.common.paths import cache_dir
from rooflint.common.errors import RooflintError
from rooflint.analysis.evidence import FP8_UPGRADE, TENSOR_UPGRADE
from rooflint.formats.gpus import GpuSpec
from rooflint.formats.jsonfile import read_document, write_atomic
from rooflint.formats.gpus import DeviceInfo
from rooflint.analysis.roofline import Roofs
from rooflint.common.sense import Amount, Positive, SpecId

SCHEMA = "rooflint.calibration/1"
MEMORY_CEILINGS = ("dram", "l2", "l1", "dram-sweep")   # the steps in bytes/s, not precisions


@dataclass
class Ceiling:
    value: Positive              # bytes/s for dram, l2 and l1, FLOP/s for a precision
    method: str
    sm_clock_mhz: Amount | None  # NVML's reading while it ran


@dataclass
class Calibration:
    gpu: DeviceInfo
    spec_id: SpecId
    dram: Ceiling
    l2: Ceiling | None
    compute: dict[str, Ceiling]                       # by precision
    dram_sweep: list[Ceiling] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # step or ceiling -> why not kept
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    schema: str = SCHEMA
    l1: Ceiling | None = None    # the L1/shared data path (absent from older calibrations)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def from_steps(device: DeviceInfo, spec: GpuSpec, steps: list[dict], skipped: dict[str, str]
               ) -> Calibration:
    """Assemble the worker's steps (see measure/calibrate.py) into a calibration.

    A compute ceiling the spec has no peak for is left out, with the reason: roofs() sets a
    kernel against a precision's peak, so it could never be used (and an fp64 GEMM on a GPU
    without fp64 tensor cores is no fp64-tensor roof)."""
    def ceiling(step: dict) -> Ceiling:
        return Ceiling(step["value"], step["method"], step["sm_clock_mhz"])
    by_name = {s["ceiling"]: s for s in steps}
    if "dram" not in by_name:
        raise RooflintError(f"calibration measured no DRAM bandwidth ({skipped or 'no steps'})")
    precisions = [name for name in by_name if name not in MEMORY_CEILINGS]
    unjudged = {name: f"measured, but the {spec.id} spec has no {name} peak to judge against"
                for name in precisions if name not in spec.peaks}
    return Calibration(
        gpu=device, spec_id=spec.id, dram=ceiling(by_name["dram"]),
        l2=ceiling(by_name["l2"]) if "l2" in by_name else None,
        l1=ceiling(by_name["l1"]) if "l1" in by_name else None,
        compute={name: ceiling(by_name[name]) for name in precisions if name in spec.peaks},
        dram_sweep=[ceiling(s) for s in steps if s["ceiling"] == "dram-sweep"],
        skipped={**skipped, **unjudged})


def bandwidth(calibration: Calibration | None, level: str) -> float | None:
    """The calibrated bandwidth of a memory level ("l2", "l1"); None where not measured."""
    ceiling = getattr(calibration, level) if calibration else None
    return ceiling.value if ceiling else None


def settings(calibration: Calibration | None) -> dict[str, Any]:
    """What a result records of the calibration it was judged with: when it was made, and
    the L2 and L1 bandwidths, which the plot draws as roofs (None where not measured)."""
    return {"calibration": calibration.created if calibration else None,
            "l2_bandwidth": bandwidth(calibration, "l2"),
            "l1_bandwidth": bandwidth(calibration, "l1")}


def default_path(spec_id: str, driver: str) -> Path:
    return cache_dir() / "calibration" / f"{spec_id}-driver-{driver}.json"


def save(calibration: Calibration, path: Path) -> None:
    """Write a calibration; the cache directory is rooflint's own and is created, any other
    directory (``calibrate -o``) must exist."""
    write_atomic(calibration.to_json(), path, create_directory=_in_cache(path))


def _in_cache(path: Path) -> bool:
    return Path(path).resolve().is_relative_to(cache_dir().resolve())


def load(path: Path) -> Calibration:
    """A calibration file, every field checked (see jsonfile.read_document): a ceiling is a
    positive finite number, as anything else would put a roof at zero or infinity."""
    return read_document(path, Calibration, SCHEMA, "calibration")


def find(spec_id: str, driver: str | None = None) -> Calibration | None:
    """The cached calibration for this GPU (and driver, when known); the newest otherwise.

    A damaged cached file (cut short by a full disk, edited by hand), or one holding
    another GPU's or driver's ceilings than its name says (copied over by hand), is
    reported with the way out, since the user never named it."""
    directory = cache_dir() / "calibration"
    if driver:
        exact = default_path(spec_id, driver)
        return _load_cached(exact) if exact.exists() else None
    candidates = sorted(directory.glob(f"{spec_id}-driver-*.json"), key=lambda p: p.stat().st_mtime)
    return _load_cached(candidates[-1]) if candidates else None


WAY_OUT = "run `rooflint calibrate` again or delete it (explain --datasheet ignores it)"


def _load_cached(path: Path) -> Calibration:
    """The calibration at ``path``, which must be where `calibrate` saves its own: the
    name is what find looks it up by."""
    try:
        calibration = load(path)
    except RooflintError as exc:
        raise RooflintError(f"{exc}; the cached calibration is damaged: {WAY_OUT}") from None
    if default_path(calibration.spec_id, calibration.gpu.driver).name != path.name:
        raise RooflintError(
            f"{path} holds the calibration of {calibration.spec_id} ({calibration.gpu.name}, "
            f"driver {calibration.gpu.driver}), not the one its name says: {WAY_OUT}")
    return calibration


def roofs(spec: GpuSpec, precision: str, calibration: Calibration | None) -> Roofs:
    """The roofs for a precision: calibrated where measured, datasheet otherwise."""
    peak = spec.peak(precision).flops_per_s
    measured = calibration.compute.get(precision) if calibration else None
    dram = calibration.dram.value if calibration else spec.dram_bandwidth
    parts = []
    if calibration:
        parts.append(f"DRAM calibrated {calibration.created[:10]}")
        parts.append(f"{precision} {'calibrated' if measured else 'datasheet'}")
    return Roofs(precision=precision, compute=measured.value if measured else peak,
                 dram_bandwidth=dram, source=", ".join(parts) or "datasheet",
                 datasheet_compute=peak, datasheet_dram_bandwidth=spec.dram_bandwidth)


def tensor_roof(spec: GpuSpec, precision: str, calibration: Calibration | None) -> float | None:
    """The tensor-core roof a CUDA-core kernel of this precision could move to, if any."""
    return _roof_of(spec, TENSOR_UPGRADE.get(precision), calibration)


def fp8_roof(spec: GpuSpec, precision: str, calibration: Calibration | None) -> float | None:
    """The fp8 tensor roof a 16-bit tensor kernel could move to, where the GPU has one."""
    return _roof_of(spec, FP8_UPGRADE.get(precision), calibration)


def _roof_of(spec: GpuSpec, precision: str | None, calibration: Calibration | None) -> float | None:
    return roofs(spec, precision, calibration).compute if precision in spec.peaks else None


def fraction_of_datasheet_at_clock(spec: GpuSpec, precision: str, ceiling: Ceiling) -> float | None:
    """Measured / datasheet peak rescaled to the SM clock seen (the peak assumes its own)."""
    peak = spec.peaks.get(precision)
    if not peak or not ceiling.sm_clock_mhz:
        return None
    return ceiling.value / (peak.flops_per_s * ceiling.sm_clock_mhz / peak.clock_mhz)
