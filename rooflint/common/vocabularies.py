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
