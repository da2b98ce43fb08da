"""The values a family's kernels and references are checked on: seeded, non-zero, shared.

Drawn where they are used: on the GPU (``xp`` = CuPy) in the worker, where drawing two
2^27-float inputs takes milliseconds instead of the seconds numpy needs, and copied to
the host only for the reference or ``prepare`` functions that read them. No CuPy import
here: with ``xp`` = numpy the same rules run on a machine without a GPU, so the bundled
references are tested against them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import numpy as np

from rooflint.formats.jobs import BufferJob


class RandomInputs(Mapping[str, Any]):
    """The family's inputs, each drawn from its own seeded stream the first time it is
    read (so a buffer ``prepare`` derives without reading is never drawn), or given
    (a prepared buffer). Host arrays are read-only: references and ``prepare`` share them
    without a copy."""

    def __init__(self, buffers: list[BufferJob], seed: int, xp: ModuleType = np):
        self.buffers = {b.name: (index, b) for index, b in enumerate(buffers)}
        self.seed = seed
        self.xp = xp
        self.drawn: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.drawn:
            index, buffer = self.buffers[name]
            rng = self.xp.random.default_rng(stream_seed(self.seed, index))
            self.drawn[name] = read_only(_random_array(buffer, rng))
        return self.drawn[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.buffers)

    def __len__(self) -> int:
        return len(self.buffers)


class HostCopies(Mapping[str, np.ndarray]):
    """Read-only host copies of device arrays, each copied the first time it is read."""

    def __init__(self, device: Mapping[str, Any]):
        self.device = device
        self.copied: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.copied:
            self.copied[name] = read_only(self.device[name].get())
        return self.copied[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.device)

    def __len__(self) -> int:
        return len(self.device)


def stream_seed(seed: int, index: int) -> int:
    """The seed of one buffer's own stream: its values do not depend on which buffers
    were drawn before it."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def read_only(array: Any) -> Any:
    """A host array, marked so that a reference writing into its inputs fails loudly
    instead of changing what the next reference and the kernels see."""
    if isinstance(array, np.ndarray):
        array.flags.writeable = False
    return array


def read_only_hint(exc: Exception) -> str:
    if isinstance(exc, ValueError) and "read-only" in str(exc):
        return " (inputs are shared read-only between references: copy one before changing it)"
    return ""


def _random_array(b: BufferJob, rng: Any) -> Any:
    """Uniform values in [low, high] with exact zeros replaced: zeros hide unwritten output."""
    dtype = np.dtype(b.dtype)
    if dtype.kind in "iu":
        values = rng.integers(int(b.low), int(b.high), size=tuple(b.shape), endpoint=True)
        values[values == 0] = int(b.high) or 1
    else:  # drawn in float32 unless the buffer is wider: half the memory and time of float64
        values = rng.random(size=tuple(b.shape),
                            dtype=np.float64 if dtype.itemsize > 4 else np.float32)
        values *= b.high - b.low
        values += b.low
        values[values == 0] = b.high
    return values.astype(dtype, copy=False)
