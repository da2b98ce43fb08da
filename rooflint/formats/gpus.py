"""GPU datasheet facts, and matching the live device to them.

One YAML file per GPU model in ``specs/``. Peaks are dense (never the sparse 2x
figure) and each records the SM clock it assumes, because the clock a kernel actually
runs at is often lower and a peak at the wrong clock misplaces every roof.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from rooflint.formats import yamlfile
from rooflint.common.errors import RooflintError
from rooflint.common.paths import SPECS_DIR
from rooflint.common.sense import PLAIN_ID, Amount, Count, Size, one_of

SPEC_KEYS = ("id", "name", "nvml_names", "architecture", "compute_capability", "sms",
             "boost_clock_mhz", "memory", "l2_mib", "peaks", "source", "notes")
MEMORY_KEYS = ("type", "size_gb", "bandwidth_gbs")
PEAK_KEYS = ("tflops", "clock_mhz")

PRECISIONS = (
    "fp64", "fp64-tensor", "fp32", "fp16",
    "tf32-tensor", "fp16-tensor", "bf16-tensor", "fp8-tensor", "int8-tensor",
)
Precision = Annotated[str, one_of(PRECISIONS)]     # a roof a kernel is judged against


@dataclass(frozen=True)
class Peak:
    """A compute peak in FLOP/s (ops/s for int8) and the SM clock it assumes."""

    flops_per_s: float
    clock_mhz: float


@dataclass(frozen=True)
class GpuSpec:
    id: str
    name: str
    nvml_names: tuple[str, ...]
    architecture: str
    compute_capability: str
    sms: int
    boost_clock_mhz: float
    memory_type: str
    memory_gb: float
    dram_bandwidth: float  # bytes/s
    l2_bytes: float
    peaks: dict[str, Peak]
    source: str
    notes: str = ""
    path: Path | None = field(default=None, compare=False)

    def peak(self, precision: str) -> Peak:
        if precision not in self.peaks:
            have = ", ".join(self.peaks)
            raise RooflintError(f"{self.name} has no {precision} peak in its spec (it has: {have})")
        return self.peaks[precision]

    def ridge(self, precision: str) -> float:
        """Machine balance in FLOP/byte: where the DRAM roof meets this compute roof."""
        return self.peak(precision).flops_per_s / self.dram_bandwidth


@dataclass
class DeviceInfo:
    name: str
    index: Count
    compute_capability: str
    sms: Size
    l2_bytes: Size
    memory_bytes: Size
    max_sm_clock_mhz: Amount | None
    max_mem_clock_mhz: Amount | None
    driver: str
    cuda_runtime: str
    cupy: str


def normalize_name(name: str) -> str:
    """Device names compared without case, spaces, dashes or the vendor prefix."""
    name = name.lower().strip()
    for prefix in ("nvidia ", "tesla "):
        name = name.removeprefix(prefix)
    return re.sub(r"[\s_\-]+", "", name)


def _require(data: dict, key: str, path: Path, where: str = "") -> object:
    if not isinstance(data, dict) or key not in data or data[key] is None:
        raise RooflintError(f"{path}: missing field '{where}{key}'")
    return data[key]


def _number(data: dict, key: str, path: Path, where: str = "") -> float:
    """A positive finite number (YAML's .nan and .inf are numbers too)."""
    value = _require(data, key, path, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (math.isfinite(value) and value > 0):
        raise RooflintError(f"{path}: field '{where}{key}' must be a positive number, got {value!r}")
    return float(value)


def _whole(data: dict, key: str, path: Path) -> int:
    value = _number(data, key, path)
    if not value.is_integer():
        raise RooflintError(f"{path}: field '{key}' must be a whole number, got {value!r}")
    return int(value)


def _parse_peaks(raw: object, path: Path) -> dict[str, Peak]:
    if not isinstance(raw, dict) or not raw:
        raise RooflintError(f"{path}: field 'peaks' must map precisions to {{tflops, clock_mhz}}")
    peaks = {}
    for precision, entry in raw.items():
        if precision not in PRECISIONS:
            raise RooflintError(f"{path}: unknown precision 'peaks.{precision}' "
                                f"(known: {', '.join(PRECISIONS)})")
        where = f"peaks.{precision}."
        if isinstance(entry, dict):
            yamlfile.check_keys(entry, PEAK_KEYS, where, path)
        peaks[precision] = Peak(_number(entry, "tflops", path, where) * 1e12,
                                _number(entry, "clock_mhz", path, where))
    if "fp32" not in peaks:
        raise RooflintError(f"{path}: missing field 'peaks.fp32'")
    return peaks


def _sources(value: object) -> str:
    """``source:`` is one citation or a list of them; shown joined."""
    return "; ".join(str(s) for s in value) if isinstance(value, list) else str(value)


def load_spec(path: Path) -> GpuSpec:
    """Parse and validate one spec file; errors name the file and the field."""
    data = yamlfile.load(path)
    if not isinstance(data, dict):
        raise RooflintError(f"{path}: expected a mapping of fields")
    yamlfile.check_keys(data, SPEC_KEYS, "", path)
    memory = _require(data, "memory", path)
    if isinstance(memory, dict):
        yamlfile.check_keys(memory, MEMORY_KEYS, "memory.", path)
    nvml_names = _require(data, "nvml_names", path)
    if not isinstance(nvml_names, list) or not nvml_names:
        raise RooflintError(f"{path}: field 'nvml_names' must be a non-empty list")
    spec_id = str(_require(data, "id", path))
    if problem := PLAIN_ID.problem(spec_id):
        raise RooflintError(f"{path}: field 'id' {problem}")
    if spec_id != path.stem:
        raise RooflintError(f"{path}: field 'id' is {spec_id!r} but the file is named {path.name}")
    return GpuSpec(
        id=spec_id,
        name=str(_require(data, "name", path)),
        nvml_names=tuple(str(n) for n in nvml_names),
        architecture=str(_require(data, "architecture", path)),
        compute_capability=str(_require(data, "compute_capability", path)),
        sms=_whole(data, "sms", path),
        boost_clock_mhz=_number(data, "boost_clock_mhz", path),
        memory_type=str(_require(memory, "type", path, "memory.")),
        memory_gb=_number(memory, "size_gb", path, "memory."),
        dram_bandwidth=_number(memory, "bandwidth_gbs", path, "memory.") * 1e9,
        l2_bytes=_number(data, "l2_mib", path) * 2**20,
        peaks=_parse_peaks(_require(data, "peaks", path), path),
        source=_sources(_require(data, "source", path)),
        notes=str(data.get("notes") or "").strip(),
        path=path,
    )


def load_specs(directory: Path = SPECS_DIR) -> list[GpuSpec]:
    paths = sorted(directory.glob("*.yaml"))
    if not paths:
        raise RooflintError(f"no GPU spec files (*.yaml) in {directory}")
    return [load_spec(p) for p in paths]


def find_spec(spec_id: str, specs: list[GpuSpec]) -> GpuSpec:
    """The spec with this id, or one whose NVML name matches (``--gpu h200`` or ``--gpu 'H200'``)."""
    for spec in specs:
        if spec.id == spec_id.lower():
            return spec
    matched = match_device(spec_id, specs)
    if matched:
        return matched
    near = _near(spec_id, specs)
    guess = f"did you mean {' or '.join(near)}? " if near else ""
    raise RooflintError(f"unknown GPU {spec_id!r}; {guess}known: {', '.join(s.id for s in specs)}")


def _near(text: str, specs: list[GpuSpec]) -> list[str]:
    """The ids ``text`` may have meant: those it starts or is part of (``h100``: h100-sxm,
    h100-pcie), of a GPU whose name holds it or whose family it names (``hopper``), else
    one spelt alike."""
    wanted = normalize_name(text)
    if not wanted:
        return []
    near = [s.id for s in specs
            if wanted in normalize_name(s.id) or wanted in normalize_name(s.name)
            or wanted == normalize_name(s.architecture)]
    return near or difflib.get_close_matches(text.lower(), [s.id for s in specs], n=2)


def match_device(device_name: str, specs: list[GpuSpec]) -> GpuSpec | None:
    """The spec for a device name as NVML or CUDA reports it (``NVIDIA H100 80GB HBM3``)."""
    wanted = normalize_name(device_name)
    for spec in specs:
        if any(normalize_name(n) == wanted for n in spec.nvml_names):
            return spec
    return None
