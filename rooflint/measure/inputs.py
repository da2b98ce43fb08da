"""The values a family's kernels and references are checked on: seeded, non-zero, shared.

No CuPy here: the same inputs are drawn on a machine without a GPU, so the bundled
references can be tested against them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from rooflint.measure.protocol import BufferJob


class RandomInputs(Mapping[str, np.ndarray]):
    """The family's inputs, each drawn from its own seeded stream the first time it is
    read, and read-only: references and ``prepare`` share them without a copy (a copy of
    every input per reference cost gigabytes in large families), and a buffer that
    ``prepare`` derives without reading is never drawn at all."""

    def __init__(self, buffers: list[BufferJob], seed: int):
        self.buffers = {b.name: (index, b) for index, b in enumerate(buffers)}
        self.seed = seed
        self.drawn: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.drawn:
            index, buffer = self.buffers[name]
            rng = np.random.default_rng([self.seed, index])
            self.drawn[name] = read_only(_random_array(buffer, rng))
        return self.drawn[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.buffers)

    def __len__(self) -> int:
        return len(self.buffers)


def read_only(array: np.ndarray) -> np.ndarray:
    """The array, marked so that a reference writing into its inputs fails loudly instead
    of changing what the next reference and the kernels see."""
    array.flags.writeable = False
    return array


def read_only_hint(exc: Exception) -> str:
    if isinstance(exc, ValueError) and "read-only" in str(exc):
        return " (inputs are shared read-only between references: copy one before changing it)"
    return ""


def _random_array(b: BufferJob, rng: np.random.Generator) -> np.ndarray:
    """Uniform values in [low, high] with exact zeros replaced: zeros hide unwritten output."""
    dtype = np.dtype(b.dtype)
    if dtype.kind in "iu":
        values = rng.integers(int(b.low), int(b.high), size=b.shape, endpoint=True)
        values[values == 0] = int(b.high) or 1
    else:  # drawn in float32 unless the buffer is wider: half the memory and time of float64
        values = rng.random(size=b.shape, dtype=np.float64 if dtype.itemsize > 4 else np.float32)
        values *= b.high - b.low
        values += b.low
        values[values == 0] = b.high
    return values.astype(dtype, copy=False)
