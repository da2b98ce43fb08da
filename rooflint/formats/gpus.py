"""GPU spec files, and matching the live device to them.

One YAML file per GPU model in ``specs/``, read into the core's GpuSpec
(analysis/gpu_spec.py, which says what a peak means), and the device record a worker
reports (DeviceInfo).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from rooflint.analysis.gpu_spec import GpuSpec, Peak
from rooflint.common.errors import RooflintError
from rooflint.common.paths import SPECS_DIR
from rooflint.common.sense import PLAIN_ID, Amount, Count, Size, one_of
from rooflint.common.vocabularies import Precision
from rooflint.formats import yamlfile
from rooflint.formats.schema import (
    Document, Field, ListOf, MapOf, Place, Record, Wording, prose, text,
)

# The GPU a result was judged against: one rooflint has a spec for (its file's name is its
# id), as the run that wrote it had; a plain id first, which a path never is.
KnownSpecId = Annotated[str, PLAIN_ID,
                        one_of(sorted(path.stem for path in SPECS_DIR.glob("*.yaml")))]


@dataclass
class DeviceInfo:
    name: str
    index: Count
    compute_capability: str
    sms: Size
    # 0 where unknown: a profile whose pass 2 stopped before Nsight Compute named the GPU
    # has only pass 1's trace, whose device properties hold no L2 size
    l2_bytes: Count
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


def _positive(value: object, place: Place) -> float:
    """A positive finite number (YAML's .nan and .inf are numbers too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (math.isfinite(value) and value > 0):
        raise place.invalid(f"must be a positive number, got {value!r}")
    return float(value)


def _whole(value: object, place: Place) -> int:
    number = _positive(value, place)
    if not number.is_integer():
        raise place.invalid(f"must be a whole number, got {number!r}")
    return int(number)


def _spec_id(value: object, place: Place) -> str:
    """A plain id that names the spec's file (specs/h200.yaml says ``id: h200``)."""
    spec_id = str(value)
    if problem := PLAIN_ID.problem(spec_id):
        raise place.invalid(problem)
    if spec_id != place.file.stem:
        raise place.invalid(f"is {spec_id!r} but the file is named {place.file.name}")
    return spec_id


def _precision(key: object, place: Place) -> None:
    if key not in tuple(Precision):
        raise place.refuse(f"unknown precision '{place.where}' (known: {', '.join(Precision)})")


def _sources(value: object, place: Place) -> str:
    """``source:`` is one citation or a list of them; shown joined."""
    return "; ".join(str(s) for s in value) if isinstance(value, list) else str(value)


def _with_fp32(values: dict, place: Place, written: Mapping) -> None:
    """Every spec has an FP32 peak: the roof used where no other precision is named
    (explain's default, profile's fallback)."""
    if Precision.FP32 not in values["peaks"]:
        raise place.inner("peaks", values).inner(Precision.FP32, {}).missing()


def _peak(values: dict, place: Place, written: Mapping) -> Peak:
    return Peak(values["tflops"] * 1e12, values["clock_mhz"])


def _spec(values: dict, place: Place, written: Mapping) -> GpuSpec:
    memory = values["memory"]
    return GpuSpec(
        id=values["id"], name=values["name"], nvml_names=tuple(values["nvml_names"]),
        architecture=values["architecture"], compute_capability=values["compute_capability"],
        sms=values["sms"], boost_clock_mhz=values["boost_clock_mhz"],
        memory_type=memory["type"], memory_gb=memory["size_gb"],
        dram_bandwidth=memory["bandwidth_gbs"] * 1e9, l2_bytes=values["l2_mib"] * 2**20,
        peaks=values["peaks"], source=values["source"], notes=values["notes"],
        path=place.file)


_PEAKS = "must map precisions to {tflops, clock_mhz}"
# One spec file: its fields, each read as declared (rooflint.formats.schema).
SPEC_FILE = Document(Record((
    Field("id", _spec_id),
    Field("name", text),
    Field("nvml_names", ListOf(text, shape="must be a non-empty list",
                               empty="must be a non-empty list")),
    Field("architecture", text),
    Field("compute_capability", text),
    Field("sms", _whole),
    Field("boost_clock_mhz", _positive),
    Field("memory", Record((Field("type", text), Field("size_gb", _positive),
                            Field("bandwidth_gbs", _positive)))),
    Field("l2_mib", _positive),
    Field("peaks", MapOf(Record((Field("tflops", _positive), Field("clock_mhz", _positive)),
                                build=_peak),
                         key=_precision, shape=_PEAKS, empty=_PEAKS)),
    _with_fp32,
    Field("source", _sources),
    Field("notes", prose, default=""),
), build=_spec, shape="expected a mapping of fields"),
    Wording(field="field '{}'", missing="missing field '{}'"))


def load_spec(path: Path) -> GpuSpec:
    """Parse and validate one spec file; errors name the file and the field."""
    return yamlfile.read(path, SPEC_FILE)


def load_specs(directory: Path = SPECS_DIR) -> list[GpuSpec]:
    paths = sorted(directory.glob("*.yaml"))
    if not paths:
        raise RooflintError(f"no GPU spec files (*.yaml) in {directory}")
    return [load_spec(p) for p in paths]


def find_spec(spec_id: str, specs: list[GpuSpec],
              present: Callable[[], Iterable[str]] = tuple) -> GpuSpec:   # default: no GPU
    """The spec with this id, one whose NVML name matches (``--gpu h200`` or ``--gpu
    'H200'``), or the member of a family (``h100``: h100-sxm, h100-pcie) that a GPU here
    is. ``present`` names the GPUs here (NVML's names); it is asked only for a family name,
    whose one member needs no GPU to settle it and whose several need one: CI labels and
    baselines say ``h100`` while the ids say which board."""
    for spec in specs:
        if spec.id == spec_id.lower():
            return spec
    matched = match_device(spec_id, specs)
    if matched:
        return matched
    members = family(spec_id, specs)
    if members:
        return family_member(spec_id, members, present)
    known = ', '.join(s.id for s in specs)
    if DEVICE_INDICES.fullmatch(spec_id.strip()):
        raise RooflintError(f"{spec_id!r} is a device index, and --gpu takes the spec of a GPU "
                            f"to judge against ({known}; `rooflint specs`); the GPUs to run "
                            f"on are --devices' (`rooflint run --devices {spec_id.strip()}`), "
                            f"a profiled program's CUDA_VISIBLE_DEVICES")
    near = _near(spec_id, specs)
    guess = f"did you mean {' or '.join(near)}? " if near else ""
    raise RooflintError(f"unknown GPU {spec_id!r}; {guess}known: {known}")


# What --devices takes (0, or 0,2), given to --gpu by mistake (`explain --gpu 0`).
DEVICE_INDICES = re.compile(r"\d+(,\d+)*")


def family(name: str, specs: list[GpuSpec]) -> list[GpuSpec]:
    """The specs a family name stands for: those whose id is the name and a board after a
    dash (``h100``: h100-sxm and h100-pcie; ``a100``: the four A100 boards, ``a100-sxm``
    and ``a100-pcie`` two each)."""
    return [s for s in specs if s.id.startswith(name.lower() + "-")]


def family_member(name: str, members: list[GpuSpec],
                  present: Callable[[], Iterable[str]]) -> GpuSpec:
    """The family's one member, or the one a GPU ``present`` names is; else RooflintError,
    one line listing the ids to choose from and why the GPUs here did not choose."""
    if len(members) == 1:
        return members[0]
    gpus = list(present())
    here = {spec.id: spec for spec in (match_device(gpu, members) for gpu in gpus) if spec}
    if len(here) == 1:
        return next(iter(here.values()))
    why = ("this machine has several of them" if here else
           f"the GPU here ({', '.join(sorted(set(gpus)))}) is none of them" if gpus else
           "no GPU here to tell which")
    raise RooflintError(f"{name} is ambiguous: {', '.join(s.id for s in members)} ({why}); "
                        f"name one of them")


def _near(text: str, specs: list[GpuSpec]) -> list[str]:
    """The ids ``text`` may have meant: those it starts or is part of (``h10``: h100-pcie,
    h100-sxm), of a GPU whose name holds it or whose family it names (``hopper``), else
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
