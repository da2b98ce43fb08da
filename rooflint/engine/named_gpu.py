"""A GPU named on the command line (``--gpu``, ``rooflint specs GPU``): a spec id, a device
name, or a family name (``h100``, as CI labels and baselines say) that the GPUs of this
machine settle (``h100-pcie`` on an H100 PCIe).

Apart from formats/gpus.py, which matches names against the specs with no GPU in sight:
here the machine's GPUs are asked (NVML, measure/nvml.py), and only for a family name of
several ids.
"""

from __future__ import annotations

from rooflint.common.errors import RooflintError
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.measure import nvml


def named_spec(gpu: str) -> GpuSpec:
    """The spec ``gpu`` names; a family name is settled by the GPUs NVML sees here."""
    return find_spec(gpu, load_specs(), present=nvml.gpu_names)


def option_spec(gpu: str) -> GpuSpec:
    """``--gpu GPU``'s spec; its error names the option."""
    try:
        return named_spec(gpu)
    except RooflintError as exc:
        raise RooflintError(f"--gpu: {exc}") from None


def check_gpu_option(gpu: str | None) -> None:
    """``--gpu`` names a known spec: said before measuring, not after it."""
    if gpu is not None:
        option_spec(gpu)
