"""The fixed word lists of rooflint's options and documents, each a Vocabulary (its
members are their words, equal to the strings a document read back holds): compared by
member, never by literal, and written once.

A document's field holding one is ``Annotated[str, one_of(Vocabulary)]`` (common/sense.py);
the command line offers the same members as its choices.
"""

from __future__ import annotations

from rooflint.common.sense import Vocabulary


class CacheMode(Vocabulary):
    """Whether L2 is flushed before each timed sample (cold) or left as it is (warm)."""

    COLD = "cold"
    WARM = "warm"


class CountersMode(Vocabulary):
    """Where the bytes and FLOPs come from: Nsight Compute when it works, else the
    manifest's model (auto); Nsight Compute or an error (ncu); the model alone (off, also
    what a run falls back to once counters are unavailable)."""

    AUTO = "auto"
    NCU = "ncu"
    OFF = "off"


class CompilerChoice(Vocabulary):
    """What builds a CUDA variant: NVRTC, and nvcc for what NVRTC cannot build (auto);
    or one of them alone."""

    AUTO = "auto"
    NVRTC = "nvrtc"
    NVCC = "nvcc"


class GpuMismatch(Vocabulary):
    """What `gate` does with a baseline measured on another GPU model: refuse it (error),
    or judge it anyway with a warning that its times are not comparable (warn)."""

    ERROR = "error"
    WARN = "warn"


class Precision(Vocabulary):
    """The compute roof a kernel is judged against (a manifest's ``precision``, a GPU
    spec's peaks, the FLOPs Nsight Compute counts): CUDA-core arithmetic, or a tensor-core
    path, whose word ends in -tensor. Listed in the order a refusal names them."""

    FP64 = "fp64"
    FP64_TENSOR = "fp64-tensor"
    FP32 = "fp32"
    FP16 = "fp16"
    TF32_TENSOR = "tf32-tensor"
    FP16_TENSOR = "fp16-tensor"
    BF16_TENSOR = "bf16-tensor"
    FP8_TENSOR = "fp8-tensor"
    INT8_TENSOR = "int8-tensor"


# The precisions that run on tensor cores: a word read back from a document is one of
# them when it equals one (a member is its word).
ON_TENSOR_CORES = frozenset(p for p in Precision if p.endswith("-tensor"))
