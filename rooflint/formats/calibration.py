"""Calibrated ceilings: the document that holds the roofs measured for one GPU and driver,
kept in the user cache.

``rooflint calibrate`` measures them (measure/calibrate.py) and writes them here; ``run``
and ``explain`` read them back and judge against them (analysis/ceilings.py says how).

Files live in rooflint's cache directory (`rooflint.common.paths.cache_dir`) under
``calibration/<spec id>-driver-<version>.json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

from rooflint.analysis.ceilings import Ceiling, bandwidth
from rooflint.analysis.collectives import Collective
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.common.errors import RooflintError
from rooflint.common.paths import cache_dir
from rooflint.common.sense import Positive, Size, SpecId, one_of
from rooflint.formats.gpus import DeviceInfo
from rooflint.formats.jsonfile import read_document, write_atomic

SCHEMA = "rooflint.calibration/1"
MEMORY_CEILINGS = ("dram", "l2", "l1", "dram-sweep")   # the steps in bytes/s, not precisions
INTERCONNECT = "interconnect"      # the steps of the interconnect's sweep (a bus bandwidth each)


@dataclass
class BusRate:
    """A collective's bus bandwidth at one size (analysis/collectives.bus_bandwidth)."""

    collective: Annotated[str, one_of(Collective)]
    size: Size                  # bytes: the operation's (nccl-tests' S)
    value: Positive             # bytes/s


@dataclass
class Interconnect:
    """The host's GPUs as NCCL's collectives reach each other over their interconnect: the
    bus bandwidth of each collective over every GPU at a sweep of sizes, and each one's
    best, its roof (with the size it was reached at)."""

    gpus: Size
    link: str                   # what NVML says links them ("NVLink, 18 links a GPU"); "" unknown
    method: str
    roofs: list[BusRate]        # the best of the sweep, one a collective
    sweep: list[BusRate]

    def roof(self, collective: str) -> BusRate | None:
        return next((r for r in self.roofs if r.collective == collective), None)


@dataclass
class Calibration:
    gpu: DeviceInfo
    spec_id: SpecId
    dram: Ceiling
    l2: Ceiling | None
    compute: dict[str, Ceiling]                       # by precision
    dram_sweep: list[Ceiling] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # step or ceiling -> why not kept
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    schema: str = SCHEMA
    l1: Ceiling | None = None    # the L1/shared data path (absent from older calibrations)
    # NCCL's collectives over the host's GPUs; None with one GPU, and in older calibrations
    interconnect: Interconnect | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def from_steps(device: DeviceInfo, spec: GpuSpec, steps: list[dict], skipped: dict[str, str]
               ) -> Calibration:
    """Assemble the worker's steps (see measure/calibrate.py) into a calibration.

    A compute ceiling the spec has no peak for is left out, with the reason: ceilings.roofs
    sets a kernel against a precision's peak, so it could never be used (and an fp64 GEMM
    on a GPU without fp64 tensor cores is no fp64-tensor roof)."""
    def ceiling(step: dict) -> Ceiling:
        return Ceiling(step["value"], step["method"], step["sm_clock_mhz"])
    by_name = {s["ceiling"]: s for s in steps}
    if "dram" not in by_name:
        raise RooflintError(f"calibration measured no DRAM bandwidth ({skipped or 'no steps'})")
    precisions = [name for name in by_name if name not in (*MEMORY_CEILINGS, INTERCONNECT)]
    unjudged = {name: f"measured, but the {spec.id} spec has no {name} peak to judge against"
                for name in precisions if name not in spec.peaks}
    return Calibration(
        gpu=device, spec_id=spec.id, dram=ceiling(by_name["dram"]),
        l2=ceiling(by_name["l2"]) if "l2" in by_name else None,
        l1=ceiling(by_name["l1"]) if "l1" in by_name else None,
        compute={name: ceiling(by_name[name]) for name in precisions if name in spec.peaks},
        dram_sweep=[ceiling(s) for s in steps if s["ceiling"] == "dram-sweep"],
        skipped={**skipped, **unjudged},
        interconnect=interconnect_of([s for s in steps if s["ceiling"] == INTERCONNECT]))


def interconnect_of(steps: list[dict]) -> Interconnect | None:
    """The interconnect from its sweep's steps (measure/interconnect.py: each a collective's
    bus bandwidth at one size, over ``gpus`` GPUs), each collective's best its roof; None
    where it was not measured."""
    if not steps:
        return None
    sweep = [BusRate(s["collective"], s["size"], s["value"]) for s in steps]
    best: dict[str, BusRate] = {}
    for rate in sweep:
        if rate.collective not in best or rate.value > best[rate.collective].value:
            best[rate.collective] = rate
    return Interconnect(gpus=steps[0]["gpus"], link=steps[0]["link"], method=steps[0]["method"],
                        roofs=list(best.values()), sweep=sweep)


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
